#!/usr/bin/env bash
# ALTER EXTENSION pg_labels UPDATE from every released version (sql/released/), as a DBA runs
# it, as the superuser: install the old release (its frozen script, served by this library),
# set it up and write the seed scenario with a sharing, crossing and approval workload
# (tests/workload/), update, then:
#   - every row, sequence and privilege is as it was;
#   - the catalog equals a fresh install's set up the same way (pg_dump --schema-only
#     --binary-upgrade, which lists the extension's own objects, with OIDs left out; and the
#     tables pg_dump dumps the rows of);
#   - a pg_dump of the updated database restores with the same rows and privileges (the
#     privileges the DBA granted are still the DBA's, not the extension's);
#   - enforcement holds and ids continue;
#   - a table of the DBA's guarded with protect() before the update has the policies protect()
#     gives now (in the catalog comparison), and DROP EXTENSION pg_labels CASCADE afterwards
#     leaves it closed to every role but its owner (tests/upgrade/protected.sql).
# Uses the cluster of test.sh (PGHOST, PGPORT).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$here/../.." && pwd)
PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}
q() { "$PGBIN/psql" -X -q -v ON_ERROR_STOP=1 "$@"; }
fail() { echo "upgrade: FAILED ($*)" >&2; exit 1; }
source "$here/../workload/checks.sh"
work=$(mktemp -d /tmp/pg_labels_upgrade.XXXXXX)
trap 'rm -rf "$work"' EXIT
current=$(sed -n "s/^default_version = '\(.*\)'/\1/p" "$("$PGBIN/pg_config" --sharedir)/extension/pg_labels.control")

# The catalog, OIDs left out: the extension's objects with their definitions, privileges and
# comments (what pg_upgrade would carry; sequence values are data, compared above), and the
# tables whose rows pg_dump dumps.
catalog() { # $1 database
    "$PGBIN/pg_dump" -d "$1" --schema-only --binary-upgrade |
        grep -vE "^(SELECT pg_catalog.binary_upgrade_set_next_|SELECT pg_catalog.setval|SELECT pg_catalog.binary_upgrade_create_empty_extension|SET |SELECT pg_catalog.set_config|-- |--$|$|\\\\(un)?restrict )" |
        sed -E "s/WHERE oid = '[0-9]+'/WHERE oid = N/"
    q -d "$1" -At -c "SELECT 'dumped: ' || c::regclass FROM pg_extension e, unnest(e.extconfig) c WHERE e.extname = 'pg_labels' ORDER BY 1"
}

# The analyst of a release's README: its grants (0.1.0 and 0.2.0 named the same; 0.3.0 added
# tools and refused_writes), and a scope.
readers_grant() { # $1 release, $2 database
    local extra=""
    [ "$1" = 0.3.0 ] && extra=", pg_labels.tools, pg_labels.refused_writes"
    q -d "$2" -c "GRANT USAGE ON SCHEMA pg_labels TO upgrade_reader" \
        -c "GRANT SELECT ON pg_labels.runs, pg_labels.steps, pg_labels.artifacts, pg_labels.shares,
                            pg_labels.agent_versions, pg_labels.listeners, pg_labels.crossings$extra,
                            pg_labels.trail, pg_labels.refusals, pg_labels.approval_points TO upgrade_reader" \
        -c "INSERT INTO pg_labels.grants (role, scope) VALUES ('upgrade_reader', 'acme')" >/dev/null
}
# Each view of the schema read as that analyst, its scope entered: "ok view" or "denied view".
views_read() { # $1 database
    local v
    for v in $(q -d "$1" -At -c "SELECT c.relname FROM pg_class c WHERE c.relnamespace = 'pg_labels'::regnamespace AND c.relkind = 'v' ORDER BY 1"); do
        if q -d "$1" -c "SET ROLE upgrade_reader" -c "BEGIN" -c "SELECT pg_labels.enter_scope('acme')" \
             -c "SELECT count(*) FROM pg_labels.$v" -c "COMMIT" >/dev/null 2>&1; then
            echo "ok $v"
        else
            echo "denied $v"
        fi
    done
}

