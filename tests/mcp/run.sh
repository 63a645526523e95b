#!/usr/bin/env bash
# The MCP gateway (pg-labels-mcp, python/src/pg_labels/mcp/) between the official MCP
# Python client and the reference servers @modelcontextprotocol/server-filesystem and
# server-everything, against a running server. Needs PGHOST/PGPORT/PGUSER (a superuser) of a
# cluster where pg_labels is installed (this script does not install it) and PGBIN, the
# directory of initdb/pg_ctl/psql (one test stops and starts a cluster of its own, made with
# them in a temporary directory). Makes fresh databases pg_labels_mcp (the tests) and
# pg_labels_mcp_docs (docs/mcp.md's roles and Python client, as written) and drops them at the
# end; the tests make their own roles (labels_mcp_*) and drop them.
#
# The virtual environment is tests/python's (tests/python/venv.sh: python/requirements-test.txt,
# where mcp is pinned). The servers are installed with `npm ci` from tests/mcp/package.json and
# package-lock.json (pinned) into /tmp/pg_labels_mcp_npm.<hash of the lock file>.
set -euo pipefail

cd "$(dirname "$0")/../.."
ROOT=$PWD
: "${PGHOST:?set PGHOST (host or socket directory) of a cluster with pg_labels installed}"
: "${PGPORT:?set PGPORT}"
: "${PGUSER:?set PGUSER}"
[ "${1:-}" = --prepare ] ||
    : "${PGBIN:?set PGBIN (the directory of initdb and pg_ctl of that PostgreSQL)}"
export PGHOST PGPORT PGUSER PGBIN=${PGBIN:-}

if ! command -v npm >/dev/null || ! command -v node >/dev/null; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null
    else
        echo "mcp: the reference servers need node and npm (Node.js 18 or later)" >&2
        exit 1
    fi
fi
source "$ROOT/tests/python/venv.sh"
"$venv/bin/pip" install -q --disable-pip-version-check --no-build-isolation --force-reinstall \
    --no-deps "$ROOT/python[mcp]"
"$venv/bin/pip" check -q >/dev/null 2>&1 || "$venv/bin/pip" check
# docs/mcp.md's blocks marked <!-- run by tests/mcp/run.sh -->, as written (the Nth of them)
docs_block() {
    awk -v n="$1" '/^<!-- run by tests\/mcp\/run.sh -->$/ { seen++; on = (seen == n); next }
        on && /^```sh/ { block = 1; next } block && /^```/ { exit } block' "$ROOT/docs/mcp.md"
}
# ... its install line, from the repository's root
(cd "$ROOT" && PATH="$venv/bin:$PATH" bash -euo pipefail -c "$(docs_block 1)") >/dev/null

lock=$ROOT/tests/mcp/package-lock.json
servers=/tmp/pg_labels_mcp_npm.$(sha256sum "$lock" | cut -c1-16)
if [ ! -x "$servers/node_modules/.bin/mcp-server-everything" ]; then
    echo "mcp: npm ci (the reference servers) into $servers"
    rm -rf "$servers.tmp"
    mkdir -p "$servers.tmp"
    cp "$ROOT/tests/mcp/package.json" "$lock" "$servers.tmp/"
    (cd "$servers.tmp" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
    rm -rf "$servers"
    mv "$servers.tmp" "$servers"
fi

# `tests/mcp/run.sh --prepare`: only the environment (for bench/mcp.sh), whose paths it prints.
if [ "${1:-}" = --prepare ]; then
    echo "MCP_VENV=$venv"
    echo "MCP_SERVERS=$servers/node_modules/.bin"
    exit 0
fi

lint_package mcp "$ROOT/tests/mcp"

db=pg_labels_mcp
docs_db=pg_labels_mcp_docs
fresh_databases $db $docs_db
for d in $db $docs_db; do
    "$PGBIN/psql" -X -q -v ON_ERROR_STOP=1 -d "$d" -c "CREATE EXTENSION pg_labels"
done
# ... and its roles and grants, in a database of their own (then dropped: the tests make roles
# of their own, the same grants under names of their own, in conftest.py) ...
drop_doc_roles() {
    for role in mcp_gateway mcp_catalog; do
        "$PGBIN/psql" -X -q -d "$db" -c "DROP OWNED BY $role" -c "DROP ROLE $role" >/dev/null 2>&1 || true
    done
}
drop_doc_roles
(cd "$ROOT" && PATH="$PGBIN:$PATH" PGDATABASE=$docs_db bash -euo pipefail -c "$(docs_block 2)")
# ... where its Python client starts the gateway, as written (tests/mcp/docs_example.py)
PGDATABASE=$docs_db MCP_SERVERS=$servers/node_modules/.bin PATH="$venv/bin:$PATH" \
    "$venv/bin/python" "$ROOT/tests/mcp/docs_example.py" "$ROOT"
admin -c "DROP DATABASE $docs_db WITH (FORCE)"
drop_doc_roles

echo "mcp: pytest (the gateway with $(cd "$servers" && node -p 'const l = require("./package-lock.json").packages; ["server-filesystem", "server-everything"].map(n => n + " " + l["node_modules/@modelcontextprotocol/" + n].version).join(", ")'))"
(cd "$ROOT/tests/mcp" &&
    PGDATABASE=$db MCP_SERVERS=$servers/node_modules/.bin GATEWAY=$venv/bin/pg-labels-mcp \
        "$venv/bin/python" -m pytest -q -p no:cacheprovider ${PYTEST_ARGS:-})

admin -c "DROP DATABASE $db WITH (FORCE)"
trap - EXIT
echo "mcp: ok"
