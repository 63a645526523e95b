#!/usr/bin/env bash
# The demo, on a fresh Debian machine as root: installs what is missing, builds and installs
# pg_labels (release build), starts a throwaway PostgreSQL 15 cluster, and runs the seed's
# scenario against it. A second run reuses what is installed.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

setup
install_extension release
start_cluster
log "CREATE EXTENSION pg_labels"
psql_q -c "CREATE EXTENSION pg_labels"
for f in "$ROOT"/demo/*.sql; do
    "$PGBIN/psql" -X -q -f "$f" || true
done
