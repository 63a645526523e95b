#!/usr/bin/env bash
# The demo, on a fresh Debian machine as root: installs what is missing, builds and installs
# pg_labels (release build), starts a throwaway PostgreSQL 15 cluster, and runs the seed's
# scenario against it (demo/*.sql, in order). A second run reuses what is installed.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

setup
install_extension release
start_cluster
log "CREATE EXTENSION pg_labels"
psql_q -c "CREATE EXTENSION pg_labels"
for f in "$ROOT"/demo/*.sql; do
    log "$(basename "$f")"
    # errors are part of the show: the refusals are printed, and the script goes on
    "$PGBIN/psql" -X -q -f "$f"
done
