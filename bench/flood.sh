#!/usr/bin/env bash
# A flood of refusals against the writes of other roles (issues 33 and 45), release 0.3.0
# against this tree in the same run: what recording every refusal costs the platform's allowed
# writes while one role refuses in FLOOD_CLIENTS (16) sessions at once, each refusal its own
# transaction, as fast as they can.
#
# Two PostgreSQL 16 servers from the same wheel (scripts/pg_versions.sh), one with release 0.3.0
# built from its commit (a queue and a worker per refusing backend), one with this tree (one
# queue and one worker per database); each a throwaway cluster (max_worker_processes 8, the
# default). In every round, on each in turn: the flood runs while 2 clients of another role
# write allowed steps, for FLOOD_SECONDS (10); the allowed writes' tps and the refusals per
# second are read from pgbench, and the recorder workers running are sampled. Printed: medians
# of FLOOD_ROUNDS (7) rounds and the median of the rounds' ratios (this / 0.3.0) with its 95%
# interval (the sign test); each without the flood, for scale. Then what one worker writes a
# second: 16 sessions hand over 190 records each at once (within the budget, one record per
# refusal), and the records' recorded_at spans the time their worker(s) took. Called by
# scripts/bench.sh flood. Needs ROOT.
set -euo pipefail
: "${ROOT:?}"
RELEASE_0_3_0=7211609
rounds=${FLOOD_ROUNDS:-7}
seconds=${FLOOD_SECONDS:-10}
clients=${FLOOD_CLIENTS:-16}
work=$(mktemp -d /tmp/pg_labels_flood.XXXXXX)
chown postgres: "$work"
log() { printf '\n==> %s\n' "$*" >&2; }

# the two servers, and each version built into its own
export CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 CARGO_PROFILE_RELEASE_INCREMENTAL=true
declare -A config
for v in 030 031; do
    config[$v]=$(PG_VERSIONS_PREFIX=/opt/pg_labels_flood_$v "$ROOT/scripts/pg_versions.sh" 16)
done
# (each build reads a pgrx configuration of its own naming its server, as bench/versions.sh's:
# the user's ~/.pgrx/config.toml, which names every server the tests build for, is left alone)
pgrx_home() { # version: a PGRX_HOME naming its server
    mkdir -p "$work/pgrx_$1"
    printf '[configs]\npg16 = "%s"\n' "${config[$1]}" >"$work/pgrx_$1/config.toml"
    echo "$work/pgrx_$1"
}
log "building this tree into ${config[031]}"
(cd "$ROOT" && PGRX_HOME=$(pgrx_home 031) cargo pgrx install --release --pg-config "${config[031]}" 2>&1 | grep -E "^error" || true)
cp "$ROOT"/sql/released/pg_labels--*.sql "$("${config[031]}" --sharedir)/extension/"
log "building 0.3.0 ($RELEASE_0_3_0) into ${config[030]}"
src=$work/src_0_3_0
git -C "$ROOT" worktree add -q --detach "$src" "$RELEASE_0_3_0"
(cd "$src" && PGRX_HOME=$(pgrx_home 030) CARGO_TARGET_DIR="$ROOT/target/flood_0_3_0" cargo pgrx install --release --pg-config "${config[030]}" 2>&1 | grep -E "^error" || true)
git -C "$ROOT" worktree remove --force "$src"

declare -A port=([030]=5471 [031]=5472)
start() { # version
    local v=$1 bin
    bin=$(dirname "${config[$v]}")
    runuser -u postgres -- "$bin/initdb" -D "$work/data_$v" -U postgres -A trust --no-sync >/dev/null
    runuser -u postgres -- "$bin/pg_ctl" -D "$work/data_$v" -l "$work/server_$v.log" -w \
        -o "-c listen_addresses='' -k $work -p ${port[$v]} -c fsync=off -c synchronous_commit=off -c shared_buffers=512MB" start >/dev/null
}
stop() {
    for v in 030 031; do
        runuser -u postgres -- "$(dirname "${config[$v]}")/pg_ctl" -D "$work/data_$v" -m fast stop >/dev/null 2>&1 || true
    done
    rm -rf "$work"
}
trap stop EXIT
q() { "$(dirname "${config[$1]}")/psql" -X -q -v ON_ERROR_STOP=1 -h "$work" -p "${port[$1]}" -U postgres -d flood "${@:2}"; }

