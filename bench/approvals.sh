#!/usr/bin/env bash
# Grant to resume (issue 49): the time from a person's grant to the paused tool call starting
# again, median and p95 over APPROVALS_N approvals (200), driven by NOTIFY on
# pg_labels_approvals (no polling). Python (bench/approvals_python.py: the OpenAI Agents SDK
# paused by pg_labels.openai_agents, resolve_approvals waiting on Run.wait_for_decision,
# Runner.run resuming), and the MCP gateway holding the call (bench/approvals_gateway.py, when
# it exists). Each prints one line: RESULT <who> n=N median_ms=X p95_ms=Y.
#
# Needs PGHOST/PGPORT/PGUSER (a superuser) of a running cluster with pg_labels installed, and
# PGBIN (psql); makes the database labels_approvals_bench there and drops it at the end. The
# Python environment is the python suite's (tests/python/venv.sh, $PY_VENV), the package
# installed into it from this tree. `scripts/bench.sh approvals` runs it in its cluster.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
: "${PGHOST:?}" "${PGPORT:?}" "${PGUSER:?}"
export PGHOST PGPORT PGUSER
PSQL=${PGBIN:+$PGBIN/}psql

source "$ROOT/tests/python/venv.sh"
"$venv/bin/pip" install -q --disable-pip-version-check --no-build-isolation --force-reinstall \
    --no-deps "$ROOT/python[openai-agents]"

db=labels_approvals_bench
admin() { PGOPTIONS="-c client_min_messages=warning" "$PSQL" -X -q -v ON_ERROR_STOP=1 -d postgres "$@"; }
admin -c "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db"
trap 'admin -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1 || true' EXIT
"$PSQL" -X -q -v ON_ERROR_STOP=1 -d "$db" -c "CREATE EXTENSION pg_labels"

echo "approvals: Python (OpenAI Agents SDK), grant to resumed tool call"
"$venv/bin/python" "$ROOT/bench/approvals_python.py" "$db"
if [ -f "$ROOT/bench/approvals_gateway.py" ]; then
    echo "approvals: the MCP gateway, grant to the held call forwarded"
    "$venv/bin/python" "$ROOT/bench/approvals_gateway.py" "$db"
fi
