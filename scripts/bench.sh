#!/usr/bin/env bash
# Benchmarks, run on demand (not in CI): builds the release build, starts a throwaway cluster
# and prints, from one run, ratios of pg_labels against PostgreSQL's own types and against a
# plain table and a PL/pgSQL implementation of the same rules, and the publication check's time.
# This script sets up and dispatches: each benchmark lives in bench/, as bench/NAME.sql (run in
# a fresh database of its own), bench/NAME.sh (a function bench_NAME, sourced and called here,
# in this cluster) or a driver of its own (bench/instructions.sh, flood.sh, shm.sh).
#   scripts/bench.sh            all: types, trail, grants, publication, lineage, bigrun
#   scripts/bench.sh --help     this text
#   scripts/bench.sh types      the types (bench/types.sql)
#   scripts/bench.sh trail      trail inserts with pgbench (bench/trail.sh, trail_*.sql), then
#                               verify_all() over that trail (steps/s); TRAIL_ROUNDS,
#                               TRAIL_SECONDS; TRAIL_STORAGE=1 adds the chain's hashes stored
#                               without the chain (its cost split into storing and computing)
#   scripts/bench.sh grants     single-row steps/s of a writer bound to its area by its grants
#                               against a writer granted * (issue 46; bench/grants.sh): pgbench
#                               -M prepared, 1 client, GRANTS_ROUNDS rounds (7) of
#                               GRANTS_SECONDS (10) each, the order reversed every other round;
#                               the rounds' ratios, median and 95% interval
#   scripts/bench.sh publication  the publication check on 10,000-step declarations
#                               (bench/publication.sql)
#   scripts/bench.sh lineage    lineage over a 10,000-run chain (bench/lineage.sql)
#   scripts/bench.sh bigrun     a run carrying 100,000 labels against one carrying one
#                               (bench/bigrun.sh)
#   scripts/bench.sh instructions  instructions per trail insert, counted by callgrind (a
#                               repeatable figure on a noisy machine; not part of "all"), with
#                               and without the trail's hash chain (bench/instructions.sh)
#   scripts/bench.sh copy_instructions  instructions per COPY row and per single-row insert
#                               into the trail, the run floor and the floor, counted by
#                               callgrind, with the trigger's share and SHA-256's
#                               (bench/copy_instructions.sh; not part of "all")
#   scripts/bench.sh citus      step inserts through a Citus coordinator and two workers next
#                               to one node (bench/citus.sh; not part of "all")
#   scripts/bench.sh flood      a flood of refusals from 16 sessions against other roles'
#                               allowed writes, this tree against release 0.3.0 (a worker per
#                               refusing backend), each built into its own PostgreSQL 16, and
#                               what one worker writes a second (bench/flood.sh; FLOOD_ROUNDS,
#                               FLOOD_SECONDS, FLOOD_CLIENTS; not part of "all": ~25 minutes
#                               with the builds)
#   scripts/bench.sh versions   release 0.2.0 against this tree in one run (issue 50, goal 5;
#                               bench/versions.sh): each built alike into its own PostgreSQL 16,
#                               a trail of VERSIONS_STEPS steps (2,000,000) over 10,000 runs in
#                               each; single-row inserts (1 client; 8 clients on 8 runs),
#                               INSERT ... SELECT and COPY against each version's floor, in
#                               VERSIONS_ROUNDS rounds (7) of VERSIONS_SECONDS (10); each
#                               version's enforced / floor and the rounds' (this / 0.2.0), medians
#                               and 95% intervals (not part of "all": ~50 minutes with the builds)
#   scripts/bench.sh shm        /dev/shm with 20 idle sessions that refused once, 0.3.0 against
#                               this tree, on the servers "flood" built (bench/shm.sh)
#   scripts/bench.sh purge      removing a month of a 10M-step trail: purge() against DELETE
#                               (bench/purge.sh, purge.sql; PURGE_STEPS=n for another size;
#                               not part of "all": ~10 minutes)
#   scripts/bench.sh readers    what the index-page reader (src/pg/btree.rs) pays for: single-row
#                               inserts into a trail of READERS_STEPS steps (10,000,000) over
#                               10,000 runs, this build against one whose runs' last steps are
#                               found by PostgreSQL's index scan (feature bench_api_probe), the
#                               two libraries swapped with a restart between rounds
#                               (bench/readers.sh; READERS_ROUNDS, 5; READERS_SECONDS, 20; not
#                               part of "all")
#   scripts/bench.sh scale      the trail at scale (issues 18, 38; bench/scale.sh): a trail of
#                               SCALE_STEPS steps (default 10,000,000) over SCALE_RUNS runs
#                               (10,000), and the
#                               same rows in the bare table, in the floor (the bare table
#                               partitioned as the trail, with a C trigger that does almost
#                               nothing) and in the run floor (the floor's trigger also locking
#                               the run and reading its row and last step, bench/run_floor.c,
#                               built here with PGXS); then every write into all four, in
#                               SCALE_ROUNDS rounds (7) with the order reversed every other
#                               round, each ratio
#                               reported with its rounds' median and 95% interval: single-row
#                               inserts and their WAL (over SCALE_WAL_STEPS steps, 40,000, the
#                               same for each), 8 clients on one run and on 8 runs, bursts of 8
#                               parallel calls on one run (SCALE_BURSTS a round, 500;
#                               bench/burst.py), COPY (SCALE_COPY rows, 1,000,000) and
#                               INSERT ... SELECT (100,000) in SCALE_BULK_ROUNDS rounds (6), and
#                               the analysts' queries against the superuser's (not part of "all";
#                               about 40 minutes)
#   scripts/bench.sh approvals  grant to resume (issue 49; bench/approvals.sh): from a person's
#                               grant to the paused tool call starting again, median and p95
#                               of APPROVALS_N (200), in Python (the OpenAI Agents SDK) and
#                               through the MCP gateway (not part of "all")
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
what=${1:-all}

