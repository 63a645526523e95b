#!/usr/bin/env bash
# The Python package (python/, distribution pg-labels) against a running server: ruff, mypy
# --strict, and pytest (values against the server's parser, drivers, refusals, the platform's
# calls). Needs PGHOST/PGPORT/PGUSER (a superuser) of a cluster where pg_labels is installed
# (this script does not install it); PGBIN names the directory of psql when it is not on PATH.
# Makes a fresh database pg_labels_python there and drops it at the end; the tests make their
# own roles (labels_py_*) and drop them. The virtual environment is kept in $PY_VENV
# (default /tmp/pg_labels_python_venv) and reused while python/requirements-test.txt is the same.
set -euo pipefail

cd "$(dirname "$0")/../.."
ROOT=$PWD
: "${PGHOST:?set PGHOST (host or socket directory) of a cluster with pg_labels installed}"
: "${PGPORT:?set PGPORT}"
: "${PGUSER:?set PGUSER}"
export PGHOST PGPORT PGUSER

source "$ROOT/tests/python/venv.sh"
# The package itself, afresh every run (not editable: the tests import what pip installed).
"$venv/bin/pip" install -q --disable-pip-version-check --no-build-isolation --force-reinstall \
    --no-deps "$ROOT/python[asyncpg,sqlalchemy,openai-agents,langgraph,otel]"
"$venv/bin/pip" check -q >/dev/null 2>&1 || "$venv/bin/pip" check
# ... and docs/python.md's install lines, as written, from the repository's root with the
# environment's pip (the extras it names resolve; what they need is installed above)
echo "python: docs/python.md's install lines"
(cd "$ROOT" && PATH="$venv/bin:$PATH" bash -euo pipefail -c "$(awk '/^## Install/ { on = 1 } on && /^```sh/ { block = 1; next }
    block && /^```/ { exit } block' docs/python.md)") >/dev/null

lint_package python "$ROOT/tests/python"

db=pg_labels_python
# (and a second database without the extension, for ExtensionMissing)
fresh_databases $db ${db}_bare
"${PGBIN:+$PGBIN/}psql" -X -q -v ON_ERROR_STOP=1 -d "$db" -c "CREATE EXTENSION pg_labels"

echo "python: pytest"
(cd "$ROOT/tests/python" &&
    PGDATABASE=$db PG_LABELS_BARE_DB=${db}_bare "$venv/bin/python" -m pytest -q -p no:cacheprovider \
        ${PYTEST_ARGS:-})

admin -c "DROP DATABASE $db" -c "DROP DATABASE ${db}_bare"
trap - EXIT
echo "python: ok"
