//! What every trigger of the platform asks about the write it fires for: is the session
//! restoring a dump, is the trigger on a Citus shard (and is the write the tables' owner's
//! there), the time the trail records, and the refusal of a writer's value for what the
//! database writes.

use crate::pg::citus;
use crate::pg::datum::Timestamp;
use crate::pg::error::Error;
use crate::pg::sys::Oid;

/// The time a step is written at: the transaction's start (what `now()`, the column's default,
/// gives). The time partitions the trail, so it is the database's, never the writer's.
pub fn trail_time() -> Timestamp {
    Timestamp(crate::pg::xact::start_timestamp())
}

/// On a Citus shard, is this write the tables' owner's? The functions that act for a role
/// (`authorize_crossing()`, `revoke_crossing()`, `decide_approval()`) write as the owner on the
/// node the statement entered and name that role in the row; a shard's trigger on another node
/// takes such a row from the owner only.
pub fn owner_on_shard(owner: Oid) -> bool {
    on_shard() && crate::pg::role::current_user() == owner
}

/// Is the running trigger on a Citus shard? A row's time was then filled where the statement
/// entered the cluster (Citus evaluates `now()` there), which the trigger cannot tell from a
/// writer's: it writes the time itself instead of checking it (docs/citus.md, "Scaling out with
/// Citus").
pub fn on_shard() -> bool {
    citus::SHARD.current().is_some()
}

/// Refuse a writer's value for the trail's id, time or writer.
pub fn refuse_given(table: &'static str, column: &str, why: &str) -> Error {
    pg_labels_core::refusal::written_by_database(table, column, why).into()
}

/// Is this session restoring a dump? A superuser session, acting as itself, with `row_security`
/// off, as pg_dump's output and pg_restore run: the triggers then take every row as it was
/// decided when it was first written (history is not decided again, and the tables load in
/// any order). No other session can be taken as restoring: not one whose current user is a
/// superuser only for the time of a `SECURITY DEFINER` function or of a statement the
/// extension runs as the tables' owner (a function writing as the owner for its caller always
/// gets the full checks, whatever the caller set); and no other role at all: a writer's id,
/// time, decision or actor is refused as always.
pub fn restoring() -> bool {
    !crate::pg::role::row_security_on() && crate::pg::role::superuser_session()
}
