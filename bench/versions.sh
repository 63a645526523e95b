#!/usr/bin/env bash
# Release 0.2.0 against this tree in the same run (issue 50, goal 5: no silent regression):
# the trail's writes against their floor, at VERSIONS_STEPS steps (2,000,000) over
# VERSIONS_RUNS runs (10,000), on each.
#
# Two PostgreSQL 16 servers from the same wheel (scripts/pg_versions.sh, under
# /opt/pg_labels_versions_020 and /opt/pg_labels_versions_this), one with release 0.2.0 built
# from its commit (5a2862a, a detached worktree of it; its install script is the frozen
# sql/released/pg_labels--0.2.0.sql, checked), one with this tree. Both built alike: the
# release profile with LTO off, 16 codegen units, incremental (as bench/flood.sh builds), each
# into its own target directory (target/versions_0_2_0, target/versions_this) with its own
# PGRX_HOME (the user's ~/.pgrx is left alone). So the comparison is fair between the two,
# not a figure of the shipped (fat LTO) build. Each server a throwaway cluster with the same
# settings (fsync off, synchronous_commit off, shared_buffers 1GB, work_mem 64MB,
# max_wal_size 4GB: scripts/bench.sh scale's cluster).
#
# In each: a trail loaded as bench/scale_setup.sql loads it (replica mode; the same file on
# both: its columns are 0.2.0's too), the bare table and the floor (bench_plain, bench_floor:
# the bare table partitioned as the trail, with contrib's insert_username as a BEFORE ROW
# trigger in C), each with its own version's columns, constraints and indexes. Then
# VERSIONS_ROUNDS rounds (7), the two servers one after the other (in the reverse order every
# other round) and, on each, the enforced table and its floor one after the other (reversed
# every other round; a CHECKPOINT before each, as scale.sh does): single-row inserts from 1
# client on random runs and 8 clients on 8 runs (pgbench -M prepared, VERSIONS_SECONDS (10)
# per variant), INSERT ... SELECT of 100,000 steps and COPY of VERSIONS_COPY (200,000), random
# runs. Per version and round: enforced / floor (tps, or the floor's time / enforced time);
# printed: each version's median ratio with its 95% interval, and the median of the rounds'
# (this / 0.2.0) ratio of ratios with its 95% interval (bench/stats.sh: the sign test); each
# table across the versions; and the trigger's own time per step (enforced less floor), this /
# 0.2.0: what does not depend on the floor, whose own cost changed between the versions (the
# trail's CHECK constraints, which the floor copies, call a function since 0.3.0 instead of
# listing constants PostgreSQL reads back from their text at every statement).
# Called by scripts/bench.sh versions. Needs ROOT. About 50 minutes with the builds.
set -euo pipefail
: "${ROOT:?}"
RELEASE_0_2_0=5a2862a
steps=${VERSIONS_STEPS:-2000000}
nruns=${VERSIONS_RUNS:-10000}
rounds=${VERSIONS_ROUNDS:-7}
seconds=${VERSIONS_SECONDS:-10}
ncopy=${VERSIONS_COPY:-200000}
nselect=100000
versions=(020 this)
declare -A name=([020]=0.2.0 [this]=this)
work=$(mktemp -d /tmp/pg_labels_versions.XXXXXX)
chmod 755 "$work"
chown postgres: "$work"
log() { printf '\n==> %s\n' "$*" >&2; }
echo "this tree: $(git -C "$ROOT" log -1 --format="%h %s" | cut -c1-100)"
echo "load before: $(uptime)"

# the two servers, and each version built into its own (the same profile for both)
export CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 CARGO_PROFILE_RELEASE_INCREMENTAL=true
declare -A config target
target=([020]=$ROOT/target/versions_0_2_0 [this]=$ROOT/target/versions_this)
for v in "${versions[@]}"; do
    config[$v]=$(PG_VERSIONS_PREFIX=/opt/pg_labels_versions_$v "$ROOT/scripts/pg_versions.sh" 16)
