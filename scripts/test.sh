#!/usr/bin/env bash
# The test suite, on a fresh Debian machine as root: installs what is missing, builds, starts a
# throwaway PostgreSQL cluster, and runs
#   scripts/test.sh              everything (CI runs this: .ci/run)
#   scripts/test.sh SUITE ...    one or more suites: core, pgtest, structure, types, platform,
#                                sharing, publication, rls, docs, security, isolation,
#                                concurrency, dump, upgrade, package, client, python, mcp,
#                                console, fuzz, citus
#   scripts/test.sh FILE ...     one or more pg_regress files by name (e.g. trail, scope)
#   PG_MAJOR=16 scripts/test.sh  the same against another PostgreSQL (13 to 18; default 15)
# With no arguments and no PG_MAJOR, everything runs on 15, then every suite that needs a
# cluster runs again on each version of PG_MATRIX (default "16 17 18"; "" for none), each built
# and installed into that version's server: the whole suite on every version but for core and
# structure, which do not depend on the server's version and run once.
# Ends with the standard "N passed, N failed" line; exits non-zero if anything failed.
major_given=${PG_MAJOR:-}
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# pg_regress files by suite (tests/pg_regress/sql/<name>.sql; the schedule lists them all).
declare -A REGRESS=(
    [types]="scope labelset labelset_gin robustness catalog"
    [platform]="trail sealed refused_writes approvals write_paths bulk search_path listeners chain chain_pages"
    [sharing]="sharing"
    [publication]="publication"
    [rls]="rls analyst_queries provenance citus_functions"
    [security]="hostile_triggers hardening attacks oracles scoped_roles"
)
ALL_SUITES=(core pgtest structure types platform sharing publication rls security docs isolation concurrency dump upgrade package client python mcp console fuzz citus)

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
    log "core: unit and property tests (and the offline proof verifier)"
    set +e; cargo test -p pg_labels_core -p pg_labels_verify --release; result core $?; set -e
fi

if wants structure; then
    log "structure: layers and module graph"
    set +e; python3 "$ROOT/tests/structure/check.py"; result structure $?; set -e
    log "structure: cargo fmt --check"
    set +e; cargo fmt --all -- --check; result "cargo fmt" $?; set -e
fi

if wants pgtest; then
    log "#[pg_test]s"
    PGTEST_DATA=/tmp/pg_labels_pgtest
    rm -rf "$PGTEST_DATA"
    set +e; cargo pgrx test "pg$PG_MAJOR" --runas postgres --pgdata "$PGTEST_DATA"; result pgtest $?; set -e
    rm -rf "$PGTEST_DATA"
fi

needs_cluster=0
for s in "${suites[@]}"; do
    case $s in core|structure|pgtest) ;; *) needs_cluster=1 ;; esac
