#!/usr/bin/env bash
# An installable binary package of pg_labels for one PostgreSQL major version, for servers
# with no Rust toolchain:
#   scripts/package.sh PGVER     (13 to 18; prints the tarball's path as its last line)
# Builds with cargo pgrx package (the release profile) against that version's server (Debian's
# for 15, scripts/pg_versions.sh's for the others) and lays the files out as
#   pg_labels-VERSION-pgNN-ARCH/
#     lib/pg_labels.so
#     extension/pg_labels.control, pg_labels--VERSION.sql, the install scripts of earlier
#       releases and the upgrade scripts
#     install.sh   copies them into the server named by PG_CONFIG (or the pg_config on PATH),
#                  after checking that its major version is this package's
#     README
# in dist/pg_labels-VERSION-pgNN-ARCH.tar.gz.
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: $0 PGVER" >&2; exit 2; }
export PG_MAJOR=$1
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
setup >&2

version=$(sed -n 's/^version = "\(.*\)"/\1/p' "$ROOT/Cargo.toml" | head -1)
arch=$(uname -m)
name="pg_labels-$version-pg$PG_MAJOR-$arch"
out=$(mktemp -d /tmp/pg_labels_package.XXXXXX)
trap 'rm -rf "$out"' EXIT

log "cargo pgrx package for PostgreSQL $PG_MAJOR ($PG_CONFIG)"
(cd "$ROOT" && cargo pgrx package --pg-config "$PG_CONFIG" --out-dir "$out/build" 2>&1 |
    grep -vE '^\s+(Compiling|Checking|Fresh)\b' >&2) || true
so=$(find "$out/build" -name pg_labels.so | head -1)
control=$(find "$out/build" -name pg_labels.control | head -1)
[ -n "$so" ] && [ -n "$control" ] || { echo "cargo pgrx package made no library or control file" >&2; exit 1; }

pkg=$out/$name
mkdir -p "$pkg/lib" "$pkg/extension"
cp "$so" "$pkg/lib/"
cp "$(dirname "$control")"/pg_labels* "$pkg/extension/"
cp "$ROOT"/sql/released/pg_labels--*.sql "$pkg/extension/"
cat >"$pkg/install.sh" <<EOF
#!/bin/sh
# Installs pg_labels $version into a PostgreSQL $PG_MAJOR server: the one whose pg_config is
# \$PG_CONFIG, or the first pg_config on PATH. Run as a user that may write to its directories
# (usually root). Then, in each database, as a superuser: CREATE EXTENSION pg_labels;
set -eu
here=\$(cd "\$(dirname "\$0")" && pwd)
pg_config=\${PG_CONFIG:-pg_config}
major=\$("\$pg_config" --version | sed -n 's/^PostgreSQL \\([0-9]*\\).*/\\1/p')
if [ "\$major" != "$PG_MAJOR" ]; then
    echo "this package is for PostgreSQL $PG_MAJOR; \$pg_config is PostgreSQL \$major" >&2
    exit 1
fi
libdir=\$("\$pg_config" --pkglibdir)
extdir=\$("\$pg_config" --sharedir)/extension
# the library is copied aside and renamed into place: a backend loading it meanwhile never
# reads a half-written file
cp "\$here/lib/pg_labels.so" "\$libdir/.pg_labels.so.new"
mv -f "\$libdir/.pg_labels.so.new" "\$libdir/pg_labels.so"
cp "\$here"/extension/* "\$extdir/"
echo "pg_labels $version installed into \$libdir and \$extdir"
EOF
chmod 755 "$pkg/install.sh"
cat >"$pkg/README" <<EOF
pg_labels $version for PostgreSQL $PG_MAJOR ($arch, built on $(. /etc/os-release && echo "$PRETTY_NAME")).

  PG_CONFIG=/path/to/pg_config ./install.sh
  psql -c 'CREATE EXTENSION pg_labels'     # as a superuser, in each database

Or, in a database where an earlier release is installed: ALTER EXTENSION pg_labels UPDATE;
Everything else is in the README and docs/ of pg_labels' source.
EOF
mkdir -p "$ROOT/dist"
tar -C "$out" -czf "$ROOT/dist/$name.tar.gz" "$name"
echo "$ROOT/dist/$name.tar.gz"
