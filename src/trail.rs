//! Enforcement on the way in: opening a run, and every step of the trail.
//!
//! `pgl_steps_insert` (BEFORE INSERT FOR EACH ROW on `pg_labels.steps`) does, for every step:
//! lock the run's row (as `FOR NO KEY UPDATE` does, held to commit, so concurrent writers to one
//! run are serialized and every check reads the labels the last committed step left; see
//! [`crate::heap`]), unite the step's
//! labels into the run's, judge `tool_called` and `gate_decided` steps by
//! [`pg_labels_core::rules::judge`], and write the verdict into the row. A refused tool call
//! raises its rule's error; a gate decision is recorded instead.

use crate::approval::DECIDING;
use crate::crossing;
use crate::error::{Error, Result, CHECK_VIOLATION};
use crate::fmgr::{datum_labelset, datum_scope, ret_labelset, ret_scope};
use crate::heap;
use crate::refusal::{self, FOREIGN_KEY_VIOLATION, INSUFFICIENT_PRIVILEGE};
use crate::sharing;
use crate::spi::{
    self, as_owner, current_user_name, result_datum, uuid_text, with_spi, Columns, SavedPlan,
};
use crate::sql_function;
use pg_labels_core::crossing::cover_each;
use pg_labels_core::rules::{self, Decision, Effect, ToolFacts};
use pg_labels_core::{label, labelset, scope, LabelSet};
use pgrx::pg_sys::{self, Datum, Oid};
use std::ffi::CStr;

static STEP_COLUMNS: Columns<15> = Columns::new([
    c"run_id",
    c"kind",
    c"tool",
    c"labels",
    c"args",
    c"decision",
    c"rule",
    c"reason",
    c"request_id",
    c"actor",
    c"origin_run",
    c"artifact_id",
    c"digest",
    c"share_id",
    c"crossing_ids",
]);

static GROW_LABELS: SavedPlan =
    SavedPlan::new(c"UPDATE pg_labels.runs SET labels = $2 WHERE id = $1");

/// An unused, granted approval of exactly this call (same run, tool and arguments).
static FIND_APPROVAL: SavedPlan = SavedPlan::new(
    c"SELECT req.id FROM pg_labels.steps req
       WHERE req.run_id = $1 AND req.kind = 'approval_requested'
         AND req.tool = $2 AND req.args IS NOT DISTINCT FROM $3
         AND EXISTS (SELECT FROM pg_labels.steps d
                      WHERE d.request_id = req.id AND d.kind = 'approval_decided' AND d.decision = 'granted')
         AND NOT EXISTS (SELECT FROM pg_labels.steps u
                          WHERE u.request_id = req.id AND u.kind = 'tool_called')
       ORDER BY req.id
       LIMIT 1",
);

static LISTENER: SavedPlan =
    SavedPlan::new(c"SELECT scope, agent FROM pg_labels.listeners WHERE id = $1");

static RUN_COLUMNS: Columns<6> = Columns::new([
    c"id",
    c"scope",
    c"labels",
    c"listener_id",
    c"agent",
    c"agent_version",
]);

static VERSION_SCOPE: SavedPlan =
    SavedPlan::new(c"SELECT scope FROM pg_labels.agent_versions WHERE agent = $1 AND version = $2");

/// The row a row-level trigger was fired for, with its relation.
pub(crate) struct Row {
    pub td: *mut pg_sys::TriggerData,
    pub desc: pg_sys::TupleDesc,
    pub tuple: pg_sys::HeapTuple,
}

pub(crate) const TRIGGER_PROTOCOL: crate::error::SqlState = *b"39P01";

impl Row {
    /// The trigger data of a call, checked to be the expected kind of trigger event.
    pub unsafe fn of(fc: pg_sys::FunctionCallInfo, name: &str) -> Result<Row> {
        unsafe {
            let ctx = (*fc).context;
            if ctx.is_null() || (*ctx).type_ != pg_sys::NodeTag::T_TriggerData {
                return Err(Error::new(
                    TRIGGER_PROTOCOL,
                    format!("{name} must be called as a trigger"),
                ));
            }
            let td = ctx as *mut pg_sys::TriggerData;
            let rel = (*td).tg_relation;
            Ok(Row {
                td,
                desc: (*rel).rd_att,
                tuple: (*td).tg_trigtuple,
            })
        }
    }

