//! Opening a run: `pg_labels.runs_open()`, BEFORE INSERT FOR EACH ROW on `pg_labels.runs`.
//! Gathers the listener and the agent version the run names, asks [`barrier::open_run`], and
//! writes the scope, agent and initial labels it returns (the run's own scope label joins its
//! labels). The run's id may be the service's; its opening time is the database's.

use crate::pg::columns::{col, Columns};
use crate::pg::datum::{bytea_datum, text_datum, Bytea, Timestamp, Uuid};
use crate::pg::error::Result;
use crate::pg::fmgr::Call;
use crate::pg::role::as_owner;
use crate::pg::spi::{with_spi, SavedPlan};
use crate::pg::sys::Datum;
use crate::pg::trigger::{Op, Spec, Timing, Trigger};
use crate::platform::context::{refuse_given, trail_time};
use crate::sql_function;
use crate::types::datum::{labelset_datum, scope_datum, LabelSetBuf, ScopeBuf};
use pg_labels_core::barrier::{self, ListenerFacts, Opening, VersionFacts};
use pg_labels_core::chain;
use pg_labels_core::refusal;
use pg_labels_core::LabelSet;

const SPEC: Spec = Spec {
    function: "pg_labels.runs_open()",
    tables: &["runs"],
    timing: Timing::Before,
    row: true,
    ops: &[Op::Insert],
};

static COLUMNS: Columns<7> = Columns::new([
    col::<Uuid>(c"id"),
    col::<ScopeBuf>(c"scope"),
    col::<LabelSetBuf>(c"labels"),
    col::<i64>(c"listener_id"),
    col::<String>(c"agent"),
    col::<i32>(c"agent_version"),
    col::<Timestamp>(c"opened_at"),
]);

static LISTENER: SavedPlan =
    SavedPlan::new(c"SELECT scope, agent FROM pg_labels.listeners WHERE id = $1");

static VERSION_SCOPE: SavedPlan =
    SavedPlan::new(c"SELECT scope FROM pg_labels.agent_versions WHERE agent = $1 AND version = $2");

sql_function! {
    /// BEFORE INSERT FOR EACH ROW on pg_labels.runs: a run opened through a listener has the
    /// listener's scope (and agent); the run's own scope label joins its labels; a run whose
    /// initial labels escape its scope is not opened.
    fn pgl_runs_open(call) {
        crate::platform::refused::guarded("run", || runs_open(&call))
    }
}

