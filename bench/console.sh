#!/usr/bin/env bash
# The console's pages under a big trail (issues 37 and 50): a run page of 1,000 steps (goal:
# under 300 ms), the runs list of a 1 M-step trail (goal: under 500 ms) and the approver's queue
# (goal, issue 50: undecided requests listed in under 20 ms at 1 M and at 10 M steps), server
# time (the Server-Timing header: request in to response headers out, the queries and the
# rendering), median and p95 over 20 requests of each, after 3 warm-up requests; the client's
# wall time too. Then the queue's own query (db.pending_requests(), what the queue page lists),
# timed from a client as the analyst (median and p95 of 20, after 3) and its EXPLAIN (ANALYZE,
# BUFFERS).
#
#   PGBIN=/opt/pg_labels_console_pg18/bin bench/console.sh
#   CONSOLE_STEPS=100000 bench/console.sh        a smaller trail (default 1000000)
#   CONSOLE_REQUEST_EVERY=10 bench/console.sh    an approval request every 10 steps (default
#                                                1000: one per run)
#   BENCH_EXTRA_SQL='CREATE INDEX ...' bench/console.sh
#                                                SQL run as the superuser right after CREATE
#                                                EXTENSION (to measure an index or a setting
#                                                before it is in the extension)
#   CONSOLE_PLANS=/tmp/plans.txt bench/console.sh  where the queue query's plan goes (default:
#                                                printed)
#
# A throwaway cluster of $PGBIN (pg_labels installed into it; default Debian's 15), scram over
# TCP on a free port, removed at exit. The trail: CONSOLE_STEPS / 1000 runs of support-bot in
# acme/platform of 1,000 steps each (input, planned, tool_called kb.search, tool_result, and
# every CONSOLE_REQUEST_EVERY-th step an approval_requested for tickets.update), written with
# INSERT ... SELECT as the platform's role, one run per statement, so every step is judged by
# the trigger as in production. The requests of one run in 50 expire a second after they are
# made, of one run in two a month after, the others never. Then an approver decides every
# request (decide_approval(): granted or denied) except ten spread over the trail (the first
# among them), which stay pending, and the expired ones; the platform withdraws one request in
# 97 before that (withdraw_approval()); then VACUUM (ANALYZE), as autovacuum leaves an
# append-only trail. The reader is an analyst of acme who signs in with its password, as a
# person would. Not a test: it prints figures.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}
VENV=${CONSOLE_VENV:-/tmp/pg_labels_console_venv}
STEPS=${CONSOLE_STEPS:-1000000}
PER_RUN=1000
EVERY=${CONSOLE_REQUEST_EVERY:-1000}
EXTRA_SQL=${BENCH_EXTRA_SQL:-}
PLANS=${CONSOLE_PLANS:-}
RUNS=$(( (STEPS + PER_RUN - 1) / PER_RUN ))
unset PGHOST PGPORT PGUSER PGDATABASE PGPASSWORD PGSERVICE
log() { printf '\n==> %s\n' "$*" >&2; }