    pub unsafe fn event(&self) -> u32 {
        unsafe { (*self.td).tg_event }
    }

    pub unsafe fn is_before_row(&self) -> bool {
        unsafe {
            self.event() & pg_sys::TRIGGER_EVENT_TIMINGMASK == pg_sys::TRIGGER_EVENT_BEFORE
                && self.event() & pg_sys::TRIGGER_EVENT_ROW != 0
        }
    }

    pub unsafe fn op(&self) -> u32 {
        unsafe { self.event() & pg_sys::TRIGGER_EVENT_OPMASK }
    }

    pub unsafe fn namespace(&self) -> Oid {
        unsafe { (*(*(*self.td).tg_relation).rd_rel).relnamespace }
    }

    pub unsafe fn owner(&self) -> Oid {
        unsafe { (*(*(*self.td).tg_relation).rd_rel).relowner }
    }

    /// 1-based number of a column.
    pub unsafe fn col(&self, name: &CStr) -> Result<i32> {
        unsafe {
            let n = pg_sys::SPI_fnumber(self.desc, name.as_ptr());
            if n <= 0 {
                return Err(Error::new(
                    TRIGGER_PROTOCOL,
                    format!(
                        "pg_labels trigger on a table without column {}",
                        name.to_string_lossy()
                    ),
                ));
            }
            Ok(n)
        }
    }

    /// Value of a column of `tuple` (this row's, or the new row's of an update).
    pub unsafe fn get_in(&self, tuple: pg_sys::HeapTuple, col: i32) -> Option<Datum> {
        unsafe {
            let mut isnull = false;
            let d = pg_sys::SPI_getbinval(tuple, self.desc, col, &mut isnull);
            if isnull {
                None
            } else {
                Some(d)
            }
        }
    }

    pub unsafe fn get(&self, col: i32) -> Option<Datum> {
        unsafe { self.get_in(self.tuple, col) }
    }

    pub unsafe fn relid(&self) -> Oid {
        unsafe { (*(*self.td).tg_relation).rd_id }
    }

    /// All the columns of the row, read in one pass.
    pub unsafe fn deform(&self) -> Deformed {
        unsafe {
            let n = (*self.desc).natts as usize;
            let mut d = Deformed {
                values: vec![Datum::from(0usize); n],
                nulls: vec![true; n],
            };
            pg_sys::heap_deform_tuple(
                self.tuple,
                self.desc,
                d.values.as_mut_ptr(),
                d.nulls.as_mut_ptr(),
            );
            d
        }
    }

    pub unsafe fn attr(&self, col: i32) -> &pg_sys::FormData_pg_attribute {
        unsafe { &*(*self.desc).attrs.as_ptr().add(col as usize - 1) }
    }

    /// The row with some columns replaced (`None`: NULL), as the trigger's return value.
    pub unsafe fn modified(&self, changes: &[(i32, Option<Datum>)]) -> Datum {
        unsafe {
            let mut cols: Vec<i32> = changes.iter().map(|c| c.0).collect();
            let mut values: Vec<Datum> = changes
                .iter()
                .map(|c| c.1.unwrap_or(Datum::from(0usize)))
                .collect();
            let mut nulls: Vec<bool> = changes.iter().map(|c| c.1.is_none()).collect();
            let t = pg_sys::heap_modify_tuple_by_cols(
                self.tuple,
                self.desc,
                cols.len() as i32,
                cols.as_mut_ptr(),
                values.as_mut_ptr(),
                nulls.as_mut_ptr(),
            );
            Datum::from(t)
        }
    }
}

/// A row's columns, deformed.
pub(crate) struct Deformed {
    values: Vec<Datum>,
    nulls: Vec<bool>,
}

impl Deformed {
    /// Column `col` (1-based), `None` when NULL.
    pub fn get(&self, col: i32) -> Option<Datum> {
        let i = (col as usize).checked_sub(1)?;
        match self.nulls.get(i) {
            Some(false) => self.values.get(i).copied(),
            _ => None,
        }
    }
}

pub(crate) fn not_null(table: &str, column: &str) -> Error {
    Error::new(*b"23502", format!("null value in column \"{column}\" of relation \"{table}\" violates not-null constraint"))
        .table("pg_labels", table)
}

/// A `scope` datum's path, owned.
unsafe fn scope_path(d: Datum) -> Result<Vec<u8>> {
    unsafe { datum_scope(d) }.map(<[u8]>::to_vec)
}

