//! A trail of release 0.1.0, until ALTER EXTENSION UPDATE.
//!
//! A database where the extension is still at 0.1.0 runs this library once it is installed
//! (the frozen script `sql/released/pg_labels--0.1.0.sql` binds the triggers to it by their C
//! symbols), until `ALTER EXTENSION pg_labels UPDATE`; `tests/upgrade` writes its workload so
//! before it updates. There `pg_labels.steps` takes its ids from an identity column and has no
//! ring slot and no hash chain (`slot`, `prev_hash`, `hash`: [`super::gather::Cols`]), and
//! `pg_labels.runs` keeps no chain: a step that brings new labels grows its run's labels with
//! an `UPDATE` of the run's row instead of moving a chain on.
//!
//! All of it can go when 0.1.0 leaves `sql/released/`, that is when no install can be updated
//! from 0.1.0 any more: then the ids always come from `steps_id_seq`, and the slot and chain
//! columns are always there.

use crate::pg::datum::Uuid;
use crate::pg::error::Result;
use crate::pg::role::as_owner;
use crate::pg::spi::{with_spi, SavedPlan};
use crate::pg::tuple::Tuple;
use crate::types::datum::labelset_datum;

static GROW_LABELS: SavedPlan =
    SavedPlan::new(c"UPDATE pg_labels.runs SET labels = $2 WHERE id = $1");

/// Does the table take its ids from an identity column (its `id`, column `c_id`)? The row has
/// its id then, and the trigger takes none.
#[inline]
pub(super) fn identity_ids(row: &Tuple<'_>, c_id: i32) -> bool {
    row.is_identity(c_id)
}

/// The run (no chain, its table release 0.1.0's) now carries `carried`: its row is written
/// with an `UPDATE` as the tables' owner. (`c_labels`: the step's labels column, whose type is
/// the extension's `labelset`.)
pub(super) fn grow_labels(
    owner: crate::pg::sys::Oid,
    run_id: &Uuid,
    row: &Tuple<'_>,
    c_labels: i32,
    carried: &[u8],
) -> Result<()> {
    as_owner(owner, || {
        with_spi(|spi| {
            GROW_LABELS
                .execute(
                    spi,
                    &[crate::pg::sys::types::UUIDOID, row.type_of(c_labels)],
                    &[Some(run_id.datum()), Some(labelset_datum(carried)?)],
                    false,
                    0,
                )
                .map(|rows| rows.len())
        })
    })?;
    Ok(())
}
