"""A burst on one run (issue 38; scripts/bench.sh scale): a model's parallel tool calls.

Eight connections each record one `tool_called` step of the same run at once (released
together by a barrier, each its own transaction, as eight parallel tool calls of an agent
arrive), against the same eight steps recorded one after another on one connection. Each
burst picks a run at random among the trail's runs; the parallel and the one-after-another
bursts alternate, on every table given, so that drift hits them alike.

Prints, per table, the p50 and p99 of both (milliseconds from the first call sent to the last
committed) and what the parallel burst adds at p99 over the same calls one after another: for
each of ROUNDS rounds of BURSTS bursts, and their median with its 95% interval (the sign test,
as scripts/bench.sh's; none with fewer than 6 rounds).

    python bench/burst.py DBNAME RUNS ROUNDS BURSTS TABLE [TABLE ...]

Connects through libpq's environment (PGHOST, PGPORT, PGUSER).
"""

import random
import statistics
import sys
import threading
import time

import psycopg

CALLS = 8
INSERT = (
    "INSERT INTO {}.steps (run_id, kind, tool, labels, args) "
    "VALUES (md5('scale' || %s::text)::uuid, 'tool_called', 'tickets.read', "
    "'{{area:acme/platform}}', '{{\"ticket\": 42}}')"
)


def percentile(values, p):
    values = sorted(values)
    k = (len(values) - 1) * p
    lo, hi = int(k), min(int(k) + 1, len(values) - 1)
    return values[lo] + (values[hi] - values[lo]) * (k - lo)


class Parallel:
    """Eight connections, each in its own thread, released together by a barrier."""

    def __init__(self, dbname):
        self.conns = [psycopg.connect(dbname=dbname, autocommit=True) for _ in range(CALLS)]
        self.start = threading.Barrier(CALLS + 1)
        self.done = threading.Barrier(CALLS + 1)
        self.job = None
        self.threads = [
            threading.Thread(target=self.worker, args=(c,), daemon=True) for c in self.conns
        ]
        for t in self.threads:
            t.start()

    def worker(self, conn):
        while True:
            self.start.wait()
            job = self.job
            if job is None:
                return
            sql, run = job
            conn.execute(sql, (run,), prepare=True)
            self.done.wait()

    def burst(self, sql, run):
        self.job = (sql, run)
        t0 = time.perf_counter()
        self.start.wait()
        self.done.wait()
        return (time.perf_counter() - t0) * 1000

    def close(self):
        self.job = None
        self.start.wait()
        for c in self.conns:
            c.close()


def interval(values):
    """A 95% interval of the median, assuming nothing of the spread (the sign test)."""
    values = sorted(values)
    n, k = len(values), 0
    p = c = 0.5**n
    for j in range(n):
        if 2 * c > 0.05:
            break
        k = j + 1
        p = p * (n - j) / (j + 1)
        c += p
    return None if k == 0 else (values[k - 1], values[n - k])


def main():
    dbname, runs = sys.argv[1], int(sys.argv[2])
    rounds, bursts, tables = int(sys.argv[3]), int(sys.argv[4]), sys.argv[5:]
    rng = random.Random(38)
    parallel = Parallel(dbname)
    one = psycopg.connect(dbname=dbname, autocommit=True)
    sqls = {t: INSERT.format(t) for t in tables}
    # warm every connection's prepared statement first
    for t in tables:
        parallel.burst(sqls[t], 1)
        one.execute(sqls[t], (1,), prepare=True)
    print(f"{CALLS} calls of one run, {rounds} rounds of {bursts} bursts per table "
          "(ms, from the first sent to the last committed)")
    print(f"{'round':<6} {'table':<15} {'parallel p50':>13} {'p99':>8} {'one by one p50':>15} "
          f"{'p99':>8} {'added at p99':>13}")
    added = {t: [] for t in tables}
    for r in range(1, rounds + 1):
        times = {(t, how): [] for t in tables for how in ("parallel", "sequential")}
        for _ in range(bursts):
            for t in tables[r % 2 :] + tables[: r % 2]:
                run = rng.randint(1, runs)
                times[t, "parallel"].append(parallel.burst(sqls[t], run))
                run = rng.randint(1, runs)
                t0 = time.perf_counter()
                for _ in range(CALLS):
                    one.execute(sqls[t], (run,), prepare=True)
                times[t, "sequential"].append((time.perf_counter() - t0) * 1000)
        for t in tables:
            par, seq = times[t, "parallel"], times[t, "sequential"]
            p99_par, p99_seq = percentile(par, 0.99), percentile(seq, 0.99)
            added[t].append(p99_par - p99_seq)
            print(
                f"{r:<6} {t:<15} {statistics.median(par):13.2f} {p99_par:8.2f} "
                f"{statistics.median(seq):15.2f} {p99_seq:8.2f} {p99_par - p99_seq:13.2f}"
            )
    parallel.close()
    one.close()
    for t in tables:
        i = interval(added[t])
        spread = "none (fewer than 6 rounds)" if i is None else f"{i[0]:.2f} - {i[1]:.2f}"
        print(f"{t}: added at p99, median of the rounds {statistics.median(added[t]):.2f} ms, "
              f"95% interval {spread}")


if __name__ == "__main__":
    main()