fn text_of(d: Datum) -> String {
    unsafe { spi::datum_text(d) }
}

sql_function! {
    /// BEFORE INSERT FOR EACH ROW on pg_labels.steps.
    fn pgl_steps_insert(fc) {
        let row = Row::of(fc, "pg_labels.steps_insert()")?;
        if !row.is_before_row() || row.op() != pg_sys::TRIGGER_EVENT_INSERT {
            return Err(Error::new(TRIGGER_PROTOCOL, "pg_labels.steps_insert() must fire BEFORE INSERT FOR EACH ROW"));
        }
        let [c_run, c_kind, c_tool, c_labels, c_args, c_decision, c_rule, c_reason, c_request, c_actor,
             c_origin_run, c_artifact, c_digest, c_share, c_crossings] =
            STEP_COLUMNS.of(row.relid(), row.desc)?;
        let values = row.deform();
        let get = |c: i32| values.get(c);

        let run_id = get(c_run).ok_or_else(|| not_null("steps", "run_id"))?;
        let kind = text_of(get(c_kind).ok_or_else(|| not_null("steps", "kind"))?);
        let tool_d = get(c_tool);
        let tool = tool_d.map(text_of);
        let labels_d = get(c_labels).ok_or_else(|| not_null("steps", "labels"))?;
        let step_labels = datum_labelset(labels_d)?;
        let labelset_type = row.attr(c_labels).atttypid;

        // Who writes the step. An approval decision is written by pg_labels.decide_approval()
        // on behalf of the person deciding, and only by it.
        let mut actor = current_user_name();
        if kind == "approval_decided" {
            let request = get(c_request).map(|d| d.value() as i64);
            match &*DECIDING.get() {
                Some((r, approver)) if Some(*r) == request => actor = approver.clone(),
                _ => {
                    return Err(Error::new(
                        INSUFFICIENT_PRIVILEGE,
                        "approval_required: approval decisions are recorded only by pg_labels.decide_approval()",
                    )
                    .detail(format!("Role {actor} inserted an approval_decided step directly."))
                    .hint("A DBA allows a person to decide with GRANT EXECUTE ON FUNCTION pg_labels.decide_approval(bigint, boolean, text) TO <role>.")
                    .constraint("approval_required")
                    .table("pg_labels", "steps"))
                }
            }
        }

        let judged_kind = kind == "tool_called" || kind == "gate_decided";
        let namespace = row.namespace();
        // Lock the run (serializing writers to it) and read what it carries; read the tool.
        let run = heap::lock_run(namespace, run_id)?.ok_or_else(|| {
            Error::new(FOREIGN_KEY_VIOLATION, format!("run {} does not exist", uuid_text(run_id)))
                .detail("Every step belongs to a run of pg_labels.runs.")
                .constraint("steps_run_id_fkey")
                .table("pg_labels", "steps")
        })?;
        // The tool's catalog entry, when the rules or the result's labels depend on it.
        let tool_entry = match tool_d {
            Some(name) if judged_kind || kind == "tool_result" => heap::tool(namespace, name)?,
            _ => None,
        };

        // A result of a tool whose output is not trusted came from outside.
        let mut own_labels = None;
        if kind == "tool_result" && !tool_entry.as_ref().is_some_and(|t| t.trusted_output) {
            let mut entry = vec![label::ORIGIN];
            entry.extend_from_slice(b"tool");
            let tool_origin = labelset::from_entries(vec![entry]);
            let with = step_labels.union(LabelSet::from_canonical(&tool_origin));
            if with != step_labels.body() {
                own_labels = Some(with);
            }
        }
        // A context read brings the artifact's labels, if it may read it at all.
        let read = match get(c_artifact) {
            None if kind == "context_read" => {
                return Err(Error::new(CHECK_VIOLATION, "a context_read step names the artifact it read")
                    .detail("artifact_id is NULL: context is passed by reference, as an artifact of pg_labels.artifacts.")
                    .hint("Record data that entered the run some other way as an input step with its labels.")
                    .constraint("steps_context_read_check")
                    .table("pg_labels", "steps"));
            }
            Some(artifact) if kind == "context_read" => {
                let r = sharing::read(row.owner(), run_id, &run.scope, artifact, get(c_origin_run), get(c_digest), step_labels)?;
                if r.labels != step_labels.body() {
                    own_labels = Some(r.labels.clone());
                }
                Some(r)
            }
            _ => None,
        };
        let own = own_labels.as_deref().map(LabelSet::from_canonical).unwrap_or(step_labels);
        let run_labels = LabelSet::from_canonical(&run.labels);
        let carried_body = run_labels.union(own);
        let carried = LabelSet::from_canonical(&carried_body);

        let effect = tool_entry.as_ref().map(|t| t.effect.clone());
        let verdict = if judged_kind {
            let facts = effect.as_deref().and_then(Effect::parse).map(|effect| ToolFacts { effect });
            let cover = |escaping: LabelSet<'_>| -> Result<std::result::Result<Vec<i64>, Vec<u8>>> {
                let active = crossing::active_into(row.owner(), &run.scope)?;
                Ok(cover_each(escaping, &run.scope, &crossing::views(&active)))
            };
            Some(rules::judge(&run.scope, carried, tool.as_deref(), facts, cover, || {
                as_owner(row.owner(), || with_spi(|| {
                    let n = FIND_APPROVAL.execute(
                        &[pg_sys::UUIDOID, pg_sys::TEXTOID, pg_sys::JSONBOID],
                        &[Some(run_id), tool_d, get(c_args)],
                        false,
                        1,
                    )?;
                    Ok(if n == 0 { None } else { result_datum(0, 1).map(|d| d.value() as i64) })
                }))
            })?)
        } else {
            None
        };

        if let Some(v) = &verdict {
            if kind == "tool_called" && v.decision != Decision::Allow {
                return Err(refusal::tool_call(&uuid_text(run_id), &run.scope, tool.as_deref(), effect.as_deref(), v));
            }
        }

        // Labels accumulate: the run now carries what this step brought.
        if carried_body != run.labels {
            as_owner(row.owner(), || with_spi(|| {
                GROW_LABELS.execute(&[pg_sys::UUIDOID, labelset_type], &[Some(run_id), Some(ret_labelset(&carried_body)?)], false, 0)
            }))?;
        }

        let mut changes: Vec<(i32, Option<Datum>)> = vec![(c_actor, Some(spi::text_datum(&actor)?))];
        if let Some(own) = &own_labels {
            changes.push((c_labels, Some(ret_labelset(own)?)));
        }
        // share and crossings are the database's to write
        let crossings_used = match (&verdict, &read) {
            (Some(v), _) => &v.crossings[..],
            (None, Some(r)) => &r.crossings[..],
            _ => &[],
        };
        changes.push((c_crossings, (!crossings_used.is_empty()).then(|| spi::int8_array_datum(crossings_used))));
        changes.push((c_share, read.as_ref().map(|r| Datum::from(r.share))));
        if let Some(r) = &read {
            changes.push((c_origin_run, Some(spi::uuid_datum(&r.origin_run))));
            changes.push((c_digest, Some(spi::text_datum(&r.digest)?)));
        }
        match &verdict {
            Some(v) => {
                changes.push((c_decision, Some(spi::text_datum(v.decision.name())?)));
                changes.push((c_rule, v.rule.map(|r| spi::text_datum(r.name())).transpose()?));
                changes.push((c_reason, v.reason.as_deref().map(spi::text_datum).transpose()?));
                changes.push((c_request, v.approval.filter(|_| kind == "tool_called").map(Datum::from)));
            }
            // decision and rule are the database's to write
            None if kind != "approval_decided" => {
                changes.push((c_decision, None));
                changes.push((c_rule, None));
            }
            None => {}
        }
        Ok(row.modified(&changes))
    }

    /// BEFORE INSERT FOR EACH ROW on pg_labels.runs: a run opened through a listener has the
    /// listener's scope (and agent); the run's own scope label joins its labels; a run whose
    /// initial labels escape its scope is not opened.
    fn pgl_runs_open(fc) {
        let row = Row::of(fc, "pg_labels.runs_open()")?;
        if !row.is_before_row() || row.op() != pg_sys::TRIGGER_EVENT_INSERT {
            return Err(Error::new(TRIGGER_PROTOCOL, "pg_labels.runs_open() must fire BEFORE INSERT FOR EACH ROW"));
        }
        let [c_id, c_scope, c_labels, c_listener, c_agent, c_version] = RUN_COLUMNS.of(row.relid(), row.desc)?;
        let run = row.get(c_id).map(|d| uuid_text(d)).unwrap_or_default();
        let mut changes: Vec<(i32, Option<Datum>)> = Vec::new();
        let given_scope = row.get(c_scope).map(|d| scope_path(d)).transpose()?;
        let mut agent = row.get(c_agent).map(text_of);
        let path = match row.get(c_listener) {
            Some(listener) => {
                let id = listener.value() as i64;
                let (listener_scope, listener_agent) = as_owner(row.owner(), || with_spi(|| {
                    let n = LISTENER.execute(&[pg_sys::INT8OID], &[Some(listener)], true, 1)?;
                    if n == 0 {
                        return Err(Error::new(FOREIGN_KEY_VIOLATION, format!("listener {id} does not exist"))
                            .constraint("runs_listener_id_fkey")
                            .table("pg_labels", "runs"));
                    }
                    Ok((scope_path(result_datum(0, 1).ok_or_else(|| Error::corrupt("scope"))?)?,
                        result_datum(0, 2).map(text_of)))
                }))?;
                // The event binding decides where the run is: the listener's scope, nothing
                // wider (it could carry more) and nothing else.
                match &given_scope {
                    Some(p) if *p != listener_scope => {
                        return Err(refusal::run_not_opened(&run, p, &[], Some((id, &listener_scope))));
                    }
                    Some(_) => {}
                    None => changes.push((c_scope, Some(ret_scope(&listener_scope)?))),
                }
                match (agent.clone(), listener_agent) {
                    (Some(a), Some(l)) if a != l => {
                        return Err(Error::new(CHECK_VIOLATION, format!(
                            "run {run} is opened for listener {id}, which is bound to agent {l}, not {a}"))
                            .hint("Check the event binding before assuming the listener is wrong: leave agent NULL to take the listener's.")
                            .constraint("runs_listener_check")
                            .table("pg_labels", "runs"));
                    }
                    (None, Some(l)) => {
                        changes.push((c_agent, Some(spi::text_datum(&l)?)));
                        agent = Some(l);
                    }
                    _ => {}
                }
                Some(listener_scope)
            }
            None => given_scope,
        };
        // A run of a published version has the version's scope ("the agent was published in
        // the right company and area").
        let path = match row.get(c_version) {
            Some(v) => {
                let version = v.value() as i32;
                let no_version = |what: String| Error::new(FOREIGN_KEY_VIOLATION, what)
                    .detail("A run opened for an agent version names an agent and a version of pg_labels.agent_versions.")
                    .constraint("runs_agent_version_fkey")
                    .table("pg_labels", "runs");
                let Some(a) = agent.clone() else {
                    return Err(no_version(format!("run {run} names agent version {version} but no agent")));
                };
                let agent_d = spi::text_datum(&a)?;
                let version_scope = as_owner(row.owner(), || with_spi(|| {
                    if VERSION_SCOPE.execute(&[pg_sys::TEXTOID, pg_sys::INT4OID], &[Some(agent_d), Some(v)], true, 1)? == 0 {
                        return Ok(None);
                    }
                    Ok(Some(scope_path(result_datum(0, 1).ok_or_else(|| Error::corrupt("scope"))?)?))
                }))?
                .ok_or_else(|| no_version(format!("agent {a} has no published version {version}")))?;
                match path {
                    Some(p) if p != version_scope => {
                        return Err(refusal::run_not_published(&run, &p, &a, version, &version_scope));
                    }
                    Some(p) => p,
                    None => {
                        changes.push((c_scope, Some(ret_scope(&version_scope)?)));
                        version_scope
                    }
                }
            }
            None => path.ok_or_else(|| not_null("runs", "scope"))?,
        };
        let given = match row.get(c_labels) {
            Some(d) => datum_labelset(d)?,
            None => LabelSet::EMPTY,
        };
        let own = labelset::from_entries(vec![scope::label_entry(&path)]);
        let initial = given.union(LabelSet::from_canonical(&own));
        let escaping = LabelSet::from_canonical(&initial).escaping(&path);
        if !escaping.is_empty() {
            return Err(refusal::run_not_opened(&run, &path, &escaping, None));
        }
        changes.push((c_labels, Some(ret_labelset(&initial)?)));
        Ok(row.modified(&changes))
    }
}
