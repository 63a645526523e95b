//! The publication check (BEFORE INSERT on `pg_labels.agent_versions`): the declared steps are
//! compared with the tool catalog by [`pg_labels_core::flow`]. A version that lets untrusted
//! data reach a `destructive` or `financial` tool is refused (`untrusted_to_irreversible`,
//! naming the path); the `reversible_write` steps reached by untrusted data are recorded in
//! `needs_approval`, for analysts and for the approval the gate will ask at run time.

use crate::pg::columns::{col, Columns};
use crate::pg::datum::{text_datum, Jsonb, Timestamp};
use crate::pg::error::{Error, Result};
use crate::pg::fmgr::Call;
use crate::pg::role::current_user_name;
use crate::pg::sys::Datum;
use crate::pg::trigger::{Op, Spec, Timing, Trigger};
use crate::pg::tuple::not_null;
use crate::platform::context::{refuse_given, trail_time};
use crate::platform::tools;
use crate::sql_function;
use pg_labels_core::flow::{self, Analysis, DeclError, Path, StepDecl, ToolInfo};
use pg_labels_core::refusal;
use std::collections::HashMap;

/// Most paths a refusal's DETAIL lists.
const LISTED: usize = 10;

static VERSION_COLUMNS: Columns<7> = Columns::new([
    col::<crate::types::datum::ScopeBuf>(c"scope"),
    col::<String>(c"agent"),
    col::<i32>(c"version"),
    col::<Jsonb>(c"steps"),
    col::<Jsonb>(c"needs_approval"),
    col::<String>(c"published_by"),
    col::<Timestamp>(c"published_at"),
]);

const SPEC: Spec = Spec {
    function: "pg_labels.agent_versions_insert()",
    tables: &["agent_versions"],
    timing: Timing::Before,
    row: true,
    ops: &[Op::Insert],
};

const FORMAT_HINT: &str = "Declared steps look like {\"steps\": [{\"id\": \"read\", \"tool\": \"tickets.read\", \
\"inputs\": [\"source:webhook\"]}, {\"id\": \"refund\", \"tool\": \"stripe.refund\", \"inputs\": [\"read\"]}]}: \
inputs name earlier steps or the sources source:slack, source:webhook, source:event (untrusted) and source:agent.";

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

sql_function! {
    /// BEFORE INSERT FOR EACH ROW on pg_labels.agent_versions.
    fn pgl_agent_versions_insert(call) {
        crate::platform::refused::guarded("agent_version", || agent_versions_insert(&call))
    }
}

fn agent_versions_insert(call: &Call<'_>) -> Result<Datum> {
    let trigger = Trigger::fired(call, &SPEC)?;
    let row = trigger.row();
    if crate::platform::context::restoring() {
        return Ok(row.unchanged());
    }
    let [c_scope, c_agent, c_version, c_steps, c_approval, c_by, c_at] =
        VERSION_COLUMNS.of(&row)?;
    let agent: String = row.must(c_agent, "agent_versions")?;
    let version: i32 = row.must(c_version, "agent_versions")?;
    if version <= 0 {
        return Err(refusal::version_not_positive(&agent, version).into());
    }
    // a writer publishes only in a scope its grants reach, and only versions of an agent
    // whose versions are all there (an agent's name is not another company's to take: a
    // version published elsewhere would keep its own company from that version number)
    if let Some(scope) = row.get::<crate::types::datum::ScopeBuf>(c_scope)? {
        let acting = crate::platform::grants::acting();
        let reach = crate::platform::grants::reach(acting)?;
        let role = || crate::pg::role::role_name(acting).unwrap_or_default();
        if !reach.reaches(&scope.0) {
            return Err(refusal::act_not_granted(&role(), "publish a version", &scope.0).into());
        }
        if !reach.everywhere && !agent_reached(trigger.owner(), &agent, &reach)? {
            return Err(refusal::agent_not_granted(&role(), &agent).into());
        }
    }
    let writer = current_user_name();
    if row.get::<&str>(c_by)?.is_some_and(|a| a != writer) {
        return Err(refuse_given(
            "agent_versions",
            "published_by",
            "the role that published the version",
        ));
    }
    // on a Citus node (a copy of the reference table) the time was filled where the statement
    // entered the cluster, the same for every copy
    if !crate::platform::context::on_shard() && row.get::<Timestamp>(c_at)? != Some(trail_time()) {
        return Err(refuse_given(
            "agent_versions",
            "published_at",
            "the time the database published it",
        ));
    }
    let json = row
        .get::<Jsonb>(c_steps)?
        .ok_or_else(|| not_null("agent_versions", "steps"))?
        .text();
    let who = format!("agent {agent} version {version}");
    let bad = |e: DeclError| -> Error {
        match e {
            DeclError::UnknownTool { .. } => {
                refusal::declaration_unknown_tool(&who, &e.to_string())
            }
            _ => refusal::declaration_invalid(&who, &e.to_string(), FORMAT_HINT),
        }
        .into()
    };
    let steps = flow::parse(&json).map_err(bad)?;

    // the catalog, each tool looked up once
    let namespace = trigger.namespace();
    let mut seen: HashMap<String, Option<ToolInfo>> = HashMap::new();
    let mut failure: Option<Error> = None;
    let analysis = flow::analyze(&steps, |name| {
        if let Some(t) = seen.get(name) {
            return *t;
        }
        let info = match tools::tool(namespace, name) {
            Ok(t) => t.and_then(|t| {
                t.effect.map(|effect| ToolInfo {
                    effect,
                    trusted_output: t.trusted_output,
                })
            }),
            Err(e) => {
                failure.get_or_insert(e);
                None
            }
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
        let reached: Vec<String> = analysis
            .irreversible
            .iter()
            .take(LISTED)
            .map(|p| describe(p, &steps, &analysis))
            .collect();
        return Err(refusal::publication_refused(
            &who,
            &format!(
                "{} tool {}: {}",
                analysis.tools[s].effect.name(),
                steps[s].tool,
                first.render(&steps)
            ),
            &reached,
            analysis.irreversible.len().saturating_sub(LISTED),
        )
        .into());
    }

    Ok(row.modified(&[
        (
            c_approval,
            Some(Jsonb::from_text(&approvals_json(&analysis, &steps))?.0),
        ),
        (c_by, Some(text_datum(&writer)?)),
    ]))
}

/// The scopes an agent's versions were published in.
static AGENT_SCOPES: crate::pg::spi::SavedPlan = crate::pg::spi::SavedPlan::new(
    c"SELECT DISTINCT scope FROM pg_labels.agent_versions WHERE agent = $1",
);

/// Does every scope `agent` was published in lie within `reach`?
fn agent_reached(
    owner: crate::pg::sys::Oid,
    agent: &str,
    reach: &crate::platform::grants::Reach,
) -> Result<bool> {
    crate::pg::role::as_owner(owner, || {
        crate::pg::spi::with_spi(|spi| {
            let rows = AGENT_SCOPES.execute(
                spi,
                &[crate::pg::sys::types::TEXTOID],
                &[Some(text_datum(agent)?)],
                true,
                0,
            )?;
            for i in 0..rows.len() {
                if let Some(s) = rows.get::<crate::types::datum::ScopeBuf>(i, 1)? {
                    if !reach.reaches(&s.0) {
                        return Ok(false);
                    }
                }
            }
            Ok(true)
        })
    })
}
