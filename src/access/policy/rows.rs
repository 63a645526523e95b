//! A row's visibility read through its table's own policy (a run, an artifact, a share seen
//! from another table's row).

use super::*;

/// [`pgl_run_visible`], [`pgl_artifact_visible`]: the row of `table` with the id in argument 1,
/// read next to the relation in argument 0, is one the caller may see.
pub(super) fn row_visible(call: &Call<'_>, table: &'static str) -> Result<crate::pg::sys::Datum> {
    if call.is_null(0) || call.is_null(1) {
        return ret_bool(false);
    }
    let rel = Oid::from(call.datum(0).value() as u32);
    let id = crate::pg::datum::uuid_arg(call, 1);
    ret_bool(row_visible_for(rel, table, id)?)
}

/// [`row_visible`] of the row of `table` with id `id`, read next to `rel`.
pub(super) fn row_visible_for(
    rel: Oid,
    table: &'static str,
    id: crate::pg::datum::Uuid,
) -> Result<bool> {
    let Some(namespace) = platform_schema() else {
        return Ok(false);
    };
    let key = (rel, table, id.0);
    let user = current_user();
    let view = in_force(user, |s| s.map(|(stamp, _)| (xact(), user, stamp)));
    let mut current = false;
    if let Some(view) = view {
        let kept = state(|s| {
            let seen = s
                .seen
                .as_ref()
                .filter(|seen| seen.view == view && is_active_view(&seen.snapshot))?;
            current = true;
            seen.answers.get(&key).copied()
        });
        if let Some(answer) = kept {
            return Ok(answer);
        }
    }
    let scope = effective()?;
    let answer = row_visible_now(namespace, rel, table, &id, scope.as_deref())?;
    if let Some(view) = view {
        state(|s| {
            let seen = match &mut s.seen {
                Some(seen) if current && seen.answers.len() < SEEN_KEPT => seen,
                other => {
                    let Some(snapshot) = active_view() else {
                        return;
                    };
                    other.insert(Seen {
                        view,
                        snapshot,
                        answers: IdMap::default(),
                    })
                }
            };
            seen.answers.insert(key, answer);
        });
    }
    Ok(answer)
}

/// [`row_visible`] read from the table: a writer of `table` sees every row, others a row whose
/// labels the entered scope can carry.
pub(super) fn row_visible_now(
    namespace: Oid,
    rel: Oid,
    table: &'static str,
    id: &crate::pg::datum::Uuid,
    scope: Option<&[u8]>,
) -> Result<bool> {
    let relid = crate::platform::relations::relation_named(namespace, table);
    if may_insert(relid) {
        return Ok(true);
    }
    let Some(scope) = scope else {
        return Ok(false);
    };
    // as the subquery on the table it reads would: a role that may not read it gets an error
    if !crate::pg::role::may_select(relid) {
        return Err(Error::new(
            crate::pg::error::INSUFFICIENT_PRIVILEGE,
            format!("permission denied for table {table}"),
        ));
    }
    let _place = citus::shard_of_relation(namespace, rel)?.map(|s| citus::SHARD.enter(s));
    Ok(
        match crate::platform::relations::labels_of(namespace, table, id)? {
            Some(body) => pg_labels_core::LabelSet::from_body(&body)
                .map_err(|_| Error::corrupt("labels"))?
                .carried_by(scope),
            None => false,
        },
    )
}