done
[ ${#files[@]} -gt 0 ] && needs_cluster=1
[ $needs_cluster = 0 ] && { summary; exit $((failed > 0)); }

# Build and install with the README's install steps, run as written (tests/docs/run.py
# --install), so that the suite tests what a user's install makes; with the release profile's
# fat LTO off (two cores: minutes), as the ci profile does. This also replaces the debug build
# cargo pgrx test leaves installed. The README's steps name Debian's PostgreSQL 15: for another
# version the same build is installed into that server.
export CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 CARGO_PROFILE_RELEASE_INCREMENTAL=true
if [ "$PG_MAJOR" = 15 ]; then
    log "building and installing pg_labels with the README's install steps (release, LTO off)"
    install_log=$(mktemp /tmp/pg_labels_install.XXXXXX)
    if ! python3 "$ROOT/tests/docs/run.py" "$ROOT" --install >"$install_log" 2>&1; then
        cat "$install_log" >&2
        echo "the README's install steps failed" >&2
        exit 1
    fi
    grep -vE '^\s+(Compiling|Checking|Fresh)\b' "$install_log" | tail -5
    rm -f "$install_log"
else
    install_extension release
fi
PG_EXTRA_OPTS="-c track_commit_timestamp=on" start_cluster
export PG_LABELS_SCRATCH=$CLUSTER_DIR
# a second connection for pg_regress files that need one (\! "$PG_LABELS_PSQL" ...)
export PG_LABELS_PSQL=$PGBIN/psql

# Run a pg_regress-style driver: $1 the driver (under pgxs/src/test), $2 the directory under
# tests/ with its sql or specs and expected outputs, $3 the database, then the tests (or
# --schedule=...).
run_driver() {
    local driver=$1 dir=$2 db=$3 out
    shift 3
    out=$(mktemp -d "/tmp/pg_labels_$dir.XXXXXX")
    mkdir -p "$out/results"
    if "$($PG_CONFIG --pkglibdir)/pgxs/src/test/$driver" \
            --bindir="$PGBIN" --host="$PGHOST" --port="$PGPORT" --user=postgres \
            --dbname="$db" --load-extension=pg_labels \
            --inputdir="$ROOT/tests/$dir" --outputdir="$out" "$@"; then
        rm -rf "$out"
        return 0
    fi
    cat "$out/regression.diffs" >&2 || true
    echo "$dir failed; outputs in $out" >&2
    return 1
}

# Each pg_regress file runs in a database of its own (with the extension fresh), so a file's
# output does not depend on which files ran before it: a suite or one file reproduces the full
# run. The schedule lists them all, in order.
regress=()
if [ $# -eq 0 ]; then
    regress=($(awk '$1 == "test:" { for (i = 2; i <= NF; i++) print $i }' "$ROOT/tests/pg_regress/schedule"))
else
    for s in "${suites[@]}"; do
        [ -n "${REGRESS[$s]:-}" ] && regress+=(${REGRESS[$s]})
    done
    regress+=("${files[@]}")
fi
# the offline verifier of inclusion proofs, which pg_regress chain runs on a proof
if [[ " ${regress[*]} " == *" chain "* ]]; then
    (cd "$ROOT" && cargo build --release -q -p pg_labels_verify)
    export PG_LABELS_VERIFY="$ROOT/target/release/pg_labels_verify"
fi
for t in "${regress[@]}"; do
    log "pg_regress: $t"
    set +e; run_driver regress/pg_regress pg_regress "pg_labels_$t" "$t"; result "pg_regress $t" $?; set -e
done

if wants docs; then
    log "docs: every SQL and shell block of README.md and docs/, and demo/, as annotated"
    set +e; PSQL="$PGBIN/psql" python3 "$ROOT/tests/docs/run.py" "$ROOT" ${DOCS_ACCEPT:+--accept}; result docs $?; set -e
fi

if wants isolation; then
    log "isolation (concurrent sessions)"
    set +e; run_driver isolation/pg_isolation_regress isolation pg_labels_isolation --schedule="$ROOT/tests/isolation/schedule"; result isolation $?; set -e
fi

if wants concurrency; then
    log "concurrency storm (pgbench, commit order checked)"
    set +e; "$ROOT/tests/concurrency/run.sh"; result concurrency $?; set -e
fi

if wants dump; then
    log "pg_dump keeps the trail"
    set +e; "$ROOT/tests/dump/run.sh"; result dump $?; set -e
fi

if wants upgrade; then
    log "ALTER EXTENSION UPDATE from every released version"
    set +e; "$ROOT/tests/upgrade/run.sh"; result upgrade $?; set -e
fi

if wants client; then
    log "the typed Rust client (client/) against the server"
    set +e; "$ROOT/tests/client/run.sh"; result client $?; set -e
fi

if wants python; then
    log "the Python package (python/) against the server"
    set +e; "$ROOT/tests/python/run.sh"; result python $?; set -e
fi

if wants mcp; then
    log "the MCP gateway (pg-labels-mcp) between the MCP client and the reference servers"
    set +e; "$ROOT/tests/mcp/run.sh"; result mcp $?; set -e
fi

if wants console; then
    log "the web console (console/) against its own cluster, in headless Chromium"
    set +e; PGBIN=$PGBIN "$ROOT/tests/console/run.sh"; result console $?; set -e
fi

if wants package; then
    log "the binary package installs into a clean server of PostgreSQL $PG_MAJOR"
    set +e; "$ROOT/tests/package/run.sh"; result package $?; set -e
fi

if wants fuzz; then
    log "random queries (sqlsmith) as an ordinary role"
    set +e; SERVER_LOG="$CLUSTER_DIR/server.log" "$ROOT/tests/fuzz/run.sh"; result fuzz $?; set -e
fi

if wants citus; then
    if [ "$PG_MAJOR" = 15 ]; then
        log "Citus: a coordinator and two workers (then a third), the barrier on a distributed trail"
        set +e; PGBIN=$PGBIN "$ROOT/tests/citus/run.sh"; result citus $?; set -e
    else
        log "Citus: the vendored Citus 13.2.2 is built for PostgreSQL 15 here; skipped on $PG_MAJOR"
    fi
fi

if wants security || wants fuzz || [[ " ${files[*]} " == *" hostile_triggers "* ]]; then
    log "the server log shows no crash"
    if grep -E "terminated by signal|server process .* was terminated" "$CLUSTER_DIR/server.log"; then
        result "no crash in the server log" 1
    else
        result "no crash in the server log" 0
    fi
fi

# The version matrix: the cluster suites on each other version, in a run of their own.
if [ $# -eq 0 ] && [ -z "$major_given" ]; then
    stop_cluster
    echo "PostgreSQL $PG_MAJOR: everything took $SECONDS s (set-up and builds included)"
    for v in ${PG_MATRIX-16 17 18}; do
        log "PostgreSQL $v: the cluster suites"
        started=$SECONDS
        line=$(PG_MAJOR=$v "$0" pgtest types platform sharing publication rls security docs isolation concurrency dump upgrade package client python mcp fuzz 2>&1 |
            tee "/tmp/pg_labels_test_pg$v.log" | tail -1) || true
        echo "PostgreSQL $v: $line in $((SECONDS - started)) s, its build included (log: /tmp/pg_labels_test_pg$v.log)"
        if [[ "$line" =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]]; then
            passed=$((passed + BASH_REMATCH[1]))
            failed=$((failed + BASH_REMATCH[2]))
            [ "${BASH_REMATCH[2]}" = 0 ] || failures+=("PostgreSQL $v: see /tmp/pg_labels_test_pg$v.log")
        else
            result "PostgreSQL $v" 1
        fi
    done
fi

summary
exit $((failed > 0))
