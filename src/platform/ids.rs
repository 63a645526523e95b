//! Ids from the platform's sequences, taken as the tables' owner; on a Citus cluster, from each
//! node's own range (a column default) or each shard's own sequence (a step), so that no two
//! nodes or shards hand out the same id and a run's ids follow its decisions wherever its shard
//! is.

use crate::pg::citus;
use crate::pg::error::Result;
use crate::pg::local::BackendLocal;
use crate::pg::sys::{Datum, Oid};
use crate::platform::relations::{missing, relation, relation_named};
use std::ffi::CStr;

// (the sequences are the platform's, taken for the trigger of the owner's table: nextval as
// identity columns take it, without a privilege check, which the tables' owner passes)

/// On a Citus node, ids are taken from the node's own range, as Citus does for the sequences
/// of distributed tables: from its group id times 2^48 (the coordinator, group 0, from 1), so
/// that two nodes never hand out the same id. Checked once per backend and sequence.
static NODE_RANGE: crate::pg::spi::SavedPlan = crate::pg::spi::SavedPlan::new(
    c"SELECT pg_catalog.setval($1, g.groupid::pg_catalog.int8 OPERATOR(pg_catalog.<<) 48, true)
        FROM pg_catalog.pg_dist_local_group g
       WHERE g.groupid OPERATOR(pg_catalog.>) 0
         AND COALESCE(pg_catalog.pg_sequence_last_value($1), 0)
             OPERATOR(pg_catalog.<) (g.groupid::pg_catalog.int8 OPERATOR(pg_catalog.<<) 48)",
);

/// On a Citus cluster a run's steps are on one shard, which moves from node to node as a
/// whole: their ids come from a sequence of that shard (`steps_id_seq_<shard id>`, made on the
/// node that holds it when first needed) over the shard's own range (its id times 2^32, so no
/// two shards share an id), and moved to just past the highest id the shard holds when it
/// arrives. Ids then follow each run's decisions wherever its shard is. Checked once per backend
/// and shard while no relation changes (a shard arriving is a new relation).
static SHARD_SEQUENCE: crate::pg::spi::SavedPlan =
    crate::pg::spi::SavedPlan::new(c"SELECT pg_labels.shard_sequence($1, $2)::pg_catalog.oid");

fn shard_sequence(namespace: Oid, shard: i64, owner: Oid) -> Result<Oid> {
    static KEPT: BackendLocal<(u64, Vec<(i64, Oid)>)> = BackendLocal::new((0, Vec::new()));
    let generation = crate::pg::inval::generation();
    let kept = KEPT.with(|(g, v)| {
        if *g != generation {
            *g = generation;
            v.clear();
        }
        v.iter().find(|(s, _)| *s == shard).map(|e| e.1)
    });
    if let Some(seq) = kept {
        return Ok(seq);
    }
    let trail = citus::local_name(namespace, shard, "steps")?.ok_or_else(|| missing("steps"))?;
    let trail = relation_named(namespace, &trail);
    let seq = crate::pg::role::as_owner(owner, || {
        crate::pg::spi::with_spi(|spi| {
            let rows = SHARD_SEQUENCE.execute(
                spi,
                &[
                    crate::pg::sys::types::INT8OID,
                    crate::pg::sys::types::REGCLASSOID,
                ],
                &[Some(Datum::from(shard)), Some(Datum::from(trail))],
                false,
                1,
            )?;
            rows.must::<Oid>(0, 1)
        })
    })?;
    // (creating the sequence sent an invalidation: kept under the generation after it)
    let generation = crate::pg::inval::generation();
    KEPT.with(|(g, v)| {
        if *g != generation {
            *g = generation;
            v.clear();
        }
        v.push((shard, seq));
    });
    Ok(seq)
}

fn node_range(seq: Oid, owner: Oid) -> Result<()> {
    static CHECKED: BackendLocal<Vec<Oid>> = BackendLocal::new(Vec::new());
    if CHECKED.with(|c| c.contains(&seq)) {
        return Ok(());
    }
    crate::pg::role::as_owner(owner, || {
        crate::pg::spi::with_spi(|spi| {
            NODE_RANGE.execute(
                spi,
                &[crate::pg::sys::types::REGCLASSOID],
                &[Some(Datum::from(seq))],
                false,
                0,
            )?;
            Ok(())
        })
    })?;
    CHECKED.with(|c| c.push(seq));
    Ok(())
}

/// The next value of a sequence of the platform schema, taken as `owner` (the owner of the
/// platform table whose trigger asks).
pub fn next_id(namespace: Oid, sequence: &'static CStr, owner: Oid) -> Result<i64> {
    next_id_where(namespace, sequence, owner, false)
}

/// [`next_id`], from this node's range when `on_node` (a column default on a Citus cluster,
/// evaluated on the node the statement entered).
pub fn next_id_where(
    namespace: Oid,
    sequence: &'static CStr,
    owner: Oid,
    on_node: bool,
) -> Result<i64> {
    // found by name once while no relation changes (a sequence dropped, renamed or created
    // sends an invalidation)
    static SEQUENCES: BackendLocal<(u64, Vec<(Oid, &'static CStr, Oid)>)> =
        BackendLocal::new((0, Vec::new()));
    let generation = crate::pg::inval::generation();
    let kept = SEQUENCES.with(|(g, v)| {
        if *g != generation {
            *g = generation;
            v.clear();
        }
        v.iter()
            .find(|(ns, name, _)| *ns == namespace && *name == sequence)
            .map(|e| e.2)
    });
    let seq = match kept {
        Some(oid) => oid,
        None => {
            let oid = relation(namespace, sequence);
            if oid != Oid::INVALID {
                SEQUENCES.with(|(_, v)| v.push((namespace, sequence, oid)));
            }
            oid
        }
    };
    if seq == Oid::INVALID {
        return Err(missing(&sequence.to_string_lossy()));
    }
    let seq = match citus::SHARD.current() {
        // a step on a Citus shard: its shard's own sequence (see shard_sequence)
        Some(shard) if sequence == c"steps_id_seq" => shard_sequence(namespace, shard, owner)?,
        Some(_) => {
            node_range(seq, owner)?;
            seq
        }
        None if on_node => {
            node_range(seq, owner)?;
            seq
        }
        None => seq,
    };
    crate::pg::catalog::nextval_unchecked(seq)
}
