#!/usr/bin/env bash
# The console (console/, pg-labels-console) against a real server and a real browser.
# Makes its own PostgreSQL cluster from $PGBIN (default Debian's 15; pg_labels must be installed
# into that server), with scram-sha-256 over TCP on a free port under a temp dir, so that people
# sign in with their role's password and a wrong one fails; fills it with the seed's scenario
# (demo/2..5) and tests/console/fixture.sql; starts the console; runs the HTTP-level tests
# (test_http.py, test_attacks.py), the browser tests (test_browser.py: Debian's headless
# Chromium and chromedriver, driven by Selenium), then the notifier against a webhook receiver
# of its own (test_notify.py: after the browser, so that the screenshots show the scenario's
# requests only); removes the cluster at exit. Screenshots of the main pages
# go to tests/console/screenshots/ (or $CONSOLE_SCREENSHOTS).
# PGHOST/PGPORT/PGUSER of scripts/test.sh's shared cluster are not used.
set -euo pipefail

cd "$(dirname "$0")/../.."
ROOT=$(pwd)
PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}
VENV=${CONSOLE_VENV:-/tmp/pg_labels_console_venv}
SHOTS=${CONSOLE_SCREENSHOTS:-$ROOT/tests/console/screenshots}
unset PGHOST PGPORT PGUSER PGDATABASE PGPASSWORD PGSERVICE

log() { printf '\n==> console: %s\n' "$*" >&2; }

# Debian's Chromium and its driver (never a browser download by a library)
if ! command -v chromium >/dev/null || ! [ -x /usr/bin/chromedriver ]; then
    log "installing Debian's chromium and chromium-driver"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null
fi

# The console and its test dependencies, pinned, in a virtualenv of their own; the console and
# the package it uses (python/) installed as docs/console.md says, afresh every run
if ! [ -x "$VENV/bin/python" ]; then
    log "making a virtualenv in $VENV"
    python3 -m venv "$VENV"
fi
"$VENV/bin/pip" install -q --disable-pip-version-check -r console/requirements-test.txt
"$VENV/bin/pip" install -q --disable-pip-version-check --force-reinstall --no-deps ./python ./console

# Installing the repository's packages writes nothing into the checkout: both, as
# docs/console.md installs them, into a throwaway virtualenv (pip's build isolation, the build
# backend from PyPI, as a user's pip does); what git sees, ignored files too, is the same after
if git -C "$ROOT" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    log "pip install ./python ./console leaves the checkout as it was (git status --ignored)"
    seen() { git -C "$ROOT" status --porcelain --ignored; }
    before=$(seen)
    scratch=$(mktemp -d /tmp/pg_labels_install.XXXXXX)
    python3 -m venv "$scratch"
    "$scratch/bin/pip" install -q --disable-pip-version-check --no-deps ./python ./console
    rm -rf "$scratch"
    after=$(seen)
    if [ "$before" != "$after" ]; then
        echo "console: FAILED (installing ./python ./console wrote into the checkout:)" >&2
        diff <(echo "$before") <(echo "$after") >&2 || true
        exit 1
    fi
fi

# ruff (the repository's ruff.toml, as for python/) and mypy --strict (console/pyproject.toml)
log "ruff and mypy --strict"
"$VENV/bin/ruff" check -q --no-cache --config console/pyproject.toml console/src tests/console
(cd console && "$VENV/bin/mypy" --strict --cache-dir "$VENV/.mypy_cache" src/pg_labels_console)

free_port() { "$VENV/bin/python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

WORK=$(mktemp -d /tmp/pg_labels_console.XXXXXX)
chown postgres: "$WORK"
chmod 755 "$WORK"
CONSOLE_PID=
cleanup() {
    [ -n "$CONSOLE_PID" ] && kill "$CONSOLE_PID" 2>/dev/null && wait "$CONSOLE_PID" 2>/dev/null || true
    if [ -d "$WORK/data" ]; then
        runuser -u postgres -- "$PGBIN/pg_ctl" -D "$WORK/data" -m immediate stop >/dev/null 2>&1 || true
    fi
    if [ -n "${KEEP_CONSOLE_CLUSTER:-}" ]; then echo "kept $WORK" >&2; else rm -rf "$WORK"; fi
}
trap cleanup EXIT

PGPORT_OWN=$(free_port)
log "a cluster of $PGBIN in $WORK: trust for the superuser's unix socket, scram-sha-256 over TCP, port $PGPORT_OWN"
runuser -u postgres -- "$PGBIN/initdb" -D "$WORK/data" -U postgres --auth-local=trust --auth-host=scram-sha-256 \
    --no-sync --encoding UTF8 --locale C.UTF-8 >"$WORK/initdb.log"
runuser -u postgres -- "$PGBIN/pg_ctl" -D "$WORK/data" -l "$WORK/server.log" -w \
    -o "-c listen_addresses=127.0.0.1 -k $WORK -p $PGPORT_OWN -c fsync=off -c password_encryption=scram-sha-256" \
    start >/dev/null

DB=pg_labels_console
psql_admin() { "$PGBIN/psql" -X -q -h "$WORK" -p "$PGPORT_OWN" -U postgres "$@"; }
psql_admin -d postgres -v ON_ERROR_STOP=1 -c "CREATE DATABASE $DB"
psql_admin -d "$DB" -v ON_ERROR_STOP=1 -c "CREATE EXTENSION pg_labels"
log "the seed's scenario (demo/2..5; their refusals are expected) and tests/console/fixture.sql"
for f in demo/2_seed_scenario.sql demo/3_sharing.sql demo/4_publication.sql demo/5_analyst.sql; do
    psql_admin -d "$DB" -f "$f" >/dev/null 2>&1
done
psql_admin -d "$DB" -v ON_ERROR_STOP=1 -f tests/console/fixture.sql >/dev/null

CONSOLE_PORT=$(free_port)
export CONSOLE_DB_URL="postgresql://127.0.0.1:$PGPORT_OWN/$DB"
export CONSOLE_ADMIN_DSN="host=$WORK port=$PGPORT_OWN user=postgres dbname=$DB"
export CONSOLE_URL="http://127.0.0.1:$CONSOLE_PORT"
export CONSOLE_SCREENSHOTS=$SHOTS
export SE_OFFLINE=true  # Selenium Manager never downloads: the driver is /usr/bin/chromedriver
log "starting pg-labels-console on $CONSOLE_URL"
"$VENV/bin/pg-labels-console" --database "$CONSOLE_DB_URL" --listen "127.0.0.1:$CONSOLE_PORT" >"$WORK/console.log" 2>&1 &
CONSOLE_PID=$!
for _ in $(seq 1 100); do
    "$VENV/bin/python" -c "import urllib.request, sys; urllib.request.urlopen(sys.argv[1] + '/login')" "$CONSOLE_URL" 2>/dev/null && break
    sleep 0.1
done

mkdir -p "$SHOTS"
log "HTTP-level tests, then the browser"
set +e
"$VENV/bin/python" -m pytest -q -p no:cacheprovider tests/console/test_http.py tests/console/test_attacks.py tests/console/test_browser.py tests/console/test_notify.py
status=$?
set -e
if [ $status != 0 ]; then
    echo "--- console log (last 40 lines)" >&2
    tail -40 "$WORK/console.log" >&2
fi
echo "console: screenshots in $SHOTS"
exit $status