workload_roles
q -d postgres -c "SET client_min_messages = warning" -c "DROP OWNED BY upgrade_reader" -c "DROP ROLE IF EXISTS upgrade_reader" 2>/dev/null || true
q -d postgres -c "CREATE ROLE upgrade_reader"
for db in upgrade_fresh upgrade_restored; do q -d postgres -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS $db"; done
q -d postgres -c "CREATE DATABASE upgrade_fresh"
q -d upgrade_fresh -c "CREATE EXTENSION pg_labels" -f "$here/../workload/setup.sql" -f "$here/protected.sql" >/dev/null
catalog upgrade_fresh >"$work/fresh.catalog"

releases=0
for script in "$ROOT"/sql/released/pg_labels--*.sql; do
    from=$(basename "$script" .sql)
    from=${from#pg_labels--}
    db="upgrade_from_${from//./_}"
    releases=$((releases + 1))
    printf '\n--- %s -> %s\n' "$from" "$current"
    q -d postgres -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db"
    q -d "$db" -c "CREATE EXTENSION pg_labels VERSION '$from'" \
        -f "$here/../workload/setup.sql" -f "$here/../workload/data.sql" -f "$here/protected.sql" >/dev/null
    # (0.3.0's steps and shares have carried_scope already: left out on both sides, as the
    # runs' and artifacts' are new)
    case $from in
        0.3.0) SNAPSHOT_DROP="{slot,carried_scope,run_scope}" data_snapshot -d "$db" >"$work/before" ;;
        *) data_snapshot -d "$db" >"$work/before" ;;
    esac
    grep -c "" "$work/before" | xargs echo "data snapshot lines:"

    q -d "$db" -c "ALTER EXTENSION pg_labels UPDATE" 2>"$work/notices"
    [ "$(q -d "$db" -At -c "SELECT extversion FROM pg_extension WHERE extname = 'pg_labels'")" = "$current" ] ||
        fail "$from: not at $current after the update"
    # 0.3.1 binds every role to its grants: the update gives * to each role that wrote,
    # approved or recorded crossings (the workload's writer, approver and authorizer), and says so
    # (a WARNING each: ALTER EXTENSION shows no NOTICE of its script)
    star=$(q -d "$db" -At -c "SELECT string_agg(role, ',' ORDER BY role) FROM pg_labels.grants WHERE scope = '*' AND NOT enters")
    [ "$star" = "dump_alice,dump_bob,dump_platform" ] || fail "$from: the update granted * to [$star]"
    [ "$(grep -c 'granted \* (every company) in pg_labels.grants, as it acted before' "$work/notices")" = 3 ] ||
        fail "$from: the update's WARNINGs do not name the three roles it granted *: $(cat "$work/notices")"
    echo "grants: * for the writer, the approver and the crossing authorizer, each named in a WARNING"

    # what was there is unchanged; what later releases add is left out of this comparison and
    # checked below: 0.2.0 the hash chains' columns, the digests, the trail's proofs, Citus;
    # 0.3.0 the scope a step or share can be read in (carried_scope), the record of refused writes
    # 0.3.1 the scope a run or artifact can be read in (carried_scope too), what a refused
    # write claimed (attempted), the tool catalog's owners and pinned definitions (owner,
    # definition_digest, tool_namespaces, tool_definitions), a request's expiry (expires_at) and
    # the requests' view (approval_requests)
    tools31="tool_namespaces|tool_definitions|tool_definitions_id_seq|approval_requests"
    case $from in
        0.1.0)
            added_columns="slot,prev_hash,hash,opened_labels,chain_head,chain_slot,chain_cut,chain_cut_length,carried_scope,attempted,run_scope,enters,owner,definition_digest"
            added_objects="digests|digests_id_seq|verify|verify_all|ledger_digest|verify_digest|prove|start_chains|distribute|shard_sequence|refused_writes|refused_writes_id_seq|$tools31" ;;
        0.2.0)
            added_columns="slot,carried_scope,attempted,run_scope,enters,owner,definition_digest"  # (the ring slot is left out of every snapshot)
            added_objects="refused_writes|refused_writes_id_seq|$tools31" ;;
        *)
            added_columns="slot,carried_scope,attempted,run_scope,enters,owner,definition_digest"
            added_objects="$tools31" ;;
    esac
    # (compared without the grants of * the update added: in a copy of the database)
    q -d postgres -c "CREATE DATABASE upgrade_compared TEMPLATE $db"
    q -d upgrade_compared -c "DELETE FROM pg_labels.grants WHERE scope = '*'" >/dev/null
    SNAPSHOT_DROP="{$added_columns}" SNAPSHOT_DROP_STEPS="{expires_at}" data_snapshot -d upgrade_compared |
        grep -Ev "^(acl|sequence|rows) (pg_labels\.)?($added_objects)[ (:]" \
        >"$work/after_comparable"
    q -d postgres -c "DROP DATABASE upgrade_compared"
    diff -u "$work/before" "$work/after_comparable" || fail "$from: rows, sequences or privileges changed"
    echo "data: the same"
    data_snapshot -d "$db" >"$work/after"
    chains=$(q -d "$db" -At -c "SET client_min_messages = warning" \
        -c "SELECT count(*) FILTER (WHERE chain_head IS NULL) FROM pg_labels.runs" \
        -c "SELECT count(*) FROM pg_labels.verify_all()" | tr '\n' ' ')
    [ "$chains" = "0 0 " ] || fail "$from: the update left runs unchained or chains broken (unchained, broken): $chains"
    echo "hash chains: every run chained from the update on, verify_all() finds none broken"

    catalog "$db" >"$work/upgraded.catalog"
    diff -u "$work/fresh.catalog" "$work/upgraded.catalog" || fail "$from: the catalog differs from a fresh $current"
    echo "catalog: the same as a fresh install ($(grep -c "" "$work/fresh.catalog") lines)"

    "$PGBIN/pg_dump" -d "$db" -Fc -f "$work/updated.dump"
    q -d postgres -c "CREATE DATABASE upgrade_restored"
    "$PGBIN/pg_restore" --exit-on-error -d upgrade_restored "$work/updated.dump"
    data_snapshot -d upgrade_restored >"$work/restored"
    diff -u "$work/after" "$work/restored" || fail "$from: a dump of the updated database restores differently"
    q -d postgres -c "DROP DATABASE upgrade_restored"
    echo "pg_dump of the updated database: restores the same"

    enforced -d "$db"
    echo "enforcement: on"

    # as before the update, the writer opens a run of any company; narrowed to acme as
    # docs/operations.md shows, it opens acme's and no longer globex's
    q -d "$db" -c "SET ROLE dump_platform" -c "INSERT INTO pg_labels.runs (scope) VALUES ('globex/ops')" >/dev/null ||
        fail "$from: after the update the writer no longer opens a run of another company"
    q -d "$db" -c "BEGIN" -c "DELETE FROM pg_labels.grants WHERE role = 'dump_platform' AND scope = '*'" \
        -c "INSERT INTO pg_labels.grants (role, scope) VALUES ('dump_platform', 'acme') ON CONFLICT DO NOTHING" -c "COMMIT" >/dev/null
    q -d "$db" -c "SET ROLE dump_platform" -c "INSERT INTO pg_labels.runs (scope) VALUES ('acme/ops')" >/dev/null ||
        fail "$from: narrowed to acme, the writer cannot open an acme run"
    if q -d "$db" -c "SET ROLE dump_platform" -c "INSERT INTO pg_labels.runs (scope) VALUES ('globex/ops')" 2>"$work/err" >/dev/null ||
        ! grep -q "may not open a run in scope globex/ops" "$work/err"; then
        fail "$from: narrowed to acme, the writer still opens a globex run: $(cat "$work/err")"
    fi
    echo "grants: the writer acts everywhere until narrowed; narrowed, only in acme"
    # what the update granted lets no role enter a scope it could not enter before
    if q -d "$db" -c "SET ROLE dump_alice" -c "SELECT pg_labels.enter_scope('*')" >/dev/null 2>&1; then
        fail "$from: after the update the approver enters *"
    fi
    echo "grants: the * the update gave enters no scope"

    # the DBA's protected table stays closed when the extension goes (the guard policy)
    # (as the README's removal says: the trail holds rows, so on purpose, after a backup)
    q -d "$db" -c "SET client_min_messages = warning" -c "BEGIN" -c "SET LOCAL session_replication_role = replica" \
        -c "DROP EXTENSION pg_labels CASCADE" -c "COMMIT"
    seen=$(q -d "$db" -At -c "SET ROLE dump_analyst" -c "SELECT count(*) FROM public.notes" -c "SELECT count(*) FROM public.notes_low" | tr '\n' ' ')
    [ "$seen" = "0 0 " ] || fail "$from: after DROP EXTENSION ... CASCADE a non-owner reads rows of a table protected before the update: $seen"
    if q -d "$db" -c "SET ROLE dump_analyst" -c "INSERT INTO public.notes (id, body) VALUES (2, 'x')" 2>"$work/err"; then
        fail "$from: after DROP EXTENSION ... CASCADE a non-owner writes to a table protected before the update"
    fi
    grep -q "row-level security" "$work/err" || fail "$from: the write was refused, but not by row-level security: $(cat "$work/err")"
    [ "$(q -d "$db" -At -c "SELECT count(*) FROM public.notes")" = 1 ] || fail "$from: the owner lost the protected table's row"
    echo "protect(): a table protected under $from is closed to non-owners after DROP EXTENSION ... CASCADE"
    q -d postgres -c "DROP DATABASE $db"

    # Readers keep reading: an analyst granted what this release's README granted, in a
    # database of this release, reads every view it read before the update, and every view
    # after it (0.3.0's refusals read refused_writes, which the update from 0.2.0 did not
    # grant to the view's readers; approval_points reads tools)
    rdb="upgrade_readers_${from//./_}"
    q -d postgres -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS $rdb" -c "CREATE DATABASE $rdb"
    q -d "$rdb" -c "CREATE EXTENSION pg_labels VERSION '$from'" -f "$here/../workload/setup.sql" -f "$here/../workload/data.sql" >/dev/null
    readers_grant "$from" "$rdb"
    views_read "$rdb" >"$work/views_before"
    q -d "$rdb" -c "ALTER EXTENSION pg_labels UPDATE" 2>"$work/update_notices"
    views_read "$rdb" >"$work/views_after"
    while read -r _ v; do
        grep -qx "ok $v" "$work/views_after" || fail "$from: the README's analyst read $v before the update and cannot after"
    done < <(grep "^ok " "$work/views_before")
    if grep -q "^denied " "$work/views_after"; then
        fail "$from: after the update the README's analyst cannot read: $(grep "^denied " "$work/views_after" | tr '\n' ' ')"
    fi
    # and a dump keeps what the update granted (as the DBA's)
    "$PGBIN/pg_dump" -d "$rdb" -Fc -f "$work/readers.dump"
    q -d postgres -c "CREATE DATABASE upgrade_restored"
    "$PGBIN/pg_restore" --exit-on-error -d upgrade_restored "$work/readers.dump"
    views_read upgrade_restored >"$work/views_restored"
    diff -u "$work/views_after" "$work/views_restored" || fail "$from: a dump of the updated database loses what the update granted the views' readers"
    q -d postgres -c "DROP DATABASE upgrade_restored" -c "DROP DATABASE $rdb"
    echo "readers: the analyst of $from's README reads every view after the update (and after a restore of its dump); $(grep -c "^ok " "$work/views_before") of $(grep -c "" "$work/views_before") before"
done
[ "$releases" -gt 0 ] || fail "no released version in sql/released/"
q -d postgres -c "DROP DATABASE upgrade_fresh"
echo "upgrade: ok ($releases released version(s) updated to $current: data, catalog, dump, enforcement)"
