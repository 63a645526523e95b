//! The publication check (BEFORE INSERT on `pg_labels.agent_versions`): the declared steps are
//! compared with the tool catalog by [`pg_labels_core::flow`]. A version that lets untrusted
//! data reach a `destructive` or `financial` tool is refused (`untrusted_to_irreversible`,
//! naming the path); the `reversible_write` steps reached by untrusted data are recorded in
//! `needs_approval`, for analysts and for the approval the gate will ask at run time.

use crate::error::{Error, Result, CHECK_VIOLATION, INVALID_PARAMETER_VALUE};
use crate::heap;
use crate::refusal::{self, UNKNOWN_TOOL, UNTRUSTED_TO_IRREVERSIBLE};
use crate::spi::{self, current_user_name, Columns};
use crate::sql_function;
use crate::trail::{not_null, Row, TRIGGER_PROTOCOL};
use pg_labels_core::flow::{self, Analysis, DeclError, Path, StepDecl, ToolInfo};
use pg_labels_core::rules::Effect;
use pgrx::pg_sys::{self, Datum};
use std::collections::HashMap;

/// Most paths a refusal's DETAIL lists.
const LISTED: usize = 10;

static VERSION_COLUMNS: Columns<5> = Columns::new([
    c"agent",
    c"version",
    c"steps",
    c"needs_approval",
    c"published_by",
]);

const FORMAT_HINT: &str = "Declared steps look like {\"steps\": [{\"id\": \"read\", \"tool\": \"tickets.read\", \
\"inputs\": [\"source:webhook\"]}, {\"id\": \"refund\", \"tool\": \"stripe.refund\", \"inputs\": [\"read\"]}]}: \
inputs name earlier steps or the sources source:slack, source:webhook, source:event (untrusted) and source:agent.";

/// The text of a `jsonb` datum, by its output function.
unsafe fn jsonb_text(d: Datum) -> String {
    unsafe {
        let (mut out, mut varlena) = (pg_sys::Oid::INVALID, false);
        pg_sys::getTypeOutputInfo(pg_sys::JSONBOID, &mut out, &mut varlena);
        let p = pg_sys::OidOutputFunctionCall(out, d);
        std::ffi::CStr::from_ptr(p).to_string_lossy().into_owned()
    }
}

fn describe(p: &Path, steps: &[StepDecl], a: &Analysis) -> String {
    let s = p.step();
    format!(
        "step {} ({} tool {}): {}",
        steps[s].id,
        a.tools[s].effect.name(),
        steps[s].tool,
        p.render(steps)
    )
}

/// `needs_approval`: `[{"step": ..., "tool": ..., "path": ...}, ...]`.
fn approvals_json(a: &Analysis, steps: &[StepDecl]) -> String {
    let items: Vec<serde_json::Value> = a
        .needs_approval
        .iter()
        .map(|p| {
            serde_json::json!({
                "step": steps[p.step()].id,
                "tool": steps[p.step()].tool,
                "path": p.render(steps),
            })
        })
        .collect();
    serde_json::Value::Array(items).to_string()
}

/// A `jsonb` datum from JSON text, by the input function.
unsafe fn jsonb_datum(text: &str) -> Result<Datum> {
    unsafe {
        let (mut input, mut ioparam) = (pg_sys::Oid::INVALID, pg_sys::Oid::INVALID);
        pg_sys::getTypeInputInfo(pg_sys::JSONBOID, &mut input, &mut ioparam);
        let c = std::ffi::CString::new(text)
            .map_err(|_| Error::new(INVALID_PARAMETER_VALUE, "NUL in JSON"))?;
        Ok(pg_sys::OidInputFunctionCall(
            input,
            c.as_ptr() as *mut _,
            ioparam,
            -1,
        ))
    }
}

