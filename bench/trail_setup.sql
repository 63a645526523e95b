-- Set-up for the trail-insert benchmark (scripts/bench.sh): the same tool_called insert into
--   (a) pg_labels.steps, with enforcement;
--   (b) bench_plain.steps, an identical table (columns, defaults, constraints, indexes) with no
--       trigger;
--   (c) bench_plpgsql.steps, the same rules as a straightforward PL/pgSQL trigger over ltree
--       and text[]: what a user would otherwise build.
\set ON_ERROR_STOP on
CREATE EXTENSION IF NOT EXISTS ltree;

INSERT INTO pg_labels.tools (name, effect) VALUES ('tickets.read', 'read'), ('tickets.update', 'reversible_write');
INSERT INTO pg_labels.runs (id, scope) SELECT md5(i::text)::uuid, 'acme/platform' FROM generate_series(1, 100) i;

CREATE SCHEMA bench_plain;
CREATE TABLE bench_plain.steps (LIKE pg_labels.steps INCLUDING ALL);
-- pg_labels takes a step's id from its sequence in the trigger; the plain table from an identity
ALTER TABLE bench_plain.steps ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY;

CREATE SCHEMA bench_plpgsql;
CREATE TABLE bench_plpgsql.tools (
    name text PRIMARY KEY,
    effect text NOT NULL CHECK (effect IN ('read', 'reversible_write', 'destructive', 'financial')),
    trusted_output boolean NOT NULL DEFAULT false
);
CREATE TABLE bench_plpgsql.runs (
    id uuid PRIMARY KEY,
    scope ltree NOT NULL,
    labels text[] NOT NULL DEFAULT '{}'
);
CREATE TABLE bench_plpgsql.steps (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    run_id uuid NOT NULL,
    kind text NOT NULL CHECK (kind IN ('input', 'planned', 'gate_decided', 'approval_requested',
                                       'approval_decided', 'tool_called', 'tool_result', 'context_read')),
    tool text,
    labels text[] NOT NULL DEFAULT '{}',
    args jsonb,
    decision text CHECK (decision IN ('allow', 'ask', 'block', 'granted', 'denied')),
    rule text,
    reason text,
    request_id bigint,
    origin_run uuid,
    artifact_id uuid,
    digest text,
    share_id bigint,
    crossing_ids bigint[],
    actor text NOT NULL DEFAULT current_user,
    created_at timestamptz NOT NULL DEFAULT now(),
    CHECK (kind <> 'context_read' OR artifact_id IS NOT NULL)
);
CREATE INDEX ON bench_plpgsql.steps (run_id, id);
CREATE INDEX ON bench_plpgsql.steps USING gin (labels);
CREATE INDEX ON bench_plpgsql.steps (artifact_id) WHERE artifact_id IS NOT NULL;
CREATE UNIQUE INDEX ON bench_plpgsql.steps (request_id) WHERE kind = 'approval_decided';
CREATE UNIQUE INDEX ON bench_plpgsql.steps (request_id) WHERE kind = 'tool_called';
INSERT INTO bench_plpgsql.tools (name, effect) VALUES ('tickets.read', 'read'), ('tickets.update', 'reversible_write');
INSERT INTO bench_plpgsql.runs (id, scope, labels)
SELECT md5(i::text)::uuid, 'acme.platform', '{area:acme/platform}' FROM generate_series(1, 100) i;

-- the scope a scope label names, as an ltree ('' for the installation), NULL for other labels
CREATE FUNCTION bench_plpgsql.label_scope(label text) RETURNS ltree
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT CASE
        WHEN label = 'installation' THEN ''::ltree
        WHEN label LIKE 'company:%' OR label LIKE 'area:%' THEN replace(split_part(label, ':', 2), '/', '.')::ltree
    END
$$;

CREATE FUNCTION bench_plpgsql.steps_insert() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    run record;
    tool_effect text;
    carried text[];
    escaping text[];
    untrusted boolean;
    approval bigint;
BEGIN
    -- serialize writers to the run, and read what it carries
    SELECT scope, labels INTO run FROM bench_plpgsql.runs WHERE id = NEW.run_id FOR NO KEY UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'run % does not exist', NEW.run_id USING ERRCODE = '23503';
    END IF;
    SELECT coalesce(array_agg(DISTINCT l ORDER BY l), '{}') INTO carried FROM unnest(run.labels || NEW.labels) l;
    IF NEW.kind IN ('tool_called', 'gate_decided') THEN
        SELECT array_agg(l) INTO escaping FROM unnest(carried) l
         WHERE bench_plpgsql.label_scope(l) IS NOT NULL AND NOT run.scope @> bench_plpgsql.label_scope(l);
        untrusted := EXISTS (SELECT FROM unnest(carried) l WHERE l LIKE 'origin:%');
        SELECT effect INTO tool_effect FROM bench_plpgsql.tools WHERE name = NEW.tool;
        IF escaping IS NOT NULL THEN
            RAISE EXCEPTION 'data_barrier: run % carries %', NEW.run_id, escaping
                USING ERRCODE = '23L01', CONSTRAINT = 'data_barrier';
        ELSIF tool_effect IS NULL THEN
            RAISE EXCEPTION 'unknown_tool: %', NEW.tool USING ERRCODE = '23L04', CONSTRAINT = 'unknown_tool';
        ELSIF untrusted AND tool_effect IN ('destructive', 'financial') THEN
            RAISE EXCEPTION 'untrusted_to_irreversible: %', NEW.tool
                USING ERRCODE = '23L02', CONSTRAINT = 'untrusted_to_irreversible';
        ELSIF untrusted AND tool_effect = 'reversible_write' THEN
            SELECT req.id INTO approval FROM bench_plpgsql.steps req
             WHERE req.run_id = NEW.run_id AND req.kind = 'approval_requested' AND req.tool = NEW.tool
               AND req.args IS NOT DISTINCT FROM NEW.args
               AND EXISTS (SELECT FROM bench_plpgsql.steps d WHERE d.request_id = req.id
                            AND d.kind = 'approval_decided' AND d.decision = 'granted')
               AND NOT EXISTS (SELECT FROM bench_plpgsql.steps u WHERE u.request_id = req.id AND u.kind = 'tool_called')
             ORDER BY req.id LIMIT 1;
            IF approval IS NULL THEN
                RAISE EXCEPTION 'approval_required: %', NEW.tool USING ERRCODE = '23L03', CONSTRAINT = 'approval_required';
            END IF;
            NEW.request_id := approval;
        END IF;
        NEW.decision := 'allow';
    END IF;
    IF carried IS DISTINCT FROM run.labels THEN
        UPDATE bench_plpgsql.runs SET labels = carried WHERE id = NEW.run_id;
    END IF;
    NEW.actor := current_user;
    RETURN NEW;
END $$;
CREATE TRIGGER steps_insert BEFORE INSERT ON bench_plpgsql.steps
    FOR EACH ROW EXECUTE FUNCTION bench_plpgsql.steps_insert();

-- the baseline refuses what pg_labels refuses
DO $$
BEGIN
    BEGIN
        INSERT INTO bench_plpgsql.steps (run_id, kind, tool, labels)
        VALUES (md5('1')::uuid, 'tool_called', 'tickets.read', '{area:acme/finance}');
        RAISE EXCEPTION 'baseline did not refuse';
    EXCEPTION WHEN SQLSTATE '23L01' THEN NULL;
    END;
END $$;
VACUUM ANALYZE;
