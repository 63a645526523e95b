#!/usr/bin/env bash
# The citus suite: Citus 13.2.2 built from third_party/citus (if it is not installed), a
# coordinator and two workers on localhost (scripts/citus.sh), pg_labels distributed by the
# commands of docs/citus.md, "Scaling out with Citus" (read from that file, run as written), and
# the product checked as on one node: writers through the coordinator and through a worker,
# sharing across tenants under crossings, approvals, published agents, analysts' row-level
# security, the trail's proofs; then a third worker added, the race of the concurrency suite
# across nodes, and a rebalance onto the new worker while a writer goes on.
# Needs the extension installed into PostgreSQL 15. Usage: tests/citus/run.sh (scripts/test.sh citus)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}
source "$ROOT/scripts/citus.sh"
fails=0

citus_build
trap citus_stop EXIT
node() { citus_node "$@"; }
q() { cq "$@"; }

check() { # name expected actual
    if [ "$2" = "$3" ]; then
        echo "ok   $1"
    else
        echo "FAIL $1: expected [$2], got [$3]"
        fails=$((fails + 1))
    fi
}

sqlstate() { # port role sql: the SQLSTATE the statement fails with ("" if it succeeds)
    local out
    out=$("$PGBIN/psql" -X -q -At -v ON_ERROR_STOP=1 -v VERBOSITY=verbose -h localhost -p "$1" -U "$2" -d postgres \
        -c '\set VERBOSITY verbose' -c "$3" 2>&1 >/dev/null || true)
    sed -n 's/^ERROR:  \([0-9A-Z]\{5\}\):.*/\1/p' <<<"$out" | head -1
    if grep -q "XX000\|panicked\|\.rs:[0-9]" <<<"$out"; then
        echo "FAIL no internal error may reach a client: $out" >&2
        fails=$((fails + 1))
    fi
}

C=9700
citus_cluster $C 9701 9702

