#!/usr/bin/env bash
# Build and install Citus 13.2.2 (the distributed engine for PostgreSQL 15-17) from the source
# kept here, into the server whose pg_config is given (default: Debian's PostgreSQL 15).
# Usage: build.sh [PG_CONFIG] [BUILD_DIR]   — about 2.5 minutes on 2 cores; idempotent.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
pgc=${1:-/usr/lib/postgresql/15/bin/pg_config}
build=${2:-/tmp/citus-build}
libdir=$("$pgc" --pkglibdir)
if [ -f "$libdir/citus.so" ] && [ "$(cat "$libdir/citus.source" 2>/dev/null)" = "13.2.2" ]; then
  echo "citus 13.2.2 already installed in $libdir"; exit 0
fi
need=()
for p in libcurl4-openssl-dev liblz4-dev libzstd-dev libkrb5-dev libssl-dev libselinux1-dev \
         libxslt1-dev libpam0g-dev libreadline-dev autoconf flex bison make gcc; do
  dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
echo "dd2453caec20a830e5e63f1def5c5a98cb6f57ae510407cdcd800916fcdab430  $here/citus-13.2.2.tar.gz" | sha256sum -c --quiet -
rm -rf "$build" && mkdir -p "$build"
tar -xzf "$here/citus-13.2.2.tar.gz" -C "$build"
cd "$build/citus-13.2.2"
# PostgreSQL 15.20 itself exports have_createdb_privilege(); Citus' compat copy must not clash.
[ "$("$pgc" --version | awk '{print $2}' | cut -d. -f1)" = 15 ] && patch -s -p1 < "$here/pg15.20-have_createdb_privilege.patch"
PG_CONFIG="$pgc" ./configure --without-libcurl >/dev/null
make -s -j"$(nproc)" >/dev/null
make -s install >/dev/null
echo 13.2.2 > "$libdir/citus.source"
echo "citus 13.2.2 installed into $libdir"
