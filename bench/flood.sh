#!/usr/bin/env bash
# A flood of refusals against the writes of other roles (issue 33), 0.3.0 against 0.2.0 in the
# same run: what recording every refusal (a background worker, a LOG line, counting past the
# budget) costs the platform's allowed writes while one role refuses as fast as it can.
#
# Two PostgreSQL 16 servers from the same wheel (scripts/pg_versions.sh), one with release 0.2.0
# built from its commit (which records nothing), one with this tree; each a throwaway cluster.
# In every round, on each in turn: 4 clients refuse calls in a loop (a financial tool on
# untrusted data, 50 per transaction) while 2 clients of another role write allowed steps, for
# FLOOD_SECONDS (10); the allowed writes' tps and the refusals per second are read from
# pgbench. Printed: medians of FLOOD_ROUNDS (7) rounds and the median of the rounds' ratios
# (0.3.0 / 0.2.0) with its 95% interval (the sign test). Also each without the flood, for scale.
# Called by scripts/bench.sh flood. Needs ROOT.
set -euo pipefail
: "${ROOT:?}"
RELEASE_0_2_0=56aea2d
rounds=${FLOOD_ROUNDS:-7}
seconds=${FLOOD_SECONDS:-10}
work=$(mktemp -d /tmp/pg_labels_flood.XXXXXX)
chown postgres: "$work"
log() { printf '\n==> %s\n' "$*" >&2; }

# the two servers, and each version built into its own
export CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 CARGO_PROFILE_RELEASE_INCREMENTAL=true
declare -A config
for v in 020 030; do
    config[$v]=$(PG_VERSIONS_PREFIX=/opt/pg_labels_flood_$v "$ROOT/scripts/pg_versions.sh" 16)
done
(cd "$ROOT" && PG_MAJOR=16 PG_CONFIG=${config[030]} bash -c 'source scripts/lib.sh; ensure_pgrx' )
log "building 0.3.0 (this tree) into ${config[030]}"
(cd "$ROOT" && cargo pgrx install --release --pg-config "${config[030]}" 2>&1 | grep -E "^error" || true)
cp "$ROOT"/sql/released/pg_labels--*.sql "$("${config[030]}" --sharedir)/extension/"
log "building 0.2.0 ($RELEASE_0_2_0) into ${config[020]}"
src=$work/src_0_2_0
git -C "$ROOT" worktree add -q --detach "$src" "$RELEASE_0_2_0"
(cd "$src" && CARGO_TARGET_DIR="$ROOT/target/flood_0_2_0" cargo pgrx install --release --pg-config "${config[020]}" 2>&1 | grep -E "^error" || true)
git -C "$ROOT" worktree remove --force "$src"

declare -A port=([020]=5471 [030]=5472)
start() { # version
    local v=$1 bin
    bin=$(dirname "${config[$v]}")
    runuser -u postgres -- "$bin/initdb" -D "$work/data_$v" -U postgres -A trust --no-sync >/dev/null
    runuser -u postgres -- "$bin/pg_ctl" -D "$work/data_$v" -l "$work/server_$v.log" -w \
        -o "-c listen_addresses='' -k $work -p ${port[$v]} -c fsync=off -c synchronous_commit=off -c shared_buffers=512MB" start >/dev/null
}
stop() {
    for v in 020 030; do
        runuser -u postgres -- "$(dirname "${config[$v]}")/pg_ctl" -D "$work/data_$v" -m fast stop >/dev/null 2>&1 || true
    done
    rm -rf "$work"
}
trap stop EXIT
q() { "$(dirname "${config[$1]}")/psql" -X -q -v ON_ERROR_STOP=1 -h "$work" -p "${port[$1]}" -U postgres -d flood "${@:2}"; }

for v in 020 030; do
    start $v
    "$(dirname "${config[$v]}")/psql" -X -q -h "$work" -p "${port[$v]}" -U postgres -d postgres -c "CREATE DATABASE flood"
    q $v <<'SQL'
CREATE EXTENSION pg_labels;
CREATE ROLE platform; CREATE ROLE attacker;
GRANT USAGE ON SCHEMA pg_labels TO platform, attacker;
GRANT SELECT, INSERT ON pg_labels.runs, pg_labels.steps TO platform, attacker;
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
echo "SET ROLE attacker; SELECT try_pay(50);" >"$work/flood.sql"
printf '%s\n' "\\set r random(1, 100)" "SET ROLE platform;" \
    "INSERT INTO pg_labels.steps (run_id, kind, tool) VALUES (md5('r' || :r)::uuid, 'tool_called', 'flood.read');" >"$work/allowed.sql"
bench() { # version script clients: tps
    "$(dirname "${config[$1]}")/pgbench" -n -h "$work" -p "${port[$1]}" -U postgres -c "$3" -j "$3" -T "$seconds" \
        -f "$work/$2" flood 2>/dev/null | sed -n 's/^tps = \([0-9.]*\).*/\1/p'
}
source "$ROOT/bench/stats.sh"

declare -A quiet allowed refusals
ratios=""
for round in $(seq 1 "$rounds"); do
    log "round $round of $rounds"
    declare -A this
    for v in 020 030; do
        quiet[$v]+=" $(bench $v allowed.sql 2)"
        bench $v flood.sql 4 >"$work/flood_tps" &
        flood_pid=$!
        sleep 0.5
        this[$v]=$(bench $v allowed.sql 2)
        wait $flood_pid
        allowed[$v]+=" ${this[$v]}"
        refusals[$v]+=" $(echo "$(cat "$work/flood_tps") * 50" | bc -l)"
    done
    ratios+=" $(echo "${this[030]} / ${this[020]}" | bc -l)"
    printf 'allowed tps under the flood: 0.2.0 %.0f, 0.3.0 %.0f, ratio %.3f\n' "${this[020]}" "${this[030]}" \
        "$(echo "${this[030]} / ${this[020]}" | bc -l)"
done
records=$(q 030 -At -c "SELECT pg_labels.refusals_recorded('1 minute')" -c "SELECT count(*) || ' records of ' || sum(count) || ' refusals' FROM pg_labels.refused_writes" | tail -1)
printf '\n%-44s %12s %12s %8s\n' "" "0.2.0" "0.3.0" "ratio"
for k in quiet allowed refusals; do
    case $k in
        quiet) label="allowed steps/s, no flood (2 clients)"; declare -n m=quiet ;;
        allowed) label="allowed steps/s under the flood (2 clients)"; declare -n m=allowed ;;
        refusals) label="refusals/s of the flood (4 clients)"; declare -n m=refusals ;;
    esac
    a=$(echo "${m[020]}" | median)
    b=$(echo "${m[030]}" | median)
    printf '%-44s %12.0f %12.0f %8.3f\n' "$label" "$a" "$b" "$(echo "$b / $a" | bc -l)"
    unset -n m
done
echo "median of the rounds' ratios (allowed under the flood, 0.3.0 / 0.2.0): $(echo "$ratios" | median | xargs printf '%.3f'); 95% interval: $(echo "$ratios" | interval)"
echo "goal (issue 33): >= 0.9; 0.3.0 recorded $records; medians of $rounds rounds of ${seconds} s, PostgreSQL 16"
