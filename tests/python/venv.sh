# The test environment of the Python package, shared by tests/python and tests/mcp: sourced
# with ROOT set; sets `venv` and defines what the suites share (at the end). Python 3.11 or
# later as python3 (the package runs on 3.10 and later; its pinned test tools need 3.11), its
# venv module (Debian ships it apart: python3-venv, installed when run as root), and a virtual
# environment in $PY_VENV (default /tmp/pg_labels_python_venv) with
# python/requirements-test.txt, made again only when that file changes. Each suite then
# installs the package itself with the extras it tests.
python3 -c 'import sys; assert sys.version_info >= (3, 11), sys.version' ||
    { echo "the Python tests need Python 3.11 or later as python3" >&2; exit 1; }
if ! python3 -c 'import ensurepip, venv' 2>/dev/null; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
    else
        echo "the Python tests need python3's venv module (Debian: apt-get install python3-venv)" >&2
        exit 1
    fi
fi
venv=${PY_VENV:-/tmp/pg_labels_python_venv}
requirements=$ROOT/python/requirements-test.txt
stamp=$(sha256sum "$requirements" | cut -d' ' -f1)
if [ "$(cat "$venv/.requirements" 2>/dev/null || true)" != "$stamp" ]; then
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q --disable-pip-version-check -r "$requirements"
    echo "$stamp" > "$venv/.requirements"
fi

# What the suites that source this file share: ruff and mypy over the package and a suite's
# tests ($1 the suite's name, $2 its tests' directory), and the package's tools ...
lint_package() {
    echo "$1: ruff"
    "$venv/bin/ruff" check --config "$ROOT/python/pyproject.toml" "$ROOT/python/src" \
        "$ROOT/python/tools" "$2"
    echo "$1: mypy --strict"
    (cd "$ROOT/python" && "$venv/bin/mypy" --strict src/pg_labels tools)
}
# ... psql as the superuser in database postgres ...
admin() { PGOPTIONS="-c client_min_messages=warning" "${PGBIN:+$PGBIN/}psql" -X -q -v ON_ERROR_STOP=1 -d postgres "$@"; }
# ... and fresh databases (their names), dropped on the way out too should a step fail (a suite
# that ends well drops them itself, then clears the trap).
fresh_databases() {
    local d drop=()
    for d in "$@"; do
        admin -c "DROP DATABASE IF EXISTS $d" -c "CREATE DATABASE $d"
        drop+=(-c "DROP DATABASE IF EXISTS $d WITH (FORCE)")
    done
    # shellcheck disable=SC2064 # the names now, not at exit
    trap "admin ${drop[*]@Q} >/dev/null 2>&1 || true" EXIT
}