[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
"$VENV/bin/pip" install -q --disable-pip-version-check -r console/requirements-test.txt
# the console and the package it uses (python/), as docs/console.md installs them
"$VENV/bin/pip" install -q --disable-pip-version-check --force-reinstall --no-deps ./python ./console
rm -rf console/build python/build

free_port() { "$VENV/bin/python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
WORK=$(mktemp -d /tmp/pg_labels_console_bench.XXXXXX)
chown postgres: "$WORK"; chmod 755 "$WORK"
CONSOLE_PID=
cleanup() {
    [ -n "$CONSOLE_PID" ] && kill "$CONSOLE_PID" 2>/dev/null && wait "$CONSOLE_PID" 2>/dev/null || true
    [ -d "$WORK/data" ] && runuser -u postgres -- "$PGBIN/pg_ctl" -D "$WORK/data" -m immediate stop >/dev/null 2>&1 || true
    rm -rf "$WORK"
}
trap cleanup EXIT
PORT=$(free_port)
runuser -u postgres -- "$PGBIN/initdb" -D "$WORK/data" -U postgres --auth-local=trust --auth-host=scram-sha-256 \
    --no-sync --encoding UTF8 --locale C.UTF-8 >"$WORK/initdb.log"
runuser -u postgres -- "$PGBIN/pg_ctl" -D "$WORK/data" -l "$WORK/server.log" -w \
    -o "-c listen_addresses=127.0.0.1 -k $WORK -p $PORT -c fsync=off -c shared_buffers=512MB -c max_wal_size=4GB" start >/dev/null
psql_admin() { "$PGBIN/psql" -X -q -v ON_ERROR_STOP=1 -h "$WORK" -p "$PORT" -U postgres -d bench "$@"; }
"$PGBIN/psql" -X -q -h "$WORK" -p "$PORT" -U postgres -d postgres -c "CREATE DATABASE bench"
psql_admin <<'SQL'
CREATE EXTENSION pg_labels;
INSERT INTO pg_labels.tools (name, effect, trusted_output)
VALUES ('kb.search', 'read', true), ('tickets.update', 'reversible_write', true);
CREATE ROLE bench_platform;
GRANT USAGE ON SCHEMA pg_labels TO bench_platform;
GRANT SELECT, INSERT ON pg_labels.runs, pg_labels.steps TO bench_platform;
GRANT SELECT ON pg_labels.tools TO bench_platform;
INSERT INTO pg_labels.grants (role, scope) VALUES ('bench_platform', 'acme/platform');
CREATE ROLE bench_analyst LOGIN PASSWORD 'bench-secret';
GRANT USAGE ON SCHEMA pg_labels TO bench_analyst;
GRANT SELECT ON pg_labels.runs, pg_labels.steps, pg_labels.grants, pg_labels.tools, pg_labels.refusals,
                pg_labels.trail, pg_labels.refused_writes, pg_labels.artifacts, pg_labels.shares,
                pg_labels.approval_requests TO bench_analyst;
INSERT INTO pg_labels.grants (role, scope) VALUES ('bench_analyst', 'acme');
GRANT EXECUTE ON FUNCTION pg_labels.withdraw_approval(bigint, text) TO bench_platform;
CREATE ROLE bench_approver;
GRANT USAGE ON SCHEMA pg_labels TO bench_approver;
GRANT SELECT ON pg_labels.runs, pg_labels.steps TO bench_approver;
GRANT EXECUTE ON FUNCTION pg_labels.decide_approval(bigint, boolean, text) TO bench_approver;
INSERT INTO pg_labels.grants (role, scope) VALUES ('bench_approver', 'acme');
SQL
if [ -n "$EXTRA_SQL" ]; then
    log "BENCH_EXTRA_SQL: $EXTRA_SQL"
    psql_admin -c "$EXTRA_SQL"
fi

log "filling the trail: $RUNS runs of $PER_RUN steps ($((RUNS * PER_RUN)) steps, an approval request every $EVERY) as the platform's role"
started=$SECONDS
psql_admin -v runs="$RUNS" -v per_run="$PER_RUN" -v every="$EVERY" <<'SQL'
SET ROLE bench_platform;
WITH ids AS MATERIALIZED (SELECT i, gen_random_uuid() AS id FROM generate_series(1, :runs) i)
SELECT format('INSERT INTO pg_labels.runs (id, agent, scope) VALUES (%L, %L, ''acme/platform'')', id, 'bot-' || (i % 7)),
       format('INSERT INTO pg_labels.steps (run_id, kind, tool, labels, args, expires_at)
               SELECT %L, k.kind, k.tool, k.labels::labelset, jsonb_build_object(''q'', ''question '' || g, ''n'', g),
                      CASE WHEN k.kind = ''approval_requested'' THEN now() + %L::interval END
               FROM generate_series(1, %s) g,
                    LATERAL (SELECT CASE WHEN g %% %s = %s THEN ''approval_requested''
                                         ELSE (ARRAY[''input'', ''planned'', ''tool_called'', ''tool_result''])[g %% 4 + 1] END AS kind,
                                    CASE WHEN g %% %s = %s THEN ''tickets.update'' WHEN g %% 4 IN (2, 3) THEN ''kb.search'' END AS tool,
                                    CASE WHEN g %% 4 = 0 THEN ''{tag:pii}'' ELSE ''{}'' END AS labels) k',
              id, CASE WHEN i % 50 = 7 THEN '1 second' WHEN i % 2 = 0 THEN '1 month' END,
              :per_run, :every, :every / 2, :every, :every / 2)
FROM ids ORDER BY i
\gexec
SQL
log "filled in $((SECONDS - started)) s; deciding the requests"
started=$SECONDS
sleep 2  # the short-lived requests expire
psql_admin <<'SQL'
CREATE TABLE public.bench_requests AS
SELECT id, expires_at, row_number() OVER (ORDER BY id) AS n, count(*) OVER () AS total
  FROM pg_labels.steps WHERE kind = 'approval_requested';
-- ten stay pending, spread over the trail (the first request among them); the expired ones
-- stay undecided; the platform withdraws one in 97 of the others; the approver decides the rest
ALTER TABLE public.bench_requests ADD COLUMN fate text;
UPDATE public.bench_requests SET fate = CASE
    WHEN expires_at <= now() THEN 'expired'
    WHEN n % greatest(total / 10, 1) = 1 % greatest(total / 10, 1) AND n <= greatest(total / 10, 1) * 10 THEN 'pending'
    WHEN n % 97 = 5 THEN 'withdrawn'
    ELSE 'decided' END;
GRANT SELECT ON public.bench_requests TO bench_platform, bench_approver;
SET ROLE bench_platform;
SELECT pg_labels.enter_scope('acme/platform', true) \g /dev/null
SELECT count(pg_labels.withdraw_approval(id, 'bench')) AS withdrawn FROM public.bench_requests WHERE fate = 'withdrawn';
RESET ROLE;
SET ROLE bench_approver;
SELECT pg_labels.enter_scope('acme', true) \g /dev/null
SELECT count(pg_labels.decide_approval(id, id % 3 <> 0, 'bench')) AS decided FROM public.bench_requests WHERE fate = 'decided';
RESET ROLE;
SQL
psql_admin -c "VACUUM (ANALYZE)"
PENDING=$(psql_admin -Atc "SELECT count(*) FROM public.bench_requests WHERE fate = 'pending'")
log "decided in $((SECONDS - started)) s: $(psql_admin -Atc "SELECT count(*) FROM pg_labels.steps") steps, $(psql_admin -Atc "SELECT count(*) FROM pg_labels.runs") runs, requests: $(psql_admin -Atc "SELECT string_agg(fate || ' ' || c, ', ' ORDER BY fate) FROM (SELECT fate, count(*) c FROM public.bench_requests GROUP BY fate) x")"
BIG_RUN=$(psql_admin -Atc "SELECT id FROM pg_labels.runs ORDER BY opened_at DESC, id DESC LIMIT 1 OFFSET 3")
BIG_RUN_STEPS=$(psql_admin -Atc "SELECT count(*) FROM pg_labels.steps WHERE run_id = '$BIG_RUN'")

CPORT=$(free_port)
"$VENV/bin/pg-labels-console" --database "postgresql://127.0.0.1:$PORT/bench" --listen "127.0.0.1:$CPORT" \
    >"$WORK/console.log" 2>&1 &
CONSOLE_PID=$!
for _ in $(seq 1 100); do
    "$VENV/bin/python" -c "import urllib.request, sys; urllib.request.urlopen(sys.argv[1])" "http://127.0.0.1:$CPORT/login" 2>/dev/null && break
    sleep 0.1
done

"$VENV/bin/python" - "http://127.0.0.1:$CPORT" "$BIG_RUN" "$BIG_RUN_STEPS" "$((RUNS * PER_RUN))" "$PENDING" \
    "postgresql://127.0.0.1:$PORT/bench" "$PLANS" <<'PY'
import re, statistics, sys, time
import httpx
from pg_labels_console import db

base, run_id, run_steps, steps, pending, database_url, plans = (
    sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), sys.argv[6], sys.argv[7])
c = httpx.Client(base_url=base, follow_redirects=False, timeout=60)
token = lambda html: re.search(r'name="csrf" value="([^"]+)"', html).group(1)
r = c.post("/login", data={"csrf": token(c.get("/login").text), "role": "bench_analyst", "password": "bench-secret"})
assert r.status_code == 303, r.text
r = c.post("/scope", data={"csrf": token(c.get("/scope").text), "scope": "acme"})
assert r.status_code == 303, r.text
p95 = lambda xs: sorted(xs)[int(round(0.95 * (len(xs) - 1)))]

def measure(path, check):
    for _ in range(3):
        check(c.get(path))
    server, wall = [], []
    for _ in range(20):
        t = time.perf_counter()
        resp = c.get(path)
        wall.append((time.perf_counter() - t) * 1000)
        check(resp)
        server.append(float(resp.headers["server-timing"].split("dur=")[1]))
    return statistics.median(server), p95(server), statistics.median(wall), p95(wall)

def run_page(resp):
    assert resp.status_code == 200 and resp.text.count('class="step ') == run_steps, resp.status_code
def runs_list(resp):
    assert resp.status_code == 200 and resp.text.count('<tr class="run">') == min(50, steps // 1000), resp.status_code
def queue(resp):
    assert resp.status_code == 200 and resp.text.count('class="card request"') == min(pending, 100), resp.status_code

print(f"trail: {steps} steps in {steps // 1000} runs of 1000 steps, {pending} approval requests pending; 20 requests each after 3 warm-ups")
print(f"{'page':34} {'server median':>14} {'server p95':>11} {'wall median':>12} {'wall p95':>9}")
for name, path, check, goal in ((f"run page ({run_steps:,} steps)", f"/runs/{run_id}", run_page, 300),
                                ("runs list (first page, 50 runs)", "/runs", runs_list, 500),
                                ("approver's queue page", "/approvals", queue, None)):
    m, p, wm, wp = measure(path, check)
    print(f"{name:34} {m:11.1f} ms {p:8.1f} ms {wm:9.1f} ms {wp:6.1f} ms   "
          + (f"(goal < {goal} ms: {'met' if p < goal else 'NOT met'} at p95)" if goal else
             "(the queue, its decisions, each request's label sources, rendered)"))
for name, path in (("refusals (for scale, no goal)", "/refusals"),):
    m, p, wm, wp = measure(path, lambda resp: resp.status_code == 200 or sys.exit(f"{path}: {resp.status_code}"))
    print(f"{name:34} {m:11.1f} ms {p:8.1f} ms {wm:9.1f} ms {wp:6.1f} ms")
nxt = re.search(r'id="next-page" href="([^"]+)"', c.get("/runs").text)
if nxt and steps // 1000 >= 100:
    m, p, wm, wp = measure(nxt.group(1).replace("&amp;", "&"), runs_list)
    print(f"{'runs list (second page, keyset)':34} {m:11.1f} ms {p:8.1f} ms {wm:9.1f} ms {wp:6.1f} ms")

# the queue's own queries, as the console runs them (its db module, a connection of the
# analyst's, the scope entered in the same transaction), timed from the client
conn = db.connect(database_url, "bench_analyst", "bench-secret")
def timed(fn, check):
    took = []
    for i in range(23):
        with conn.transaction():
            db.enter(conn, "acme")
            t = time.perf_counter()
            rows = fn(conn)
            if i >= 3:
                took.append((time.perf_counter() - t) * 1000)
        check(rows)
    return statistics.median(took), p95(took)
def n_pending(rows):
    assert len(rows) == min(pending, 100) and all(r["status"] == "pending" for r in rows), len(rows)
for name, fn, check, goal in (("queue's query (pending_requests)", db.pending_requests, n_pending, 20),
                              ("decisions (closed_requests)", db.closed_requests, lambda rows: None, None)):
    m, p = timed(fn, check)
    print(f"{name:34} {m:11.1f} ms {p:8.1f} ms" + (f"   (goal < {goal} ms: {'met' if p < goal else 'NOT met'} at p95)" if goal else ""))

class Explain:  # runs the query the db module sends under EXPLAIN (ANALYZE, BUFFERS)
    def __init__(self, conn):
        self.conn = conn
    def execute(self, query, params=None):
        return self.conn.execute("EXPLAIN (ANALYZE, BUFFERS) " + query, params)
with conn.transaction():
    db.enter(conn, "acme")
    plan = "\n".join(r["QUERY PLAN"] for r in db.pending_requests(Explain(conn)))
times = "; ".join(l.strip() for l in plan.splitlines() if l.strip().startswith(("Planning Time", "Execution Time")))
print(f"queue query, EXPLAIN (ANALYZE, BUFFERS): {times}")
if plans:
    open(plans, "w").write(plan + "\n")
    print(f"(its plan: {plans})")
else:
    print(plan)
PY
