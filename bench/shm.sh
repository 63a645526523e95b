#!/usr/bin/env bash
# Shared memory the refusal recorder keeps per backend (issue 45): SHM_SESSIONS (20) sessions
# each refuse one call and then stay connected; /dev/shm (the dynamic shared memory segments of
# PostgreSQL, POSIX) is read while they idle after their transaction, against the same server
# before any refusal. Release 0.3.0 (a queue per refusing backend, kept for its life) against
# this tree (one queue per database, let go of once written), on the PostgreSQL 16 servers
# bench/flood.sh built (run it first). Called by scripts/bench.sh shm. Needs ROOT.
set -euo pipefail
: "${ROOT:?}"
sessions=${SHM_SESSIONS:-20}
work=$(mktemp -d /tmp/pg_labels_shm.XXXXXX)
chown postgres: "$work"
declare -A prefix=([030]=/opt/pg_labels_flood_030 [031]=/opt/pg_labels_flood_031)
shm() { du -cb /dev/shm/PostgreSQL.* 2>/dev/null | tail -1 | cut -f1; }
for v in 030 031; do
    config=$(PG_VERSIONS_PREFIX=${prefix[$v]} "$ROOT/scripts/pg_versions.sh" 16)
    bin=$(dirname "$config")
    runuser -u postgres -- "$bin/initdb" -D "$work/data_$v" -U postgres -A trust --no-sync >/dev/null
    runuser -u postgres -- "$bin/pg_ctl" -D "$work/data_$v" -l "$work/server_$v.log" -w \
        -o "-c listen_addresses='' -k $work -p 5473 -c fsync=off" start >/dev/null
    q() { "$bin/psql" -X -q -h "$work" -p 5473 -U postgres -d postgres "$@"; }
    q <<'SQL'
CREATE EXTENSION pg_labels;
CREATE ROLE attacker;
GRANT USAGE ON SCHEMA pg_labels TO attacker;
GRANT SELECT, INSERT ON pg_labels.runs, pg_labels.steps TO attacker;
INSERT INTO pg_labels.grants (role, scope) VALUES ('attacker', 'acme');
INSERT INTO pg_labels.tools (name, effect) VALUES ('flood.pay', 'financial');
INSERT INTO pg_labels.runs (id, scope) VALUES ('f1000000-0000-0000-0000-000000000001', 'acme/ops');
INSERT INTO pg_labels.steps (run_id, kind, labels) VALUES ('f1000000-0000-0000-0000-000000000001', 'input', '{origin:webhook}');
SQL
    sleep 1
    before=$(shm)
    for i in $(seq 1 "$sessions"); do
        q -c "SET ROLE attacker" -c "DO \$\$ BEGIN
                INSERT INTO pg_labels.steps (run_id, kind, tool) VALUES ('f1000000-0000-0000-0000-000000000001', 'tool_called', 'flood.pay');
              EXCEPTION WHEN SQLSTATE '23L02' THEN NULL; END \$\$" -c "\\! sleep 6" >/dev/null &
    done
    sleep 4
    during=$(shm)
    wait
    sleep 1
    after=$(shm)
    printf '%s: /dev/shm %d kB before, %d kB with %d sessions idle after one refusal each (%.1f kB per session), %d kB after they left\n' \
        "$([ $v = 030 ] && echo "0.3.0" || echo "this")" $((before / 1024)) $((during / 1024)) "$sessions" \
        "$(echo "($during - $before) / 1024 / $sessions" | bc -l)" $((after / 1024))
    runuser -u postgres -- "$bin/pg_ctl" -D "$work/data_$v" -m fast stop >/dev/null
done
rm -rf "$work"