done
build() { # version source-directory
    local v=$1
    mkdir -p "${target[$v]}/pgrx"
    printf '[configs]\npg16 = "%s"\n' "${config[$v]}" >"${target[$v]}/pgrx/config.toml"
    if ! (cd "$2" && PGRX_HOME="${target[$v]}/pgrx" CARGO_TARGET_DIR="${target[$v]}" \
        cargo pgrx install --release --pg-config "${config[$v]}") >"$work/build_$v.log" 2>&1; then
        tail -30 "$work/build_$v.log" >&2
        echo "building ${name[$v]} failed" >&2
        exit 1
    fi
}
log "building this tree into ${config[this]}"
build this "$ROOT"
# (a fixed place: cargo finds its last build of it there)
src=/tmp/pg_labels_versions_src_0_2_0
log "building 0.2.0 ($RELEASE_0_2_0) into ${config[020]}"
if [ "$(git -C "$src" rev-parse HEAD 2>/dev/null)" != "$(git -C "$ROOT" rev-parse "$RELEASE_0_2_0")" ] ||
    [ -n "$(git -C "$src" status --porcelain 2>/dev/null)" ]; then
    [ -d "$src" ] && git -C "$ROOT" worktree remove --force "$src"
    git -C "$ROOT" worktree prune
    git -C "$ROOT" worktree add -q --detach "$src" "$RELEASE_0_2_0"
fi
build 020 "$src"
git -C "$ROOT" worktree remove --force "$src"
# the release's own install script (frozen as cargo pgrx install wrote it from that commit)
installed=$("${config[020]}" --sharedir)/extension/pg_labels--0.2.0.sql
if cmp -s "$installed" "$ROOT/sql/released/pg_labels--0.2.0.sql"; then
    echo "0.2.0's install script as built: the frozen sql/released/pg_labels--0.2.0.sql"
elif cmp -s <(sort "$installed") <(sort "$ROOT/sql/released/pg_labels--0.2.0.sql"); then
    echo "0.2.0's install script as built: the frozen one's lines in another order; the frozen one installed"
else
    echo "0.2.0's install script as built differs from the frozen one (the frozen one installed):"
    diff "$ROOT/sql/released/pg_labels--0.2.0.sql" "$installed" | head -20
fi
cp "$ROOT/sql/released/pg_labels--0.2.0.sql" "$installed"

declare -A port=([020]=5481 [this]=5482)
bin() { dirname "${config[$1]}"; }
start() { # version
    local v=$1
    runuser -u postgres -- "$(bin "$v")/initdb" -D "$work/data_$v" -U postgres -A trust --no-sync \
        --encoding UTF8 --locale C.UTF-8 >/dev/null
    runuser -u postgres -- "$(bin "$v")/pg_ctl" -D "$work/data_$v" -l "$work/server_$v.log" -w \
        -o "-c listen_addresses='' -k $work -p ${port[$v]} -c fsync=off -c synchronous_commit=off -c shared_buffers=1GB -c work_mem=64MB -c max_wal_size=4GB -c max_connections=100" \
        start >/dev/null
}
stop() {
    for v in "${versions[@]}"; do
        runuser -u postgres -- "$(bin "$v")/pg_ctl" -D "$work/data_$v" -m fast stop >/dev/null 2>&1 || true
    done
    rm -rf "$work"
}
trap stop EXIT
q() { "$(bin "$1")/psql" -X -q -v ON_ERROR_STOP=1 -h "$work" -p "${port[$1]}" -U postgres -d bench_versions "${@:2}"; }

log "loading a trail of $steps steps over $nruns runs in each (in parallel)"
begin=$(date +%s)
pids=()
for v in "${versions[@]}"; do
    start "$v"
    "$(bin "$v")/psql" -X -q -h "$work" -p "${port[$v]}" -U postgres -d postgres -c "CREATE DATABASE bench_versions"
    (q "$v" -c "CREATE EXTENSION pg_labels" -f "$ROOT/bench/trail_setup.sql" \
        -v steps="$steps" -v runs="$nruns" -f "$ROOT/bench/scale_setup.sql" >"$work/load_$v.log" 2>&1 ||
        { tail -20 "$work/load_$v.log" >&2; exit 1; }) &
    pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done
echo "loaded in $(($(date +%s) - begin)) s: $(for v in "${versions[@]}"; do
    printf '%s %s steps (pg_labels %s); ' "${name[$v]}" "$(q "$v" -At -c "SELECT count(*) FROM pg_labels.steps")" \
        "$(q "$v" -At -c "SELECT extversion FROM pg_extension WHERE extname = 'pg_labels'")"; done)"