for v in 030 031; do
    start $v
    "$(dirname "${config[$v]}")/psql" -X -q -h "$work" -p "${port[$v]}" -U postgres -d postgres -c "CREATE DATABASE flood"
    q $v <<'SQL'
CREATE EXTENSION pg_labels;
CREATE ROLE platform; CREATE ROLE attacker;
GRANT USAGE ON SCHEMA pg_labels TO platform, attacker;
GRANT SELECT, INSERT ON pg_labels.runs, pg_labels.steps TO platform, attacker;
-- where they act (0.3.1 binds writers to their grants; on 0.3.0 an analyst's grant, unused)
INSERT INTO pg_labels.grants (role, scope) VALUES ('platform', 'acme'), ('attacker', 'acme');
INSERT INTO pg_labels.tools (name, effect) VALUES ('flood.pay', 'financial'), ('flood.read', 'read');
-- the platform's 100 runs (trusted), the attacker's one (untrusted data in it)
INSERT INTO pg_labels.runs (id, scope) SELECT md5('r' || i)::uuid, 'acme/ops' FROM generate_series(1, 100) i;
INSERT INTO pg_labels.runs (id, scope) VALUES ('f1000000-0000-0000-0000-000000000001', 'acme/ops');
INSERT INTO pg_labels.steps (run_id, kind, labels) VALUES ('f1000000-0000-0000-0000-000000000001', 'input', '{origin:webhook}');
CREATE FUNCTION try_pay(n int) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    FOR i IN 1..n LOOP
        BEGIN
            INSERT INTO pg_labels.steps (run_id, kind, tool) VALUES ('f1000000-0000-0000-0000-000000000001', 'tool_called', 'flood.pay');
        EXCEPTION WHEN SQLSTATE '23L02' THEN NULL;
        END;
    END LOOP;
END $$;
SQL
done
echo "SET ROLE attacker; SELECT try_pay(1);" >"$work/flood.sql"
printf '%s\n' "\\set r random(1, 100)" "SET ROLE platform;" \
    "INSERT INTO pg_labels.steps (run_id, kind, tool) VALUES (md5('r' || :r)::uuid, 'tool_called', 'flood.read');" >"$work/allowed.sql"
bench() { # version script clients: tps
    "$(dirname "${config[$1]}")/pgbench" -n -h "$work" -p "${port[$1]}" -U postgres -c "$3" -j "$3" -T "$seconds" \
        -f "$work/$2" flood 2>/dev/null | sed -n 's/^tps = \([0-9.]*\).*/\1/p'
}
source "$ROOT/bench/stats.sh"

# the recorder workers of the flood's database, sampled every half second while it runs
workers() { # version: the most seen
    local most=0 n i
    for i in $(seq 1 $((seconds * 2 - 2))); do
        n=$(q "$1" -At -c "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'pg_labels refusal recorder'")
        [ "$n" -gt "$most" ] && most=$n
        sleep 0.5
    done
    echo "$most"
}

declare -A quiet allowed refusals recorders
ratios=""
for round in $(seq 1 "$rounds"); do
    log "round $round of $rounds"
    declare -A this
    for v in 030 031; do
        quiet[$v]+=" $(bench $v allowed.sql 2)"
        bench $v flood.sql "$clients" >"$work/flood_tps" &
        flood_pid=$!
        sleep 0.5
        workers $v >"$work/workers" &
        workers_pid=$!
        this[$v]=$(bench $v allowed.sql 2)
        wait $flood_pid $workers_pid
        allowed[$v]+=" ${this[$v]}"
        refusals[$v]+=" $(cat "$work/flood_tps")"
        recorders[$v]+=" $(cat "$work/workers")"
    done
    ratios+=" $(echo "${this[031]} / ${this[030]}" | bc -l)"
    printf 'allowed tps under the flood: 0.3.0 %.0f, this %.0f, ratio %.3f\n' "${this[030]}" "${this[031]}" \
        "$(echo "${this[031]} / ${this[030]}" | bc -l)"
done
declare -A records
for v in 030 031; do
    records[$v]=$(q $v -At -c "SELECT pg_labels.refusals_recorded('2 minutes')" -c "SELECT count(*) || ' records of ' || sum(count) || ' refusals' FROM pg_labels.refused_writes" | tail -1)
done

# what one worker writes a second: 16 sessions hand over 190 records each at once, and the
# records' recorded_at gives the time the worker(s) took to write them
for v in 030 031; do
    "$(dirname "${config[$v]}")/psql" -X -q -h "$work" -p "${port[$v]}" -U postgres -d postgres -c "CREATE DATABASE burst"
    "$(dirname "${config[$v]}")/psql" -X -q -h "$work" -p "${port[$v]}" -U postgres -d burst <<'SQL'
CREATE EXTENSION pg_labels;
INSERT INTO pg_labels.tools (name, effect) VALUES ('flood.pay', 'financial');
INSERT INTO pg_labels.runs (id, scope) VALUES ('f1000000-0000-0000-0000-000000000001', 'acme/ops');
INSERT INTO pg_labels.steps (run_id, kind, labels) VALUES ('f1000000-0000-0000-0000-000000000001', 'input', '{origin:webhook}');
SQL
done
declare -A rate
for v in 030 031; do
    for i in $(seq 1 16); do
        "$(dirname "${config[$v]}")/psql" -X -q -h "$work" -p "${port[$v]}" -U postgres -d burst -c "DO \$\$ BEGIN FOR i IN 1..190 LOOP BEGIN
            INSERT INTO pg_labels.steps (run_id, kind, tool) VALUES ('f1000000-0000-0000-0000-000000000001', 'tool_called', 'flood.pay');
            EXCEPTION WHEN SQLSTATE '23L02' THEN NULL; END; END LOOP; END \$\$" -c "SELECT pg_labels.refusals_recorded('2 minutes')" >/dev/null &
    done
    wait
    rate[$v]=$("$(dirname "${config[$v]}")/psql" -X -q -At -h "$work" -p "${port[$v]}" -U postgres -d burst -c "
        SELECT round(count(*) / greatest(extract(epoch FROM max(recorded_at) - min(refused_at)), 0.001)) FROM pg_labels.refused_writes")
done

printf '\n%-50s %12s %12s %8s\n' "" "0.3.0" "this" "ratio"
for k in quiet allowed refusals recorders; do
    case $k in
        quiet) label="allowed steps/s, no flood (2 clients)"; declare -n m=quiet ;;
        allowed) label="allowed steps/s under the flood (2 clients)"; declare -n m=allowed ;;
        refusals) label="refusals/s of the flood ($clients clients)"; declare -n m=refusals ;;
        recorders) label="recorder workers seen at once (most, median)"; declare -n m=recorders ;;
    esac
    a=$(echo "${m[030]}" | median)
    b=$(echo "${m[031]}" | median)
    printf '%-50s %12.0f %12.0f %8.3f\n' "$label" "$a" "$b" "$(echo "$b / $a" | bc -l)"
    unset -n m
done
printf '%-50s %12.0f %12.0f %8.3f\n' "records/s written (16 x 190 handed over at once)" "${rate[030]}" "${rate[031]}" "$(echo "${rate[031]} / ${rate[030]}" | bc -l)"
echo "median of the rounds' ratios (allowed under the flood, this / 0.3.0): $(echo "$ratios" | median | xargs printf '%.3f'); 95% interval: $(echo "$ratios" | interval)"
echo "recorded: 0.3.0 ${records[030]}; this ${records[031]}; medians of $rounds rounds of ${seconds} s, PostgreSQL 16, max_worker_processes 8"