sql_function! {
    /// BEFORE INSERT FOR EACH ROW on pg_labels.agent_versions.
    fn pgl_agent_versions_insert(fc) {
        let row = Row::of(fc, "pg_labels.agent_versions_insert()")?;
        if !row.is_before_row() || row.op() != pg_sys::TRIGGER_EVENT_INSERT {
            return Err(Error::new(TRIGGER_PROTOCOL, "pg_labels.agent_versions_insert() must fire BEFORE INSERT FOR EACH ROW"));
        }
        let [c_agent, c_version, c_steps, c_approval, c_by] = VERSION_COLUMNS.of(row.relid(), row.desc)?;
        let agent = row.get(c_agent).map(|d| spi::datum_text(d))
            .ok_or_else(|| not_null("agent_versions", "agent"))?;
        let version = row.get(c_version).map(|d| d.value() as i32)
            .ok_or_else(|| not_null("agent_versions", "version"))?;
        if version <= 0 {
            return Err(Error::new(CHECK_VIOLATION, format!("version {version} of agent {agent} is not positive"))
                .detail("Versions are numbered from 1.")
                .constraint("agent_versions_version_check")
                .table("pg_labels", "agent_versions"));
        }
        let json = jsonb_text(row.get(c_steps).ok_or_else(|| not_null("agent_versions", "steps"))?);
        let who = format!("agent {agent} version {version}");
        let bad = |e: DeclError| {
            let (state, rule) = match e {
                DeclError::UnknownTool { .. } => (UNKNOWN_TOOL, Some("unknown_tool")),
                _ => (INVALID_PARAMETER_VALUE, None),
            };
            let mut err = Error::new(state, match rule {
                Some(r) => format!("{r}: {who} is not published: {e}"),
                None => format!("{who} is not published: its declared steps are invalid"),
            })
            .detail(match rule {
                Some(_) => "Publication checks every declared step against pg_labels.tools: a tool absent from it is refused (fail closed).".to_string(),
                None => format!("In the declared steps, {e}."),
            })
            .hint(match rule {
                Some(_) => "Add the tool to pg_labels.tools with its effect before publishing a version that calls it.",
                None => FORMAT_HINT,
            })
            .table("pg_labels", "agent_versions");
            if let Some(r) = rule {
                err = err.constraint(r);
            }
            err
        };
        let steps = flow::parse(&json).map_err(bad)?;

        // the catalog, each tool looked up once
        let namespace = row.namespace();
        let mut seen: HashMap<String, Option<ToolInfo>> = HashMap::new();
        let mut failure: Option<Error> = None;
        let analysis = flow::analyze(&steps, |name| {
            if let Some(t) = seen.get(name) {
                return *t;
            }
            let text = match spi::text_datum(name) {
                Ok(t) => t,
                Err(e) => { failure.get_or_insert(e); return None; }
            };
            let info = match heap::tool(namespace, text) {
                Ok(t) => t.and_then(|t| Effect::parse(&t.effect).map(|effect| ToolInfo { effect, trusted_output: t.trusted_output })),
                Err(e) => { failure.get_or_insert(e); None }
            };
            seen.insert(name.to_string(), info);
            info
        });
        if let Some(e) = failure {
            return Err(e);
        }
        let analysis = analysis.map_err(bad)?;

        if let Some(first) = analysis.irreversible.first() {
            let s = first.step();
            let mut detail: Vec<String> = analysis.irreversible.iter().take(LISTED)
                .map(|p| format!("Untrusted data reaches {}.", describe(p, &steps, &analysis)))
                .collect();
            if analysis.irreversible.len() > LISTED {
                detail.push(format!("And {} more.", analysis.irreversible.len() - LISTED));
            }
            return Err(Error::new(UNTRUSTED_TO_IRREVERSIBLE, format!(
                "untrusted_to_irreversible: {who} is not published: untrusted data reaches {} tool {}: {}",
                analysis.tools[s].effect.name(), steps[s].tool, first.render(&steps)))
                .detail(detail.join(" "))
                .hint(refusal::PUBLICATION_HINT)
                .constraint("untrusted_to_irreversible")
                .table("pg_labels", "agent_versions"));
        }

        Ok(row.modified(&[
            (c_approval, Some(jsonb_datum(&approvals_json(&analysis, &steps))?)),
            (c_by, Some(spi::text_datum(&current_user_name())?)),
        ]))
    }
}