# the commands of docs/citus.md, as written (psql -c lines of its block), against the coordinator
mapfile -t README_LINES < <(awk '/^# Scaling out with Citus/ { on = 1 } on && /^```sh/ { block = 1; next }
    block && /^```/ { exit } block && /^psql -c/' "$ROOT/docs/citus.md")
[ ${#README_LINES[@]} = 3 ] || { echo "FAIL the Citus block of docs/citus.md: expected 3 psql lines, found ${#README_LINES[@]}"; exit 1; }
readme() { # n: run the README's line n as a superuser on the coordinator
    echo "\$ ${README_LINES[$1]}"
    (PGHOST=localhost PGPORT=$C PGUSER=postgres PGDATABASE=postgres; export PGHOST PGPORT PGUSER PGDATABASE
     eval "${README_LINES[$1]/psql/$PGBIN/psql -X -q -v ON_ERROR_STOP=1}") >/dev/null
}

echo "== CREATE EXTENSION on the coordinator; Citus' copies on the workers have no platform tables"
readme 0
version=$(sed -n 's/^version = "\(.*\)"/\1/p' "$ROOT/Cargo.toml" | head -1)
for p in 9701 9702; do
    check "worker $p has the extension" "$version" "$(q $p postgres -c "SELECT extversion FROM pg_extension WHERE extname = 'pg_labels'")"
    check "worker $p has no platform table of its own" "0" \
        "$(q $p postgres -c "SELECT count(*) FROM pg_class WHERE relnamespace = 'pg_labels'::regnamespace AND relkind IN ('r', 'p')")"
done
check "distribute() refuses a role that is not a superuser" "42501" \
    "$(q $C postgres -c "CREATE ROLE nobody LOGIN" >/dev/null; sqlstate $C nobody "SELECT pg_labels.distribute()")"

echo "== pg_labels.distribute()"
readme 1
check "runs and steps distributed by run, co-located" "pg_labels.runs|h|id
pg_labels.steps|h|run_id" "$(q $C postgres -c "SELECT logicalrelid::text, partmethod, column_to_column_name(logicalrelid, partkey)
    FROM pg_dist_partition WHERE logicalrelid IN ('pg_labels.runs'::regclass, 'pg_labels.steps'::regclass) ORDER BY 1")"
check "the catalogs are reference tables" "agent_versions,artifacts,carry_key,crossings,grants,listeners,shares,tool_definitions,tool_namespaces,tools" \
    "$(q $C postgres -c "SELECT string_agg(c.relname, ',' ORDER BY c.relname) FROM pg_dist_partition p JOIN pg_class c ON c.oid = p.logicalrelid
    WHERE p.partmethod = 'n' AND c.relnamespace = 'pg_labels'::regnamespace")"
check "steps and runs are no longer extension members" "0" \
    "$(q $C postgres -c "SELECT count(*) FROM pg_depend WHERE refclassid = 'pg_extension'::regclass AND deptype = 'e'
    AND classid = 'pg_class'::regclass AND objid IN ('pg_labels.runs'::regclass, 'pg_labels.steps'::regclass)")"
check "a second distribute() does nothing" "" "$(sqlstate $C postgres "SELECT pg_labels.distribute()")"

echo "== an ordinary writer, through the coordinator"
q $C postgres -c "CREATE ROLE agent_svc LOGIN" >/dev/null
readme 2
q $C postgres <<'SQL' >/dev/null
GRANT USAGE ON SCHEMA pg_labels TO agent_svc;
GRANT SELECT, INSERT ON pg_labels.runs, pg_labels.steps TO agent_svc;
GRANT SELECT ON pg_labels.tools TO agent_svc;
-- the platform's writer of every company (the suite writes acme's and globex's runs with it)
INSERT INTO pg_labels.grants (role, scope) VALUES ('agent_svc', '*');
INSERT INTO pg_labels.tools (name, effect, trusted_output) VALUES
    ('crm.read', 'read', true), ('web.fetch', 'read', false),
    ('stripe.refund', 'financial', false), ('ticket.update', 'reversible_write', true);
SQL
R1=00000000-0000-0000-0000-0000000000a1
check "open a run" "{area:acme/support}" \
    "$(q $C agent_svc -c "INSERT INTO pg_labels.runs (id, scope, agent) VALUES ('$R1', 'acme/support', 'support-bot') RETURNING labels")"
check "a read is allowed" "allow" \
    "$(q $C agent_svc -c "INSERT INTO pg_labels.steps (run_id, kind, tool) VALUES ('$R1', 'tool_called', 'crm.read') RETURNING decision")"
check "a tool result from outside carries origin:tool" "{origin:tool}" \
    "$(q $C agent_svc -c "INSERT INTO pg_labels.steps (run_id, kind, tool) VALUES ('$R1', 'tool_result', 'web.fetch') RETURNING labels")"
check "untrusted data never reaches a financial tool (23L02)" "23L02" \
    "$(sqlstate $C agent_svc "INSERT INTO pg_labels.steps (run_id, kind, tool) VALUES ('$R1', 'tool_called', 'stripe.refund')")"
check "the gate blocks it and records why" "block|untrusted_to_irreversible" \
    "$(q $C agent_svc -c "SELECT decision, rule FROM pg_labels.gate('$R1', 'stripe.refund')")"
check "an unknown tool is refused (23L04)" "23L04" \
    "$(sqlstate $C agent_svc "INSERT INTO pg_labels.steps (run_id, kind, tool) VALUES ('$R1', 'tool_called', 'no.such.tool')")"
check "a writer's time is not taken (the shard's trigger writes its own)" "t" \
    "$(q $C agent_svc -c "INSERT INTO pg_labels.steps (run_id, kind, args, created_at) VALUES ('$R1', 'planned', '{}', '2001-01-01') RETURNING created_at > '2020-01-01'")"
check "a writer's id is refused (428C9)" "428C9" \
    "$(sqlstate $C agent_svc "INSERT INTO pg_labels.steps (id, run_id, kind) VALUES (7, '$R1', 'planned')")"
check "the steps and the run's chain agree (on a shard every step writes its run's checkpoint)" "4|t" \
    "$(q $C agent_svc -c "SELECT (SELECT count(*) FROM pg_labels.steps WHERE run_id = '$R1'), (SELECT chain_head = (SELECT hash FROM pg_labels.steps WHERE run_id = '$R1' ORDER BY id DESC LIMIT 1) FROM pg_labels.runs WHERE id = '$R1')")"
R4=00000000-0000-0000-0000-0000000000a4
q $C agent_svc -c "INSERT INTO pg_labels.runs (id, scope) VALUES ('$R4', 'acme/support')" \
    -c "INSERT INTO pg_labels.steps (run_id, kind, labels) VALUES ('$R4', 'input', '{company:globex}')" >/dev/null
check "another company's data enters a run" "{area:acme/support,company:globex}" \
    "$(q $C agent_svc -c "SELECT labels FROM pg_labels.runs WHERE id = '$R4'")"
check "... then no tool call escapes the run's scope (23L01)" "23L01" \
    "$(sqlstate $C agent_svc "INSERT INTO pg_labels.steps (run_id, kind, tool) VALUES ('$R4', 'tool_called', 'crm.read')")"
check "the run is sealed: its scope does not change (23L05)" "23L05" \
    "$(sqlstate $C postgres "UPDATE pg_labels.runs SET scope = 'globex' WHERE id = '$R1'")"

echo "== the same writer, through a worker"
R2=00000000-0000-0000-0000-0000000000b2
q 9702 agent_svc -c "INSERT INTO pg_labels.runs (id, scope, agent) VALUES ('$R2', 'acme/billing', 'billing-bot')" >/dev/null
check "a read is allowed" "allow" \
    "$(q 9702 agent_svc -c "INSERT INTO pg_labels.steps (run_id, kind, tool) VALUES ('$R2', 'tool_called', 'crm.read') RETURNING decision")"
q 9702 agent_svc -c "INSERT INTO pg_labels.steps (run_id, kind, tool) VALUES ('$R2', 'tool_result', 'web.fetch')" >/dev/null
check "untrusted data never reaches a financial tool (23L02)" "23L02" \
    "$(sqlstate 9702 agent_svc "INSERT INTO pg_labels.steps (run_id, kind, tool) VALUES ('$R2', 'tool_called', 'stripe.refund')")"
check "a step of a run that does not exist is refused (23503)" "23503" \
    "$(sqlstate 9701 agent_svc "INSERT INTO pg_labels.steps (run_id, kind) VALUES ('00000000-0000-0000-0000-0000000000ff', 'planned')")"

echo "== context by reference across tenants, through crossings"
q $C postgres <<'SQL' >/dev/null
GRANT SELECT, INSERT ON pg_labels.artifacts, pg_labels.shares, pg_labels.agent_versions TO agent_svc;
CREATE ROLE dpo LOGIN;
GRANT USAGE ON SCHEMA pg_labels TO dpo;
SELECT run_command_on_workers('GRANT USAGE ON SCHEMA pg_labels TO dpo');
GRANT EXECUTE ON FUNCTION pg_labels.authorize_crossing(scope, scope, text, timestamptz),
                          pg_labels.revoke_crossing(bigint, text) TO dpo;
INSERT INTO pg_labels.grants (role, scope) VALUES ('dpo', '*');
SQL
RA=00000000-0000-0000-0000-0000000000d1
# the other company's runs on another worker than RA's
node_of() { echo "(SELECT nodeport FROM pg_dist_shard_placement WHERE shardid = get_shard_id_for_distribution_column('pg_labels.runs', $1))"; }
read -r RB RC < <(q $C postgres -c "SELECT string_agg(u::text, ' ') FROM (SELECT md5('globex' || i)::uuid AS u
    FROM generate_series(1, 50) i) c WHERE $(node_of u) <> $(node_of "'$RA'::uuid") AND u IS NOT NULL" | cut -d' ' -f1,2)
q $C agent_svc -c "INSERT INTO pg_labels.runs (id, scope) VALUES ('$RA', 'acme/support'), ('$RB', 'globex/ops'), ('$RC', 'globex/ops')" >/dev/null
check "the runs of the two tenants are on different workers" "2" \
    "$(q $C postgres -c "SELECT count(DISTINCT nodeport) FROM pg_dist_shard_placement WHERE shardid IN
        (get_shard_id_for_distribution_column('pg_labels.runs', '$RA'), get_shard_id_for_distribution_column('pg_labels.runs', '$RB'))")"
check "an artifact must carry its run's labels (23514, checked where the run is)" "23514" \
    "$(sqlstate $C agent_svc "INSERT INTO pg_labels.artifacts (origin_run, digest) VALUES ('$RA', pg_labels.digest('report'))")"
ART=00000000-0000-0000-0000-00000000a47f
# (two statements: Citus writes an INSERT ... SELECT into a reference table with COPY, which
# PostgreSQL refuses under row-level security)
LABELS=$(q $C agent_svc -c "SELECT labels FROM pg_labels.runs WHERE id = '$RA'")
q $C agent_svc -c "INSERT INTO pg_labels.artifacts (id, origin_run, digest, labels)
    VALUES ('$ART', '$RA', pg_labels.digest('report'), '$LABELS')" >/dev/null
check "an artifact with its run's labels is made, by the writer" "{area:acme/support}|agent_svc" \
    "$(q $C agent_svc -c "SELECT labels, actor FROM pg_labels.artifacts WHERE id = '$ART'")"
check "sharing it with another company is refused without a crossing (23L01)" "23L01" \
    "$(sqlstate $C agent_svc "INSERT INTO pg_labels.shares (artifact_id, to_scope) VALUES ('$ART', 'globex')")"
check "a direct write of a crossing is refused (42501)" "42501" \
    "$(sqlstate 9701 dpo "INSERT INTO pg_labels.crossings (from_scope, to_scope, reason) VALUES ('acme/support', 'globex', 'x')")"
CROSSING=$(q $C dpo -c "SELECT pg_labels.authorize_crossing('acme/support', 'globex', 'support contract 42')")
SHARE=$(q $C agent_svc -c "INSERT INTO pg_labels.shares (artifact_id, to_scope) VALUES ('$ART', 'globex') RETURNING id, crossing_id")
check "under the crossing, the share is recorded with it" "$CROSSING" "${SHARE#*|}"
check "a run of the other company reads it (through a worker), naming the crossing" "{$CROSSING}|{area:acme/support}" \
    "$(q 9702 agent_svc -c "INSERT INTO pg_labels.steps (run_id, kind, artifact_id) VALUES ('$RB', 'context_read', '$ART') RETURNING crossing_ids, labels")"
check "a share to one run names that run's scope on Citus (23502 without it)" "23502" \
    "$(sqlstate $C agent_svc "INSERT INTO pg_labels.shares (artifact_id, to_run) VALUES ('$ART', '$RC')")"
check "... and the node holding the run checks it (23514)" "23514" \
    "$(sqlstate $C agent_svc "INSERT INTO pg_labels.shares (artifact_id, to_run, to_scope) VALUES ('$ART', '$RC', 'globex/other')")"
q $C dpo -c "SELECT pg_labels.revoke_crossing($CROSSING, 'contract ended')" >/dev/null
check "after the revocation, the other company's read is refused (23L01)" "23L01" \
    "$(sqlstate $C agent_svc "INSERT INTO pg_labels.steps (run_id, kind, artifact_id) VALUES ('$RC', 'context_read', '$ART')")"
check "... and a new share too" "23L01" \
    "$(sqlstate 9701 agent_svc "INSERT INTO pg_labels.shares (artifact_id, to_scope) VALUES ('$ART', 'globex')")"

echo "== a writer bound to its company: grants are a reference table, decided on the node that writes"
q $C postgres <<'SQL' >/dev/null
CREATE ROLE acme_svc LOGIN;
GRANT USAGE ON SCHEMA pg_labels TO acme_svc;
SELECT run_command_on_workers('GRANT USAGE ON SCHEMA pg_labels TO acme_svc');
GRANT SELECT, INSERT ON pg_labels.runs, pg_labels.steps TO acme_svc;
INSERT INTO pg_labels.grants (role, scope) VALUES ('acme_svc', 'acme');
SQL
GLOBEX_NODE=$(q $C postgres -c "SELECT $(node_of "'$RB'::uuid")")
check "acme's writer writes a step of acme's run" "planned" \
    "$(q $C acme_svc -c "INSERT INTO pg_labels.steps (run_id, kind) VALUES ('$RA', 'planned') RETURNING kind")"
check "on the worker that holds globex's run, acme's writer is refused its step as for a run that does not exist" \
    "$(sqlstate "$GLOBEX_NODE" acme_svc "INSERT INTO pg_labels.steps (run_id, kind) VALUES ('00000000-0000-0000-0000-0000000000fe', 'planned')")" \
    "$(sqlstate "$GLOBEX_NODE" acme_svc "INSERT INTO pg_labels.steps (run_id, kind) VALUES ('$RB', 'planned')")"
check "... which is 23503" "23503" \
    "$(sqlstate "$GLOBEX_NODE" acme_svc "INSERT INTO pg_labels.steps (run_id, kind) VALUES ('$RB', 'planned')")"
check "... and it may not open a globex run (42501)" "42501" \
    "$(sqlstate "$GLOBEX_NODE" acme_svc "INSERT INTO pg_labels.runs (scope) VALUES ('globex/ops')")"
check "acme's writer reads acme's runs and steps, no globex row (through the coordinator and a worker)" "t|0|0|0" \
    "$(q $C acme_svc -c "SELECT count(*) > 0 AND bool_and(scope <@ 'acme') FROM pg_labels.runs")|$(
       q $C acme_svc -c "SELECT count(*) FROM pg_labels.steps WHERE run_id IN ('$RB', '$RC')")|$(
       q $C acme_svc -c "SELECT count(*) FROM pg_labels.runs WHERE scope <@ 'globex'")|$(
       q "$GLOBEX_NODE" acme_svc -c "SELECT count(*) FROM pg_labels.steps WHERE run_id = '$RB'")"
check "... while the writer of every company reads globex's" "t" \
    "$(q "$GLOBEX_NODE" agent_svc -c "SELECT count(*) > 0 FROM pg_labels.steps WHERE run_id = '$RB'")"
q $C agent_svc -c "INSERT INTO pg_labels.agent_versions (agent, version, scope, steps) VALUES
    ('support-bot', 1, 'acme/support', '{\"steps\": [{\"id\": \"r\", \"tool\": \"crm.read\", \"inputs\": [\"source:slack\"]}]}')" >/dev/null
check "a published agent whose untrusted input reaches a financial tool is refused (23L02)" "23L02" \
    "$(sqlstate 9702 agent_svc "INSERT INTO pg_labels.agent_versions (agent, version, scope, steps) VALUES
    ('refund-bot', 1, 'acme/support', '{\"steps\": [{\"id\": \"p\", \"tool\": \"stripe.refund\", \"inputs\": [\"source:slack\"]}]}')")"
for t in artifacts shares crossings agent_versions; do
    check "every node's copy of $t is the same" "1" \
        "$(q $C postgres -c "SELECT count(DISTINCT result) FROM run_command_on_placements('pg_labels.$t',
            \$\$SELECT md5(coalesce(string_agg(t::text, ',' ORDER BY t::text), '')) FROM %s t\$\$)")"
done

echo "== approvals, listeners, published agents and the tool catalog"
q $C postgres <<'SQL' >/dev/null
CREATE ROLE alice LOGIN;
GRANT USAGE ON SCHEMA pg_labels TO alice;
SELECT run_command_on_workers('GRANT USAGE ON SCHEMA pg_labels TO alice');
GRANT EXECUTE ON FUNCTION pg_labels.decide_approval(bigint, boolean, text) TO alice;
INSERT INTO pg_labels.grants (role, scope) VALUES ('alice', 'acme');
GRANT SELECT, INSERT ON pg_labels.listeners TO agent_svc;
SQL
RD=00000000-0000-0000-0000-0000000000d4
q $C agent_svc -c "INSERT INTO pg_labels.runs (id, scope) VALUES ('$RD', 'acme/support')" \
    -c "INSERT INTO pg_labels.steps (run_id, kind, tool) VALUES ('$RD', 'tool_result', 'web.fetch')" >/dev/null
check "a reversible write on untrusted data asks a person (23L03)" "23L03" \
    "$(sqlstate $C agent_svc "INSERT INTO pg_labels.steps (run_id, kind, tool, args) VALUES ('$RD', 'tool_called', 'ticket.update', '{\"id\": 7}')")"
REQ=$(q 9701 agent_svc -c "SELECT pg_labels.request_approval('$RD', 'ticket.update', '{\"id\": 7}')")
check "the requester cannot decide its own request (42501)" "42501" \
    "$(q $C postgres -c "GRANT EXECUTE ON FUNCTION pg_labels.decide_approval(bigint, boolean, text) TO agent_svc" >/dev/null;
       sqlstate $C agent_svc "SELECT pg_labels.decide_approval($REQ, true)")"
q $C alice -c "SELECT pg_labels.decide_approval($REQ, true, 'checked the ticket')" >/dev/null
check "a person decides it, recorded as that person" "granted|alice" \
    "$(q $C postgres -c "SELECT decision, actor FROM pg_labels.steps WHERE run_id = '$RD' AND kind = 'approval_decided'")"
check "a decision written directly is refused (42501)" "42501" \
    "$(sqlstate 9702 agent_svc "INSERT INTO pg_labels.steps (run_id, kind, tool, decision, request_id) VALUES ('$RD', 'approval_decided', 'ticket.update', 'granted', $REQ)")"
check "the approved call goes through, once" "allow|$REQ" \
    "$(q $C agent_svc -c "INSERT INTO pg_labels.steps (run_id, kind, tool, args) VALUES ('$RD', 'tool_called', 'ticket.update', '{\"id\": 7}') RETURNING decision, request_id")"
check "... and not twice (23L03)" "23L03" \
    "$(sqlstate $C agent_svc "INSERT INTO pg_labels.steps (run_id, kind, tool, args) VALUES ('$RD', 'tool_called', 'ticket.update', '{\"id\": 7}')")"
LISTENER=$(q $C agent_svc -c "INSERT INTO pg_labels.listeners (agent, scope, event) VALUES ('triage-bot', 'acme/support', 'ticket.created') RETURNING id")
check "a run opened by a listener's event has its agent and scope" "triage-bot|acme/support" \
    "$(q 9702 agent_svc -c "INSERT INTO pg_labels.runs (listener_id) VALUES ($LISTENER) RETURNING agent, scope")"
check "a run of a published agent has its scope" "acme/support" \
    "$(q 9701 agent_svc -c "INSERT INTO pg_labels.runs (agent, agent_version) VALUES ('support-bot', 1) RETURNING scope")"
q $C postgres -c "UPDATE pg_labels.tools SET effect = 'destructive' WHERE name = 'crm.read'" >/dev/null
check "a tool made destructive counts at once on every node (23L02)" "23L02" \
    "$(sqlstate 9702 agent_svc "INSERT INTO pg_labels.steps (run_id, kind, tool) VALUES ('$RD', 'tool_called', 'crm.read')")"
q $C postgres -c "UPDATE pg_labels.tools SET effect = 'read' WHERE name = 'crm.read'" >/dev/null

echo "== analysts: row-level security on the distributed tables"
q $C postgres <<'SQL' >/dev/null
CREATE ROLE analyst LOGIN;
SELECT run_command_on_workers('GRANT USAGE ON SCHEMA pg_labels TO analyst');
GRANT USAGE ON SCHEMA pg_labels TO analyst;
GRANT SELECT ON pg_labels.runs, pg_labels.steps, pg_labels.grants, pg_labels.artifacts, pg_labels.shares TO analyst;
INSERT INTO pg_labels.grants (role, scope) VALUES ('analyst', 'acme/support');
SQL
# what one node's policies show: runs whose labels the scope carries, and their steps whose own
# labels it carries (counted as the superuser, by the rule itself)
want_runs=$(q $C postgres -c "SELECT count(*) FROM pg_labels.runs WHERE labelset_escaping(labels, 'acme/support') = '{}'")
want_steps=$(q $C postgres -c "SELECT count(*) FROM pg_labels.steps s JOIN pg_labels.runs r ON r.id = s.run_id
    WHERE labelset_escaping(r.labels, 'acme/support') = '{}' AND labelset_escaping(s.labels, 'acme/support') = '{}'")
want_artifacts=$(q $C postgres -c "SELECT count(*) FROM pg_labels.artifacts WHERE labelset_escaping(labels, 'acme/support') = '{}'")
want_shares=$(q $C postgres -c "SELECT count(*) FROM pg_labels.shares s JOIN pg_labels.artifacts a ON a.id = s.artifact_id
    WHERE labelset_escaping(a.labels, 'acme/support') = '{}'")
seen() { # port: what the analyst sees after entering acme/support in a transaction
    q "$1" analyst -c "BEGIN" -c "SELECT pg_labels.enter_scope('acme/support')" \
        -c "SELECT (SELECT count(*) FROM pg_labels.runs) || '|' || (SELECT count(*) FROM pg_labels.steps)
                   || '|' || (SELECT count(*) FROM pg_labels.grants) || '|' || (SELECT count(*) FROM pg_labels.artifacts)
                   || '|' || (SELECT count(*) FROM pg_labels.shares)" -c "COMMIT" | tail -1
}
check "the rule shows some runs and hides some" "t" \
    "$(q $C postgres -c "SELECT $want_runs > 0 AND $want_runs < (SELECT count(*) FROM pg_labels.runs)")"
want="$want_runs|$want_steps|1|$want_artifacts|$want_shares"
check "the rule shows an artifact and its share" "t" "$([ "$want_artifacts" -gt 0 ] && [ "$want_shares" -gt 0 ] && echo t)"
check "through the coordinator, the analyst sees what one node shows" "$want" "$(seen $C)"
check "through a worker, the same" "$want" "$(seen 9701)"
check "without a scope, nothing" "0|0" \
    "$(q $C analyst -c "SELECT (SELECT count(*) FROM pg_labels.runs) || '|' || (SELECT count(*) FROM pg_labels.steps)")"
check "a scope for the session is refused on Citus (0A000: the workers learn it per transaction)" "0A000" \
    "$(sqlstate $C analyst "SELECT pg_labels.enter_scope('acme/support', true)")"
check "a scope without a grant is refused (42501)" "42501" \
    "$(sqlstate $C analyst "SELECT pg_labels.enter_scope('acme')")"
shard=runs_$(q 9701 postgres -c "SELECT s.shardid FROM pg_dist_shard s JOIN pg_dist_placement p USING (shardid) JOIN pg_dist_node n USING (groupid)
    WHERE s.logicalrelid = 'pg_labels.runs'::regclass AND n.nodeport = 9701 LIMIT 1")
check "claiming to be Citus' backend with a scope carried by hand shows nothing ungranted" "0" \
    "$(PGAPPNAME='citus_internal gpid=10000000001' q 9701 analyst -c "SET pg_labels.carried_scope = 'acme'" \
        -c "SELECT count(*) FROM pg_labels.$shard")"
check "... and what a grant allows is all it shows" "0" \
    "$(PGAPPNAME='citus_internal gpid=10000000001' q 9701 analyst -c "SET pg_labels.carried_scope = 'acme/support'" \
        -c "SELECT count(*) FROM pg_labels.$shard WHERE labelset_escaping(labels, 'acme/support') <> '{}'")"
# a SECURITY DEFINER function owned by a role whose grant reaches wider (acme), called by the
# analyst inside its scope: its queries reach the workers as the definer, for whom the analyst's
# sealed scope is no claim, so it reads what it would read on one node, nothing
q $C postgres <<'SQL' >/dev/null
CREATE ROLE definer_role LOGIN;
SELECT run_command_on_workers('GRANT USAGE ON SCHEMA pg_labels TO definer_role');
GRANT USAGE ON SCHEMA pg_labels TO definer_role;
GRANT SELECT ON pg_labels.runs TO definer_role;
INSERT INTO pg_labels.grants (role, scope) VALUES ('definer_role', 'acme');
CREATE FUNCTION public.definer_runs() RETURNS bigint LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog
AS $$ BEGIN RETURN (SELECT count(*) FROM pg_labels.runs); END $$;
ALTER FUNCTION public.definer_runs() OWNER TO definer_role;
GRANT EXECUTE ON FUNCTION public.definer_runs() TO analyst;
SQL
check "a SECURITY DEFINER function gets no scope from its caller on the workers" "0" \
    "$(q $C analyst -c "BEGIN" -c "SELECT pg_labels.enter_scope('acme/support')" -c "SELECT public.definer_runs()" -c "COMMIT" | tail -1)"
check "the carried value names the role that entered the scope, sealed" "t" \
    "$(q $C analyst -c "BEGIN" -c "SELECT pg_labels.enter_scope('acme/support')" \
        -c "SELECT current_setting('pg_labels.carried_scope') ~ '^[0-9a-f]{64}\\|acme/support\\|analyst$'" -c "COMMIT" | tail -1)"
check "the key it is sealed with is the tables' owner's alone (42501)" "42501" \
    "$(sqlstate $C analyst "SELECT * FROM pg_labels.carry_key")"

echo "== the trail's proofs, over the distributed trail"
check "verify_all() finds no broken chain" "0" "$(q $C postgres -c "SELECT count(*) FROM pg_labels.verify_all()")"
check "verify() of one run" "t" "$(q $C agent_svc -c "SELECT intact FROM pg_labels.verify('$R1')")"
DIGEST=$(q $C postgres -c "SELECT pg_labels.ledger_digest()")
check "a digest taken on the coordinator is verified" "true" \
    "$(q $C postgres -c "SELECT string_agg(holds::text, ',') FROM pg_labels.verify_digest('$DIGEST')")"
check "lineage across tenants: the read run comes from the artifact's run" "$RA" \
    "$(q $C postgres -c "SELECT string_agg(DISTINCT run_id::text, ',') FROM pg_labels.lineage('$RB')")"

check "purge() says it does not run on Citus yet (0A000)" "0A000" \
    "$(sqlstate $C postgres "SELECT pg_labels.purge(now() - interval '1 year')")"

echo "== step ids: no id taken twice across nodes"
check "no id is taken twice" "0" "$(q $C postgres -c "SELECT count(*) FROM (SELECT id FROM pg_labels.steps GROUP BY id HAVING count(*) > 1) d")"
check "ids follow each run's order" "t" "$(q $C postgres -c "SELECT bool_and(ok) FROM (SELECT id > lag(id, 1, 0::bigint) OVER (PARTITION BY run_id ORDER BY created_at, id) AS ok FROM pg_labels.steps) s")"

echo "== a third worker joins after distribution"
node 9703
check "citus_add_node succeeds (the extension's copy there has no tables)" "" \
    "$(sqlstate $C postgres "SELECT citus_add_node('localhost', 9703)")"
check "it holds the catalogs" "4" "$(q 9703 postgres -c "SELECT count(*) FROM pg_labels.tools")"
R3=00000000-0000-0000-0000-0000000000c3
q 9703 postgres -c "GRANT USAGE ON SCHEMA pg_labels TO agent_svc" 2>/dev/null || true
q 9703 agent_svc -c "INSERT INTO pg_labels.runs (id, scope) VALUES ('$R3', 'acme/ops')" >/dev/null
check "a writer through it is judged the same (23L04)" "23L04" \
    "$(sqlstate 9703 agent_svc "INSERT INTO pg_labels.steps (run_id, kind, tool) VALUES ('$R3', 'tool_called', 'no.such.tool')")"

echo "== the race across nodes: tool calls against concurrent untrusted data (tests/concurrency)"
# the concurrency suite's own client scripts, on 40 runs spread over the workers, from clients of
# the coordinator and of a worker at once; then its check, read through the coordinator (each
# run's steps are on one node, so their commit times compare)
q $C postgres <<'SQL' >/dev/null
INSERT INTO pg_labels.tools (name, effect) VALUES ('stress.wipe', 'destructive'), ('stress.read', 'read');
INSERT INTO pg_labels.runs (id, scope) SELECT md5(i::text)::uuid, 'acme/ops' FROM generate_series(1, 40) i;
CREATE TABLE refused (run uuid, at timestamptz DEFAULT clock_timestamp());
SELECT create_reference_table('refused');
CREATE FUNCTION try_wipe(run uuid) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO pg_labels.steps (run_id, kind, tool) VALUES (run, 'tool_called', 'stress.wipe');
EXCEPTION WHEN SQLSTATE '23L02' THEN
    INSERT INTO refused VALUES (run);
END $$;
SQL
storm=("$ROOT/tests/concurrency/call.sql@10" "$ROOT/tests/concurrency/input.sql@1" "$ROOT/tests/concurrency/noise.sql@4")
# (pgbench counts as failed a transaction ended by a serialization failure or a deadlock, and
# says which: a deadlock across nodes is Citus' distributed deadlock detection at work)
bench() { "$PGBIN/pgbench" -n -c 4 -j 2 -T "${STRESS_SECONDS:-10}" -h localhost -p "$1" -U postgres --failures-detailed \
              $(printf -- '-f %s ' "${storm[@]}") postgres 2>&1 | grep -E "^number of (transactions actually|failed|serialization|deadlock)" | tr '\n' ' '; }
bench $C >"$CITUS_BASE/b1" & bench 9701 >"$CITUS_BASE/b2"; wait
echo "pgbench through the coordinator: $(cat "$CITUS_BASE/b1")"
echo "pgbench through a worker: $(cat "$CITUS_BASE/b2")"
out=$(q $C postgres -F '|' -v citus=1 -f "$ROOT/tests/concurrency/check.sql" | grep -v '^$')
echo "$out"
read -r allowed refused inputs reads untrusted untimed violations mismatched interleaved < <(echo $out | tr '|' ' ')
check "no destructive call committed after its run's untrusted data (commit order)" "0" "$violations"
check "every run carries the union of its steps" "0" "$mismatched"
# a refusal decided on a worker is in that worker's server log only (README, Refused writes)
logged=$(cat "$CITUS_BASE"/*/server.log | python3 -c '
import json, sys
n = 0
for line in sys.stdin.buffer:
    text = line.decode("utf-8", "replace")
    at = text.find("pg_labels: refused {")
    if at >= 0:
        rec = json.loads(text[at + len("pg_labels: refused "):])
        if rec.get("tool") == "stress.wipe":
            n += rec.get("count", 1)
print(n)')
check "each refused call is counted in a LOG line of the node that decided" "$refused" "$logged"
if [ "${allowed:-0}" -gt 0 ] && [ "${refused:-0}" -gt 0 ] && [ "${interleaved:-0}" -gt 0 ]; then
    echo "ok   the storm exercised both outcomes ($allowed wipes allowed, $refused refused)"
else
    echo "FAIL the storm did not exercise both outcomes ($allowed allowed, $refused refused, $interleaved interleaved)"
    fails=$((fails + 1))
fi

echo "== a run's shard moving between workers keeps its step ids in decision order"
SHARD=$(q $C postgres -c "SELECT get_shard_id_for_distribution_column('pg_labels.runs', '$R1')")
at() { q $C postgres -c "SELECT nodeport FROM pg_dist_shard_placement WHERE shardid = $SHARD"; }
move() { # to port
    q $C postgres -c "SELECT citus_move_shard_placement($SHARD, 'localhost', $(at), 'localhost', $1, shard_transfer_mode => 'block_writes')" >/dev/null
    q $C agent_svc -c "INSERT INTO pg_labels.steps (run_id, kind, args) VALUES ('$R1', 'planned', '{\"after_move_to\": $1}')" >/dev/null
}
# to the newest worker (the highest group id), then to each older one
move 9703; [ "$(at)" = 9701 ] || move 9701; move 9702
check "the run's steps were written on three workers" "3" \
    "$(q $C postgres -c "SELECT count(*) FROM pg_labels.steps WHERE run_id = '$R1' AND args ? 'after_move_to'")"
check "its ids follow the order its steps were written in" "t" \
    "$(q $C postgres -c "SELECT bool_and(ok) FROM (SELECT id > lag(id, 1, 0::bigint) OVER (ORDER BY chain_rank) AS ok
        FROM (SELECT id, row_number() OVER (ORDER BY created_at, id) AS chain_rank FROM pg_labels.steps WHERE run_id = '$R1') s) o")"
check "verify() finds its chain intact" "t" "$(q $C agent_svc -c "SELECT intact FROM pg_labels.verify('$R1')")"
check "no id is taken twice" "0" "$(q $C postgres -c "SELECT count(*) FROM (SELECT id FROM pg_labels.steps GROUP BY id HAVING count(*) > 1) d")"
# (what a failure would show: the steps whose ids are taken twice, and where their shards are)
q $C postgres -F ' ' -c "SELECT s.id, s.id >> 32 AS shard, s.run_id, s.kind, s.actor, s.created_at, s.args
    FROM pg_labels.steps s WHERE s.id IN (SELECT id FROM pg_labels.steps GROUP BY id HAVING count(*) > 1) ORDER BY s.id, s.created_at"

echo "== rebalancing onto the third worker while a writer goes on"
before=$(q $C postgres -c "SELECT count(*) FROM pg_labels.steps")
# block_writes: PostgreSQL 15's logical replication refuses to apply into a table under
# row-level security for a subscription owner that is not a superuser, which the role Citus
# makes for a move is not; copying with writes to the moving shard held meanwhile works
q $C postgres -c "SELECT citus_rebalance_start(shard_transfer_mode => 'block_writes')" >/dev/null
"$PGBIN/pgbench" -n -c 2 -j 2 -T "${REBALANCE_SECONDS:-20}" -h localhost -p $C -U postgres \
    -f "$ROOT/tests/concurrency/noise.sql" postgres >"$CITUS_BASE/b3" 2>&1 || true
q $C postgres -c "SELECT citus_rebalance_wait()" >/dev/null
written=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$CITUS_BASE/b3")
failed=$(sed -n 's/^number of failed transactions: \([0-9]*\).*/\1/p' "$CITUS_BASE/b3")
echo "pgbench during the rebalance: ${written:-?} steps written, ${failed:-?} failed"
check "the writer saw no error" "0" "${failed:-?}"
check "no step is lost" "$((before + ${written:-0}))" "$(q $C postgres -c "SELECT count(*) FROM pg_labels.steps")"
check "the third worker holds shards now" "t" \
    "$(q $C postgres -c "SELECT count(*) > 0 FROM pg_dist_placement p JOIN pg_dist_node n USING (groupid) WHERE n.nodeport = 9703")"
moved=$(q $C postgres -c "SELECT r.id FROM pg_labels.runs r WHERE get_shard_id_for_distribution_column('pg_labels.runs', r.id) IN
    (SELECT shardid FROM pg_dist_placement p JOIN pg_dist_node n USING (groupid) WHERE n.nodeport = 9703)
    AND r.labels ? 'origin:slack' LIMIT 1")
check "a run whose shard moved is judged the same there (23L02)" "23L02" \
    "$(sqlstate $C agent_svc "INSERT INTO pg_labels.steps (run_id, kind, tool) VALUES ('$moved', 'tool_called', 'stress.wipe')")"
check "... and its labels are the union of its steps" "0" \
    "$(q $C postgres -v citus=1 -f "$ROOT/tests/concurrency/check.sql" -F '|' | grep -v '^$' | sed -n 3p)"

echo
if [ "$fails" -gt 0 ]; then
    echo "citus: $fails check(s) failed"
    exit 1
fi
echo "citus: all checks passed"