declare -A loaded
for v in "${versions[@]}"; do
    loaded[$v]=$(q "$v" -At -c "SELECT max(id) FROM pg_labels.steps")
    q "$v" -c "COPY (SELECT * FROM bench_scale_input LIMIT $ncopy) TO '$work/copy_$v.tsv'"
done

# the pgbench scripts (scale.sh's): $1 the table's schema, $2 which run (an expression)
script() {
    printf '%s\n' "\\set r $2" \
        "INSERT INTO $1.steps (run_id, kind, tool, labels, args) VALUES (md5('scale' || :r)::uuid, 'tool_called', 'tickets.read', E'{area\\x3aacme/platform}', '{\"ticket\": 42}');"
}
for t in pg_labels bench_floor; do
    script $t "random(1, $nruns)" >"$work/random_$t.sql"
    script $t ":client_id + 1" >"$work/own_$t.sql"
done
tps() { # version workload table clients round
    q "$1" -c "CHECKPOINT"
    "$(bin "$1")/pgbench" -n -M prepared -h "$work" -p "${port[$1]}" -U postgres -c "$4" -j "$4" \
        -T "$seconds" --random-seed="$5" -f "$work/${2}_$3.sql" bench_versions 2>&1 | awk '/^tps/ { print $3 }'
}
timed() { # version SQL: milliseconds
    q "$1" -c "CHECKPOINT"
    q "$1" -c '\timing on' -c "$2" | awk '/^Time:/ { print $2 }'
}
source "$ROOT/bench/stats.sh"

log "$rounds rounds: pgbench -M prepared ${seconds}s per variant, INSERT ... SELECT of $nselect, COPY of $ncopy"
workloads=(random own select copy)
declare -A value ratio rr across trigger tratio own
for round in $(seq "$rounds"); do
    vorder=(020 this)
    torder=(pg_labels bench_floor)
    if [ $((round % 2)) = 0 ]; then vorder=(this 020); torder=(bench_floor pg_labels); fi
    for w in "${workloads[@]}"; do
        declare -A this=()
        for v in "${vorder[@]}"; do
            for t in "${torder[@]}"; do
                case $w in
                    random) this[$v,$t]=$(tps "$v" random $t 1 "$round") ;;
                    own) this[$v,$t]=$(tps "$v" own $t 8 "$round") ;;
                    select) this[$v,$t]=$(timed "$v" "INSERT INTO $t.steps (run_id, kind, tool, labels, args) SELECT * FROM bench_scale_input LIMIT $nselect") ;;
                    copy) this[$v,$t]=$(timed "$v" "COPY $t.steps (run_id, kind, tool, labels, args) FROM '$work/copy_$v.tsv'") ;;
                esac
                value[$w,$v,$t]="${value[$w,$v,$t]:-} ${this[$v,$t]}"
            done
            # enforced / floor: in throughput (the floor's time over enforced time for the bulk writes)
            case $w in
                random | own) r=$(echo "${this[$v,pg_labels]} / ${this[$v,bench_floor]}" | bc -l) ;;
                *) r=$(echo "${this[$v,bench_floor]} / ${this[$v,pg_labels]}" | bc -l) ;;
            esac
            ratio[$w,$v]="${ratio[$w,$v]:-} $r"
            this[$v]=$r
        done
        rr[$w]="${rr[$w]:-} $(echo "${this[this]} / ${this[020]}" | bc -l)"
        # each table across the versions (the same server build and settings): this / 0.2.0, in
        # throughput (for the bulk writes 0.2.0's time / this one's)
        # the trigger's own time, per step: enforced's time per step less the floor's (for pgbench
        # the inverse of the throughput), this / 0.2.0: the floor's own cost left out
        for v in "${versions[@]}"; do
            case $w in
                random | own) own[$v]=$(echo "1000000 / ${this[$v,pg_labels]} - 1000000 / ${this[$v,bench_floor]}" | bc -l) ;;
                select) own[$v]=$(echo "(${this[$v,pg_labels]} - ${this[$v,bench_floor]}) * 1000 / $nselect" | bc -l) ;;
                copy) own[$v]=$(echo "(${this[$v,pg_labels]} - ${this[$v,bench_floor]}) * 1000 / $ncopy" | bc -l) ;;
            esac
            trigger[$w,$v]="${trigger[$w,$v]:-} ${own[$v]}"
        done
        tratio[$w]="${tratio[$w]:-} $(echo "${own[this]} / ${own[020]}" | bc -l)"
        for t in pg_labels bench_floor; do
            case $w in
                random | own) r=$(echo "${this[this,$t]} / ${this[020,$t]}" | bc -l) ;;
                *) r=$(echo "${this[020,$t]} / ${this[this,$t]}" | bc -l) ;;
            esac
            across[$w,$t]="${across[$w,$t]:-} $r"
        done
        printf 'round %d %-7s enforced/floor: 0.2.0 %.3f (%s / %s), this %.3f (%s / %s)\n' "$round" "$w" \
            "${this[020]}" "${this[020,pg_labels]}" "${this[020,bench_floor]}" \
            "${this[this]}" "${this[this,pg_labels]}" "${this[this,bench_floor]}"
    done