# ("all" is these, in this order)
ALL=(types trail grants publication lineage bigrun)
case $what in
    all | types | trail | grants | publication | lineage | bigrun | instructions | copy_instructions | citus | purge | scale | readers | approvals) ;;
    # (its own servers and builds: none of the cluster below)
    flood)
        setup
        ROOT=$ROOT exec "$ROOT/bench/flood.sh" ;;
    shm) ROOT=$ROOT exec "$ROOT/bench/shm.sh" ;;
    versions) ROOT=$ROOT exec "$ROOT/bench/versions.sh" ;;
    -h | --help)
        sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"
        exit 0 ;;
    *)
        echo "unknown benchmark: $what (scripts/bench.sh --help)" >&2
        exit 2 ;;
esac

setup
install_extension release
SERVER_RUST_BACKTRACE=0 PG_EXTRA_OPTS="-c shared_buffers=1GB -c work_mem=64MB -c max_wal_size=4GB -c synchronous_commit=off" start_cluster

source "$ROOT/bench/stats.sh"

# A fresh database with the extension, then one benchmark script in it: $1 name, $2 what it
# measures (for the log). The scripts are in bench/<name>.sql.
bench_in_db() {
    psql_q -c "DROP DATABASE IF EXISTS bench_$1" -c "CREATE DATABASE bench_$1"
    psql_q -d "bench_$1" -c "CREATE EXTENSION pg_labels"
    log "$1: $2"
    "$PGBIN/psql" -X -q -d "bench_$1" -f "$ROOT/bench/$1.sql"
}

benchmarks=("$what")
[ "$what" = all ] && benchmarks=("${ALL[@]}")
for b in "${benchmarks[@]}"; do
    case $b in
        types) bench_in_db types "1M rows against ltree and text[] (a few minutes)" ;;
        publication) bench_in_db publication "10,000-step declarations, checked against unchecked" ;;
        lineage)
            psql_q -c "DROP ROLE IF EXISTS bench_analyst"
            bench_in_db lineage "a 10,000-run chain"
            psql_q -d bench_lineage -c "DROP OWNED BY bench_analyst" -c "DROP ROLE bench_analyst" ;;
        instructions)
            log "instructions per trail insert (callgrind, single-user backend)"
            "$ROOT/bench/instructions.sh" "${INSTRUCTIONS_N:-2000}" ;;
        copy_instructions)
            log "instructions per COPY row (callgrind, single-user backend)"
            PGBIN=$PGBIN PG_CONFIG=$PG_CONFIG "$ROOT/bench/copy_instructions.sh" ;;
        approvals)
            log "approvals: grant to resumed tool call"
            "$ROOT/bench/approvals.sh" ;;
        # bench/<name>.sh defines bench_<name>
        trail | grants | bigrun | citus | purge | scale | readers)
            source "$ROOT/bench/$b.sh"
            "bench_$b" ;;
    esac
done