fn runs_open(call: &Call<'_>) -> Result<Datum> {
    let trigger = Trigger::fired(call, &SPEC)?;
    let row = trigger.row();
    if crate::platform::context::restoring() {
        return Ok(row.unchanged());
    }
    let [c_id, c_scope, c_labels, c_listener, c_agent, c_version, c_opened] = COLUMNS.of(&row)?;
    let on_shard = crate::platform::context::on_shard();
    if !on_shard && row.get::<Timestamp>(c_opened)? != Some(trail_time()) {
        return Err(refuse_given(
            "runs",
            "opened_at",
            "the time the database opened the run",
        ));
    }
    let run = row
        .get::<Uuid>(c_id)?
        .map(|u| u.to_string())
        .unwrap_or_default();
    let owner = trigger.owner();

    // gather: the listener and the version the run names
    let listener = match row.get::<i64>(c_listener)? {
        Some(id) => {
            let found = as_owner(owner, || {
                with_spi(|spi| {
                    let rows = LISTENER.execute(
                        spi,
                        &[crate::pg::sys::types::INT8OID],
                        &[Some(Datum::from(id))],
                        true,
                        1,
                    )?;
                    if rows.is_empty() {
                        return Ok(None);
                    }
                    Ok(Some((
                        rows.must::<ScopeBuf>(0, 1)?.0,
                        rows.get::<String>(0, 2)?,
                    )))
                })
            })?;
            // a listener of a scope the writer's grants do not reach is answered as one
            // that does not exist
            let found = found.filter(|(scope, _)| {
                crate::platform::grants::reaches(crate::platform::grants::acting(), scope)
                    .unwrap_or(false)
            });
            Some((
                id,
                found.ok_or_else(|| crate::pg::error::Error::from(refusal::no_listener(id)))?,
            ))
        }
        None => None,
    };
    let given_agent = row.get::<String>(c_agent)?;
    let agent = given_agent
        .clone()
        .or_else(|| listener.as_ref().and_then(|(_, (_, a))| a.clone()));
    let version = match row.get::<i32>(c_version)? {
        Some(v) => {
            let scope = match &agent {
                Some(a) => {
                    let a = text_datum(a)?;
                    as_owner(owner, || {
                        with_spi(|spi| {
                            let rows = VERSION_SCOPE.execute(
                                spi,
                                &[
                                    crate::pg::sys::types::TEXTOID,
                                    crate::pg::sys::types::INT4OID,
                                ],
                                &[Some(a), Some(Datum::from(v))],
                                true,
                                1,
                            )?;
                            Ok(rows.get::<ScopeBuf>(0, 1)?.map(|s| s.0))
                        })
                    })?
                }
                None => None,
            };
            // (a version of a scope the writer's grants do not reach: as one not published)
            let scope = scope.filter(|scope| {
                crate::platform::grants::reaches(crate::platform::grants::acting(), scope)
                    .unwrap_or(false)
            });
            Some((v, scope))
        }
        None => None,
    };
    let given_scope = row.get::<ScopeBuf>(c_scope)?;
    // what a refusal's record names (platform::refused)
    // what a refusal's record names (platform::refused): the run of that id, if there is one
    // (its scope is read from the database); what the writer claimed, apart
    crate::platform::refused::about(|a| a.run = row.get::<Uuid>(c_id).ok().flatten());
    crate::platform::refused::attempted(
        "scope",
        given_scope
            .as_ref()
            .map(|s| pg_labels_core::scope::to_text(&s.0).into()),
    );
    crate::platform::refused::attempted(
        "labels",
        row.get::<LabelSet<'_>>(c_labels)
            .ok()
            .flatten()
            .map(|l| l.to_text_capped(refusal::LIST_LIMIT).into()),
    );
    crate::platform::refused::attempted("agent", given_agent.clone().map(Into::into));
    crate::platform::refused::attempted(
        "listener_id",
        row.get::<i64>(c_listener).ok().flatten().map(Into::into),
    );
    crate::platform::refused::attempted(
        "agent_version",
        row.get::<i32>(c_version).ok().flatten().map(Into::into),
    );
    let labels = row
        .get::<LabelSet<'_>>(c_labels)?
        .unwrap_or(LabelSet::EMPTY);

    // decide
    let opened = barrier::open_run(&Opening {
        run: &run,
        scope: given_scope.as_ref().map(|s| &s.0[..]),
        labels,
        agent: given_agent.as_deref(),
        listener: listener.as_ref().map(|(id, (scope, agent))| ListenerFacts {
            id: *id,
            scope,
            agent: agent.as_deref(),
        }),
        version: version.as_ref().map(|(v, scope)| VersionFacts {
            version: *v,
            scope: scope.as_deref(),
        }),
    })?;

    // a writer opens runs only where its grants reach
    let acting = crate::platform::grants::acting();
    if !crate::platform::grants::reaches(acting, &opened.scope)? {
        return Err(refusal::act_not_granted(
            &crate::pg::role::role_name(acting).unwrap_or_default(),
            "open a run",
            &opened.scope,
        )
        .into());
    }

    // write
    let mut changes = vec![(c_labels, Some(labelset_datum(&opened.labels)?))];
    // where the run can be read: kept inline for the policy (none before release 0.3.1)
    if let Ok([c_carried]) = crate::platform::run_lock::CARRIED.of(&row) {
        if row.datum(c_carried).is_some() {
            return Err(refuse_given(
                "runs",
                "carried_scope",
                "the scope of the run's labels",
            ));
        }
        let carried = LabelSet::from_canonical(&opened.labels).scope();
        changes.push((c_carried, carried.map(scope_datum).transpose()?));
    }
    if on_shard {
        changes.push((c_opened, Some(Datum::from(trail_time().0))));
    }
    if opened.scope_filled {
        changes.push((c_scope, Some(scope_datum(&opened.scope)?)));
    }
    if let Some(a) = &opened.agent_filled {
        changes.push((c_agent, Some(text_datum(a)?)));
    }
    // the run's chain starts from how it was opened (a table of release 0.1.0, until ALTER
    // EXTENSION UPDATE, has no chain)
    if let Ok([c_opened_labels, c_head, c_slot, c_cut, c_cut_length]) = CHAIN.of(&row) {
        const START: &str = "the start of the run's hash chain";
        const CHECKPOINT: &str = "the checkpoint of the run's hash chain";
        for (c, name, why) in [
            (c_opened_labels, "opened_labels", START),
            (c_head, "chain_head", CHECKPOINT),
            (c_slot, "chain_slot", CHECKPOINT),
            (c_cut, "chain_cut", START),
            (c_cut_length, "chain_cut_length", START),
        ] {
            if row.datum(c).is_some() {
                return Err(refuse_given("runs", name, why));
            }
        }
        let id = row.get::<Uuid>(c_id)?.unwrap_or_default();
        let set = LabelSet::from_canonical(&opened.labels);
        let scope_text = pg_labels_core::scope::to_text(&opened.scope);
        let genesis = chain::genesis(&chain::RunOpening {
            id: id.0,
            agent: opened.agent_filled.as_deref().or(given_agent.as_deref()),
            agent_version: row.get::<i32>(c_version)?.map(i64::from),
            scope: &scope_text,
            labels: set,
            listener_id: row.get::<i64>(c_listener)?,
            opened_at: trail_time().0,
        });
        changes.push((c_opened_labels, Some(labelset_datum(&opened.labels)?)));
        changes.push((c_head, Some(bytea_datum(&genesis)?)));
    }
    Ok(row.modified(&changes))
}

/// The run's hash chain: how it was opened, its checkpoint and where the steps after it are,
/// and where a purge cut it.
static CHAIN: Columns<5> = Columns::new([
    col::<LabelSetBuf>(c"opened_labels"),
    col::<Bytea>(c"chain_head"),
    col::<i16>(c"chain_slot"),
    col::<Bytea>(c"chain_cut"),
    col::<i64>(c"chain_cut_length"),
]);
