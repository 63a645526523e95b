-- pg_labels: the platform's SQL functions over its tables, and dropping the extension.

--------------------------------------------------------------------------------------------
-- The gate and approval requests
--------------------------------------------------------------------------------------------

CREATE FUNCTION pg_labels.gate(run uuid, tool text, args jsonb DEFAULT NULL,
                               labels @extschema@.labelset DEFAULT '{}')
RETURNS TABLE (decision text, rule text, reason text, step_id bigint)
LANGUAGE plpgsql VOLATILE
-- PL/pgSQL (not a body checked when it is made): on a Citus worker this function exists before
-- the shell of pg_labels.steps does
AS $gate$
BEGIN
    RETURN QUERY
    INSERT INTO pg_labels.steps (run_id, kind, tool, args, labels)
    VALUES (run, 'gate_decided', tool, args, labels)
    RETURNING steps.decision, steps.rule, steps.reason, steps.id;
END
$gate$;
COMMENT ON FUNCTION pg_labels.gate(uuid, text, jsonb, @extschema@.labelset) IS
    'Judges a proposed tool call by the rules the trigger applies to tool_called, without raising: allow, ask or block; records a gate_decided step';

CREATE FUNCTION pg_labels.request_approval(run uuid, tool text, args jsonb DEFAULT NULL,
                                           labels @extschema@.labelset DEFAULT '{}', reason text DEFAULT NULL,
                                           ttl interval DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql VOLATILE
AS $request$
DECLARE
    made bigint;
BEGIN
    INSERT INTO pg_labels.steps (run_id, kind, tool, args, labels, reason, expires_at)
    VALUES (run, 'approval_requested', tool, args, labels, reason, pg_catalog.now() + ttl)
    RETURNING steps.id INTO made;
    RETURN made;
END
$request$;
COMMENT ON FUNCTION pg_labels.request_approval(uuid, text, jsonb, @extschema@.labelset, text, interval) IS
    'Records an approval_requested step for one concrete call (run, tool, args), announced on the channel pg_labels_approvals at commit; it expires undecided after ttl (NULL: never); returns its id';


--------------------------------------------------------------------------------------------
-- DROP EXTENSION: refused while the trail holds rows (with CASCADE too), so that dropping the
-- extension never destroys the trail silently
--------------------------------------------------------------------------------------------

CREATE FUNCTION pg_labels.on_drop_extension() RETURNS event_trigger
    AS 'MODULE_PATHNAME', 'pgl_on_drop_extension' LANGUAGE C;
COMMENT ON FUNCTION pg_labels.on_drop_extension() IS
    'Before DROP EXTENSION pg_labels: refuses while the trail holds rows';
CREATE EVENT TRIGGER pg_labels_drop_extension ON ddl_command_start
    WHEN TAG IN ('DROP EXTENSION')
    EXECUTE FUNCTION pg_labels.on_drop_extension();
COMMENT ON EVENT TRIGGER pg_labels_drop_extension IS
    'Refuses DROP EXTENSION pg_labels while the trail holds rows';

