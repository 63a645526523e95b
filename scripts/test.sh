#!/usr/bin/env bash
# The test suite, on a fresh Debian machine as root: installs what is missing, builds, starts a
# throwaway PostgreSQL cluster, and runs
#   scripts/test.sh              everything (CI runs this: .ci/run)
#   scripts/test.sh SUITE ...    one or more suites: core, pgtest, structure, types, platform,
#                                sharing, publication, rls, docs, security, isolation,
#                                concurrency, dump
#   scripts/test.sh FILE ...     one or more pg_regress files by name (e.g. trail, scope)
# Ends with the standard "N passed, N failed" line; exits non-zero if anything failed.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# pg_regress files by suite (tests/pg_regress/sql/<name>.sql; the schedule lists them all).
declare -A REGRESS=(
    [types]="scope labelset labelset_gin robustness"
    [platform]="trail sealed approvals write_paths search_path listeners"
    [sharing]="sharing"
    [publication]="publication"
    [rls]="rls provenance"
    [security]="hostile_triggers hardening"
    [docs]="docs"
)
ALL_SUITES=(core pgtest structure types platform sharing publication rls security docs isolation concurrency dump)

passed=0
failed=0
failures=()
result() { # $1 name, $2 status
    if [ "$2" = 0 ]; then passed=$((passed + 1)); else failed=$((failed + 1)); failures+=("$1"); fi
}

summary() {
    log "summary"
    [ ${#failures[@]} -gt 0 ] && printf 'failed: %s\n' "${failures[@]}"
    echo "$passed passed, $failed failed"
}

# What to run: suites, and pg_regress files named directly.
suites=()
files=()
if [ $# -eq 0 ]; then
    suites=("${ALL_SUITES[@]}")
else
    for a in "$@"; do
        if [[ " ${ALL_SUITES[*]} " == *" $a "* ]]; then
            suites+=("$a")
        elif [ -f "$ROOT/tests/pg_regress/sql/$a.sql" ]; then
            files+=("$a")
        else
            echo "unknown suite or test file: $a" >&2
            exit 2
        fi
    done
fi
wants() { [[ " ${suites[*]} " == *" $1 "* ]]; }

setup
cd "$ROOT"

if wants core; then
    log "core: unit and property tests"
    set +e; cargo test -p pg_labels_core --release; result core $?; set -e
fi

if wants structure; then
    log "structure: layers and module graph"
    set +e; python3 "$ROOT/tests/structure/check.py"; result structure $?; set -e
fi

if wants pgtest; then
    log "#[pg_test]s"
    PGTEST_DATA=/tmp/pg_labels_pgtest
    rm -rf "$PGTEST_DATA"
    set +e; cargo pgrx test pg15 --runas postgres --pgdata "$PGTEST_DATA"; result pgtest $?; set -e
    rm -rf "$PGTEST_DATA"
fi

needs_cluster=0
for s in "${suites[@]}"; do
    case $s in core|structure|pgtest) ;; *) needs_cluster=1 ;; esac
done
[ ${#files[@]} -gt 0 ] && needs_cluster=1
[ $needs_cluster = 0 ] && { summary; exit $((failed > 0)); }

# cargo pgrx test leaves its debug build installed: put the tested build in its place.
install_extension ci
PG_EXTRA_OPTS="-c track_commit_timestamp=on" start_cluster
export PG_LABELS_SCRATCH=$CLUSTER_DIR

# Run a pg_regress-style driver: $1 the driver (under pgxs/src/test), $2 the directory under
# tests/ with its sql or specs and expected outputs, then the tests (or --schedule=...).
run_driver() {
    local driver=$1 dir=$2 out
    shift 2
    out=$(mktemp -d "/tmp/pg_labels_$dir.XXXXXX")
    mkdir -p "$out/results"
    if "$($PG_CONFIG --pkglibdir)/pgxs/src/test/$driver" \
            --bindir="$PGBIN" --host="$PGHOST" --port="$PGPORT" --user=postgres \
            --dbname="pg_labels_$dir" --load-extension=pg_labels \
            --inputdir="$ROOT/tests/$dir" --outputdir="$out" "$@"; then
        rm -rf "$out"
        return 0
    fi
    cat "$out/regression.diffs" >&2 || true
    echo "$dir failed; outputs in $out" >&2
    return 1
}

# The SQL blocks of the README and demo/, extracted into a pg_regress file (never copied).
prepare_docs() {
    python3 "$ROOT/tests/docs/extract.py" "$ROOT" >"$ROOT/tests/pg_regress/sql/docs.sql"
}

regress=()
for s in "${suites[@]}"; do
    [ -n "${REGRESS[$s]:-}" ] && regress+=(${REGRESS[$s]})
done
regress+=("${files[@]}")
if [ ${#regress[@]} -gt 0 ]; then
    [[ " ${regress[*]} " == *" docs "* ]] && prepare_docs
    log "pg_regress: ${regress[*]}"
    if [ $# -eq 0 ]; then
        set +e; run_driver regress/pg_regress pg_regress --schedule="$ROOT/tests/pg_regress/schedule"; st=$?; set -e
    else
        set +e; run_driver regress/pg_regress pg_regress "${regress[@]}"; st=$?; set -e
    fi
    result "pg_regress" $st
fi

if wants isolation; then
    log "isolation (concurrent sessions)"
    set +e; run_driver isolation/pg_isolation_regress isolation --schedule="$ROOT/tests/isolation/schedule"; result isolation $?; set -e
fi

if wants concurrency; then
    log "concurrency storm (pgbench, commit order checked)"
    set +e; "$ROOT/tests/concurrency/run.sh"; result concurrency $?; set -e
fi

if wants dump; then
    log "pg_dump keeps the trail"
    set +e; "$ROOT/tests/dump/run.sh"; result dump $?; set -e
fi

if wants security || [[ " ${files[*]} " == *" hostile_triggers "* ]]; then
    log "the server log shows no crash"
    if grep -E "terminated by signal|server process .* was terminated" "$CLUSTER_DIR/server.log"; then
        result "no crash in the server log" 1
    else
        result "no crash in the server log" 0
    fi
fi

summary
exit $((failed > 0))
