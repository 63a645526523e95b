#!/usr/bin/env bash
# The test suite, on a fresh Debian machine as root: installs what is missing, builds, starts a
# throwaway PostgreSQL cluster, and runs
#   scripts/test.sh              everything (CI runs this: .ci/run)
#   scripts/test.sh SUITE ...    one or more suites (the table SUITES below; --list lists them)
#   scripts/test.sh FILE ...     one or more pg_regress files by name (e.g. trail, scope)
#   scripts/test.sh --list       the suites, what each tests, which need a cluster and which
#                                run in the version matrix; -h or --help: this text
#   PG_MAJOR=16 scripts/test.sh  the same against another PostgreSQL (13 to 18; default 15)
# With no arguments and no PG_MAJOR, everything runs on 15, then every suite of the version
# matrix runs again on each version of PG_MATRIX (default "16 17 18"; "" for none), each built
# and installed into that version's server: the whole suite on every version but for core and
# structure, which do not depend on the server's version and run once.
# Ends with the standard "N passed, N failed" line; exits non-zero if anything failed; 2 for
# an unknown suite or file.
major_given=${PG_MAJOR:-}
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# The suites, in the order they run (a suite of pg_regress files runs its files before the
# suites below it that need a cluster; with no arguments, all files run in the order of
# tests/pg_regress/schedule):
#   suite | needs the cluster started here (cluster or -) | runs again on each version of the
#   matrix (matrix or -) | what it tests | what it runs: "regress: FILE ..." (pg_regress files,
#   tests/pg_regress/sql/FILE.sql, each in a database of its own) or a shell command, whose
#   exit status is the suite's result (named as the suite) unless the command records results
#   of its own (result NAME STATUS) or says why it is skipped (skip WHY).
SUITES=$(cat <<'TABLE'
core        | -       | -      | unit and property tests (and the offline proof verifier)             | cargo test -p pg_labels_core -p pg_labels_verify --release
structure   | -       | -      | layers and module graph (every tests/structure/*.py), cargo fmt --check | suite_structure
pgtest      | -       | matrix | the #[pg_test]s, in a cluster of cargo pgrx test                     | suite_pgtest
types       | cluster | matrix | the types: scope, label sets, their GIN index, robustness, the catalog | regress: scope labelset labelset_gin robustness catalog
platform    | cluster | matrix | the trail: seals, refused writes, approvals, write paths, the chain   | regress: trail sealed refused_writes approvals write_paths bulk bulk_random search_path listeners chain chain_pages
sharing     | cluster | matrix | context shared by reference, crossings                               | regress: sharing
publication | cluster | matrix | the publication check of agent versions                              | regress: publication
rls         | cluster | matrix | row-level security by scope, the analysts' three queries, provenance | regress: rls analyst_queries provenance citus_functions
security    | cluster | matrix | hostile triggers, hardening, attacks, oracles, scoped roles          | regress: hostile_triggers hardening attacks oracles scoped_roles
docs        | cluster | matrix | every SQL and shell block of README.md and docs/, and demo/, as annotated | PSQL="$PGBIN/psql" python3 "$ROOT/tests/docs/run.py" "$ROOT" ${DOCS_ACCEPT:+--accept}
isolation   | cluster | matrix | concurrent sessions (pg_isolation_regress)                           | run_driver isolation/pg_isolation_regress isolation pg_labels_isolation --schedule="$ROOT/tests/isolation/schedule"
concurrency | cluster | matrix | a storm of writers (pgbench), commit order checked                   | "$ROOT/tests/concurrency/run.sh"
dump        | cluster | matrix | pg_dump keeps the trail                                              | "$ROOT/tests/dump/run.sh"
upgrade     | cluster | matrix | ALTER EXTENSION UPDATE from every released version                   | "$ROOT/tests/upgrade/run.sh"
client      | cluster | matrix | the typed Rust client (client/) against the server                   | "$ROOT/tests/client/run.sh"
python      | cluster | matrix | the Python package (python/) against the server                      | "$ROOT/tests/python/run.sh"
mcp         | cluster | matrix | the MCP gateway (pg-labels-mcp) between the MCP client and the reference servers | "$ROOT/tests/mcp/run.sh"
console     | cluster | -      | the web console (console/) against its own cluster, in headless Chromium | PGBIN=$PGBIN "$ROOT/tests/console/run.sh"
package     | cluster | matrix | the binary package installs into a clean server of the same PostgreSQL | "$ROOT/tests/package/run.sh"
fuzz        | cluster | matrix | random queries (sqlsmith) as an ordinary role                        | SERVER_LOG="$CLUSTER_DIR/server.log" "$ROOT/tests/fuzz/run.sh"
citus       | cluster | -      | Citus: a coordinator and two workers (then a third), the barrier on a distributed trail | suite_citus
TABLE
)

# every tests/structure/*.py (but for modules of their own, _*.py), then cargo fmt --check:
# two results, "structure" (naming the scripts that failed) and "cargo fmt"
suite_structure() {
    local script failing=()
    for script in "$ROOT"/tests/structure/*.py; do
        [[ ${script##*/} == _* ]] && continue
        log "structure: ${script#"$ROOT"/}"
        python3 "$script" || failing+=("${script##*/}")
    done
    if [ ${#failing[@]} = 0 ]; then result structure 0; else result "structure (${failing[*]})" 1; fi
    log "structure: cargo fmt --check"
    cargo fmt --all -- --check
    result "cargo fmt" $?
}

suite_pgtest() {
    local data=/tmp/pg_labels_pgtest status
    rm -rf "$data"
    cargo pgrx test "pg$PG_MAJOR" --runas postgres --pgdata "$data"
    status=$?
    rm -rf "$data"
    return $status
}

suite_citus() {
    if [ "$PG_MAJOR" = 15 ]; then
        PGBIN=$PGBIN "$ROOT/tests/citus/run.sh"
    else
        skip "Citus: the vendored Citus 13.2.2 is built for PostgreSQL 15 here; skipped on $PG_MAJOR"
    fi
}

# The table read: ALL_SUITES in order, and each suite's columns.
ALL_SUITES=()
MATRIX_SUITES=()
declare -A CLUSTER WHAT RUN REGRESS
trim() { local s=$1; s=${s#"${s%%[![:space:]]*}"}; printf '%s' "${s%"${s##*[![:space:]]}"}"; }
while IFS='|' read -r name cluster matrix what run; do
    name=$(trim "$name")
    [ -n "$name" ] || continue
    ALL_SUITES+=("$name")
    CLUSTER[$name]=$(trim "$cluster")
    [ "$(trim "$matrix")" = matrix ] && MATRIX_SUITES+=("$name")
    WHAT[$name]=$(trim "$what")
    run=$(trim "$run")
    if [[ $run == regress:* ]]; then
        REGRESS[$name]=$(trim "${run#regress:}")
    else
        RUN[$name]=$run
    fi
done <<<"$SUITES"
unset name cluster matrix what run

case ${1:-} in
    --list)
        printf '%-12s %-8s %-7s %s
' suite cluster matrix "what it tests"
        for s in "${ALL_SUITES[@]}"; do
            printf '%-12s %-8s %-7s %s
' "$s" "${CLUSTER[$s]}" \
                "$([[ " ${MATRIX_SUITES[*]} " == *" $s "* ]] && echo matrix || echo -)" "${WHAT[$s]}"
            [ -z "${REGRESS[$s]:-}" ] || printf '%29s pg_regress: %s\n' "" "${REGRESS[$s]}"
        done
        exit 0 ;;
    -h|--help)
        sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"
        exit 0 ;;
esac

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

# Run a suite of commands (not pg_regress files): log what it tests, run it, record its status
# under its name (unless it recorded results of its own or was skipped).
skip() { log "$*"; suite_skipped=1; }
run_suite() {
    local counted=$((passed + failed)) status
    log "$1: ${WHAT[$1]}"
    suite_skipped=
    set +e; eval "${RUN[$1]}"; status=$?; set -e
    [ -n "$suite_skipped" ] || [ $((passed + failed)) != "$counted" ] || result "$1" "$status"
}

# The suites that need no cluster, first.
needs_cluster=0
for s in "${ALL_SUITES[@]}"; do
    wants "$s" || continue
    if [ "${CLUSTER[$s]}" = cluster ]; then
        needs_cluster=1
    elif [ -n "${RUN[$s]:-}" ]; then
        run_suite "$s"
    fi
done
[ ${#files[@]} -gt 0 ] && needs_cluster=1
[ $needs_cluster = 0 ] && { summary; exit $((failed > 0)); }

# Build and install with the README's install steps, run as written (tests/docs/run.py
# --install), so that the suite tests what a user's install makes; with the release profile's
# fat LTO off (two cores: minutes), as the ci profile does. This also replaces the debug build
# cargo pgrx test leaves installed. The README's steps name Debian's PostgreSQL 15: for another
# version the same build is installed into that server.
export CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 CARGO_PROFILE_RELEASE_INCREMENTAL=true
if [ -n "${PG_LABELS_SKIP_INSTALL:-}" ]; then
    # a developer's shortcut (several worktrees, one server): test the build installed already
    log "PG_LABELS_SKIP_INSTALL: testing the pg_labels installed in $($PG_CONFIG --pkglibdir)"
elif [ "$PG_MAJOR" = 15 ]; then
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

# The other suites that need the cluster, in the table's order.
for s in "${ALL_SUITES[@]}"; do
    if wants "$s" && [ "${CLUSTER[$s]}" = cluster ] && [ -n "${RUN[$s]:-}" ]; then
        run_suite "$s"
    fi
done

if wants security || wants fuzz || [[ " ${files[*]} " == *" hostile_triggers "* ]]; then
    log "the server log shows no crash"
    if grep -E "terminated by signal|server process .* was terminated" "$CLUSTER_DIR/server.log"; then
        result "no crash in the server log" 1
    else
        result "no crash in the server log" 0
    fi
fi

# The version matrix: its suites (the table's) on each other version, in a run of their own.
if [ $# -eq 0 ] && [ -z "$major_given" ]; then
    stop_cluster
    echo "PostgreSQL $PG_MAJOR: everything took $SECONDS s (set-up and builds included)"
    for v in ${PG_MATRIX-16 17 18}; do
        log "PostgreSQL $v: the cluster suites"
        started=$SECONDS
        line=$(PG_MAJOR=$v "$0" "${MATRIX_SUITES[@]}" 2>&1 |
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
