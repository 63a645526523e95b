#!/usr/bin/env bash
# The console's two pages under a big trail (issue 37): a run page of 1,000 steps (goal: under
# 300 ms) and the runs list of a 1 M-step trail (goal: under 500 ms), server time (the
# Server-Timing header: request in to response headers out, the queries and the rendering),
# median and p95 over 20 requests of each, after 3 warm-up requests; the client's wall time too.
#
#   PGBIN=/opt/pg_labels_console_pg18/bin bench/console.sh
#   CONSOLE_STEPS=100000 bench/console.sh        a smaller trail (default 1000000)
#
# A throwaway cluster of $PGBIN (pg_labels installed into it; default Debian's 15), scram over
# TCP on a free port, removed at exit. The trail: CONSOLE_STEPS / 1000 runs of support-bot in
# acme/platform of 1,000 steps each (input, planned, tool_called kb.search, tool_result),
# written with INSERT ... SELECT as the platform's role, one run per statement, so every step is
# judged by the trigger as in production. The reader is an analyst of acme who signs in with
# its password, as a person would. Not a test: it prints figures.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}
VENV=${CONSOLE_VENV:-/tmp/pg_labels_console_venv}
STEPS=${CONSOLE_STEPS:-1000000}
PER_RUN=1000
RUNS=$(( (STEPS + PER_RUN - 1) / PER_RUN ))
unset PGHOST PGPORT PGUSER PGDATABASE PGPASSWORD PGSERVICE
log() { printf '\n==> %s\n' "$*" >&2; }

[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
"$VENV/bin/pip" install -q --disable-pip-version-check -r console/requirements-test.txt
"$VENV/bin/pip" install -q --disable-pip-version-check --no-deps ./console
rm -rf console/build

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
INSERT INTO pg_labels.tools (name, effect, trusted_output) VALUES ('kb.search', 'read', true);
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
SQL

log "filling the trail: $RUNS runs of $PER_RUN steps ($((RUNS * PER_RUN)) steps) as the platform's role"
started=$SECONDS
psql_admin -v runs="$RUNS" -v per_run="$PER_RUN" <<'SQL'
SET ROLE bench_platform;
WITH ids AS MATERIALIZED (SELECT i, gen_random_uuid() AS id FROM generate_series(1, :runs) i)
SELECT format('INSERT INTO pg_labels.runs (id, agent, scope) VALUES (%L, %L, ''acme/platform'')', id, 'bot-' || (i % 7)),
       format('INSERT INTO pg_labels.steps (run_id, kind, tool, labels, args)
               SELECT %L, k.kind, k.tool, k.labels::labelset, jsonb_build_object(''q'', ''question '' || g, ''n'', g)
               FROM generate_series(1, %s) g,
                    LATERAL (SELECT (ARRAY[''input'', ''planned'', ''tool_called'', ''tool_result''])[g %% 4 + 1] AS kind,
                                    CASE WHEN g %% 4 IN (2, 3) THEN ''kb.search'' END AS tool,
                                    CASE WHEN g %% 4 = 0 THEN ''{tag:pii}'' ELSE ''{}'' END AS labels) k', id, :per_run)
FROM ids ORDER BY i
\gexec
SQL
psql_admin -c "ANALYZE"
log "filled in $((SECONDS - started)) s: $(psql_admin -Atc "SELECT count(*) FROM pg_labels.steps") steps, $(psql_admin -Atc "SELECT count(*) FROM pg_labels.runs") runs"
BIG_RUN=$(psql_admin -Atc "SELECT id FROM pg_labels.runs ORDER BY opened_at DESC, id DESC LIMIT 1 OFFSET 3")

CPORT=$(free_port)
"$VENV/bin/pg-labels-console" --database "postgresql://127.0.0.1:$PORT/bench" --listen "127.0.0.1:$CPORT" \
    >"$WORK/console.log" 2>&1 &
CONSOLE_PID=$!
for _ in $(seq 1 100); do
    "$VENV/bin/python" -c "import urllib.request, sys; urllib.request.urlopen(sys.argv[1])" "http://127.0.0.1:$CPORT/login" 2>/dev/null && break
    sleep 0.1
done

"$VENV/bin/python" - "http://127.0.0.1:$CPORT" "$BIG_RUN" "$((RUNS * PER_RUN))" <<'PY'
import re, statistics, sys, time
import httpx

base, run_id, steps = sys.argv[1], sys.argv[2], int(sys.argv[3])
c = httpx.Client(base_url=base, follow_redirects=False, timeout=60)
token = lambda html: re.search(r'name="csrf" value="([^"]+)"', html).group(1)
r = c.post("/login", data={"csrf": token(c.get("/login").text), "role": "bench_analyst", "password": "bench-secret"})
assert r.status_code == 303, r.text
r = c.post("/scope", data={"csrf": token(c.get("/scope").text), "scope": "acme"})
assert r.status_code == 303, r.text

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
    p95 = lambda xs: sorted(xs)[int(round(0.95 * (len(xs) - 1)))]
    return statistics.median(server), p95(server), statistics.median(wall), p95(wall)

def run_page(resp):
    assert resp.status_code == 200 and resp.text.count('class="step ') == 1000, resp.status_code
def runs_list(resp):
    assert resp.status_code == 200 and resp.text.count('<tr class="run">') == min(50, steps // 1000), resp.status_code

print(f"trail: {steps} steps in {steps // 1000} runs of 1000 steps; 20 requests each after 3 warm-ups")
print(f"{'page':34} {'server median':>14} {'server p95':>11} {'wall median':>12} {'wall p95':>9}")
for name, path, check, goal in (("run page (1,000 steps)", f"/runs/{run_id}", run_page, 300),
                                ("runs list (first page, 50 runs)", "/runs", runs_list, 500)):
    m, p, wm, wp = measure(path, check)
    print(f"{name:34} {m:11.1f} ms {p:8.1f} ms {wm:9.1f} ms {wp:6.1f} ms   (goal < {goal} ms: {'met' if p < goal else 'NOT met'} at p95)")
for name, path in (("approvals (for scale, no goal)", "/approvals"), ("refusals (for scale, no goal)", "/refusals")):
    m, p, wm, wp = measure(path, lambda resp: resp.status_code == 200 or sys.exit(f"{path}: {resp.status_code}"))
    print(f"{name:34} {m:11.1f} ms {p:8.1f} ms {wm:9.1f} ms {wp:6.1f} ms")
nxt = re.search(r'id="next-page" href="([^"]+)"', c.get("/runs").text)
if nxt and steps // 1000 >= 100:
    m, p, wm, wp = measure(nxt.group(1).replace("&amp;", "&"), runs_list)
    print(f"{'runs list (second page, keyset)':34} {m:11.1f} ms {p:8.1f} ms {wm:9.1f} ms {wp:6.1f} ms")
PY
