//! Listeners (BEFORE INSERT OR UPDATE on `pg_labels.listeners`): a writer binds a listener only
//! in a scope its grants reach ([`crate::platform::grants`]), and a listener's id is the
//! database's.

use crate::pg::citus;
use crate::pg::error::Result;
use crate::pg::role::as_owner;
use crate::pg::spi::{with_spi, SavedPlan};
use crate::pg::trigger::{Op, Spec, Timing, Trigger};
use crate::platform::grants::{acting, reaches};
use crate::sql_function;
use crate::types::datum::ScopeBuf;

const LISTENERS: Spec = Spec {
    function: "pg_labels.listeners_write()",
    tables: &["listeners"],
    timing: Timing::Before,
    row: true,
    ops: &[Op::Insert, Op::Update],
};

static LISTENER_SCOPE: crate::pg::columns::Columns<1> =
    crate::pg::columns::Columns::new([crate::pg::columns::col::<ScopeBuf>(c"scope")]);
static LISTENER_ID: crate::pg::columns::Columns<1> =
    crate::pg::columns::Columns::new([crate::pg::columns::col::<i64>(c"id")]);

/// The last id the listeners' identity handed out.
static LISTENER_LAST_ID: SavedPlan =
    SavedPlan::new(c"SELECT last_value FROM pg_labels.listeners_id_seq");

/// A listener's id is the database's: one given past what the identity handed out
/// (`OVERRIDING SYSTEM VALUE`) would take an id another company's next listener draws, and a
/// changed one too. (On a Citus node the identity is the coordinator's: not checked there.)
fn listener_id_given(trigger: &Trigger<'_>) -> Result<bool> {
    let row = if trigger.op() == Op::Insert {
        trigger.row()
    } else {
        trigger.new_row()
    };
    let Ok([c_id]) = LISTENER_ID.of(&row) else {
        return Ok(false);
    };
    let id = row.get::<i64>(c_id)?;
    if trigger.op() == Op::Update {
        return Ok(id != trigger.row().get::<i64>(c_id)?);
    }
    if citus::loaded() {
        return Ok(false);
    }
    let last = as_owner(trigger.owner(), || {
        with_spi(|spi| {
            LISTENER_LAST_ID
                .execute(spi, &[], &[], true, 1)?
                .get::<i64>(0, 1)
        })
    })?;
    Ok(matches!((id, last), (Some(id), Some(last)) if id > last))
}

sql_function! {
    /// BEFORE INSERT OR UPDATE FOR EACH ROW on `pg_labels.listeners`: a writer binds a listener
    /// only in a scope its grants reach.
    fn pgl_listeners_write(call) {
        crate::platform::refused::guarded("listener", || {
            let trigger = Trigger::fired(&call, &LISTENERS)?;
            let row = if trigger.op() == Op::Insert { trigger.row() } else { trigger.new_row() };
            if crate::platform::context::restoring() {
                return Ok(row.unchanged());
            }
            if listener_id_given(&trigger)? {
                return Err(crate::platform::context::refuse_given(
                    "listeners",
                    "id",
                    "the listener's, drawn from its identity",
                ));
            }
            let [c_scope] = LISTENER_SCOPE.of(&row)?;
            if let Some(scope) = row.get::<ScopeBuf>(c_scope)? {
                let role = acting();
                if !reaches(role, &scope.0)? {
                    return Err(pg_labels_core::refusal::act_not_granted(
                        &crate::pg::role::role_name(role).unwrap_or_default(),
                        "bind a listener",
                        &scope.0,
                    )
                    .into());
                }
            }
            Ok(row.unchanged())
        })
    }
}