done

# the steps the benchmark wrote are linked to their run's step before them
for v in "${versions[@]}"; do
    links=$(q "$v" -At -c "
        SELECT count(*) FILTER (WHERE prev_hash IS DISTINCT FROM prev) || ' of ' || count(*)
          FROM (SELECT id, prev_hash, lag(hash) OVER (PARTITION BY run_id ORDER BY id) AS prev
                  FROM pg_labels.steps WHERE id > ${loaded[$v]} - 100 * $nruns) s
         WHERE id > ${loaded[$v]}")
    echo "${name[$v]}: steps written by the benchmark not linked to their run's step before: $links"
done

printf '\n%-34s %10s %10s %8s %15s %10s %10s %8s %15s %8s %15s\n' "trail of $steps steps, $nruns runs" \
    "0.2.0 enf" "floor" "enf/fl" "95% interval" "this enf" "floor" "enf/fl" "95% interval" "this/0.2" "95% interval"
for w in "${workloads[@]}"; do
    case $w in
        random) label="single-row inserts, 1 client (tps)" ;;
        own) label="8 clients on 8 runs (tps)" ;;
        select) label="INSERT ... SELECT of $nselect (ms)" ;;
        copy) label="COPY of $ncopy (ms)" ;;
    esac
    printf '%-34s' "$label"
    for v in "${versions[@]}"; do
        printf ' %10.0f %10.0f %8.3f %15s' "$(echo "${value[$w,$v,pg_labels]}" | median)" \
            "$(echo "${value[$w,$v,bench_floor]}" | median)" "$(echo "${ratio[$w,$v]}" | median)" \
            "$(echo "${ratio[$w,$v]}" | interval)"
    done
    printf ' %8.3f %15s\n' "$(echo "${rr[$w]}" | median)" "$(echo "${rr[$w]}" | interval)"
done
echo
for w in "${workloads[@]}"; do
    printf '%-7s this / 0.2.0, the same table: enforced %.3f (%s), floor %.3f (%s)\n' "$w" \
        "$(echo "${across[$w,pg_labels]}" | median)" "$(echo "${across[$w,pg_labels]}" | interval)" \
        "$(echo "${across[$w,bench_floor]}" | median)" "$(echo "${across[$w,bench_floor]}" | interval)"
done
echo
for w in "${workloads[@]}"; do
    printf '%-7s the trigger'"'"'s own time per step (enforced less floor, us): 0.2.0 %.1f, this %.1f; this / 0.2.0 %.3f (%s)\n' "$w" \
        "$(echo "${trigger[$w,020]}" | median)" "$(echo "${trigger[$w,this]}" | median)" \
        "$(echo "${tratio[$w]}" | median)" "$(echo "${tratio[$w]}" | interval)"
done
echo "enf/fl: enforced / floor (tps; for the bulk writes the floor's time / enforced time), median of the"
echo "rounds' ratios; this/0.2: median of the rounds' (this / 0.2.0) ratios of those ratios; 95% intervals"
echo "by the sign test over $rounds rounds. Both versions built alike (release, LTO off, 16 codegen units),"
echo "PostgreSQL 16.15, fsync off; each floor has its own version's columns and indexes."
echo "load after: $(uptime)"
