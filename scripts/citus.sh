# A Citus cluster on localhost for the citus suite and the benchmark: sourced, not run.
# Needs PGBIN (a PostgreSQL 15 with pg_labels installed). Citus 13.2.2 is built from
# third_party/citus when it is not installed (about 2.5 minutes, once).
#   citus_build                   build and install Citus into $PGBIN's server if missing
#   citus_node PORT               a node: initdb, Citus preloaded, started, CREATE EXTENSION citus
#   citus_cluster C W1 W2 ...     coordinator C and workers W..., added to it
#   citus_stop                    stop every node (and remove them unless KEEP_CLUSTER is set)
CITUS_VENDOR=${CITUS_VENDOR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/third_party/citus}
CITUS_BASE=${CITUS_BASE:-$(mktemp -d /tmp/pg_labels_citus.XXXXXX)}
chown postgres: "$CITUS_BASE"
CITUS_PORTS=()

citus_build() { bash "$CITUS_VENDOR/build.sh" "$PGBIN/pg_config"; }

# psql as a role on a node: cq PORT ROLE psql-args...
cq() {
    local port=$1 role=$2; shift 2
    "$PGBIN/psql" -X -q -At -v ON_ERROR_STOP=1 -h localhost -p "$port" -U "$role" -d postgres "$@"
}

citus_node() {
    local d=$CITUS_BASE/$1
    mkdir -p "$d" && chown postgres: "$d"
    runuser -u postgres -- "$PGBIN/initdb" -D "$d/data" -U postgres -A trust --no-sync \
        --encoding UTF8 --locale C.UTF-8 >/dev/null
    cat >>"$d/data/postgresql.conf" <<CONF
shared_preload_libraries = 'citus'
listen_addresses = 'localhost'
port = $1
unix_socket_directories = '$d'
max_connections = 100
wal_level = logical
citus.enable_unsafe_triggers = on
track_commit_timestamp = on
${CITUS_EXTRA_CONF:-fsync = off}
CONF
    runuser -u postgres -- env RUST_BACKTRACE="${SERVER_RUST_BACKTRACE:-1}" "$PGBIN/pg_ctl" -D "$d/data" \
        -l "$d/server.log" -w start >/dev/null
    CITUS_PORTS+=("$1")
    cq "$1" postgres -c "CREATE EXTENSION citus"
}

citus_cluster() {
    local c=$1 w; shift
    citus_node "$c"
    for w in "$@"; do citus_node "$w"; done
    cq "$c" postgres -c "SELECT citus_set_coordinator_host('localhost', $c)" >/dev/null
    for w in "$@"; do cq "$c" postgres -c "SELECT citus_add_node('localhost', $w)" >/dev/null; done
}

citus_stop() {
    local p
    for p in "${CITUS_PORTS[@]}"; do
        runuser -u postgres -- "$PGBIN/pg_ctl" -D "$CITUS_BASE/$p/data" -m immediate stop >/dev/null 2>&1 || true
    done
    if [ -n "${KEEP_CLUSTER:-}" ]; then echo "Citus nodes kept in $CITUS_BASE" >&2; else rm -rf "$CITUS_BASE"; fi
}
