//! Crossings: explicit, audited authorizations to carry data of one scope into another
//! (`pg_labels.crossings`).
//!
//! A crossing is recorded only by `pg_labels.authorize_crossing()` and ended only by
//! `pg_labels.revoke_crossing()`, whose EXECUTE the DBA grants; the table is otherwise sealed
//! (the guard trigger refuses any other INSERT, UPDATE or DELETE, for every role).
//!
//! The barrier asks [`active_into`] for the crossings it may honor for a target scope and locks
//! them `FOR SHARE` until its transaction ends, while a revocation is an UPDATE of the row: so
//! a revocation and a use of the crossing are ordered. A share, read or tool call that
//! committed before the revocation used it; one that waited for the revocation re-reads the row
//! and is judged without it.

use crate::pg::columns::{col, Columns};
use crate::pg::datum::{text_array_datum, text_datum, Timestamp};
use crate::pg::error::{Error, Result, FEATURE_NOT_SUPPORTED, NULL_VALUE_NOT_ALLOWED};
use crate::pg::fmgr::Call;
use crate::pg::role::{as_owner, current_user_name};
use crate::pg::spi::{with_spi, SavedPlan};
use crate::pg::sys::{Datum, Oid};
use crate::pg::trigger::{Op, Spec, Timing, Trigger};
use crate::platform::context;
use crate::platform::relations::platform_owner;
use crate::platform::state::{AUTHORIZING, REVOKING};
use crate::sql_function;
use crate::types::datum::ScopeBuf;
use pg_labels_core::crossing::Owned;
use pg_labels_core::refusal;
use pg_labels_core::scope;

/// Active crossings into any ancestor of (or exactly) the target, locked FOR SHARE. Under READ
/// COMMITTED a row revoked concurrently is re-read after the revocation commits and drops out.
static ACTIVE_INTO: SavedPlan = SavedPlan::new(
    c"SELECT id, from_scope, to_scope FROM pg_labels.crossings
       WHERE to_scope::text = ANY ($1)
         AND revoked_at IS NULL
         AND (expires_at IS NULL OR expires_at > clock_timestamp())
       ORDER BY id
         FOR SHARE",
);

static AUTHORIZE: SavedPlan = SavedPlan::new(
    c"INSERT INTO pg_labels.crossings (from_scope, to_scope, reason, expires_at, authorized_by)
      VALUES ($1, $2, $3, $4, $5) RETURNING id",
);

static REVOKE: SavedPlan = SavedPlan::new(
    c"UPDATE pg_labels.crossings
         SET revoked_at = $4, revoked_by = $2, revoke_reason = $3
       WHERE id = $1 AND revoked_at IS NULL
      RETURNING revoked_at",
);

static REVOKED: SavedPlan =
    SavedPlan::new(c"SELECT revoked_at::text, revoked_by FROM pg_labels.crossings WHERE id = $1");

/// The scope and its ancestors, as a `text[]` datum (`{acme/platform,acme,*}`): what SPI
/// statements compare a scope column with, as `col::text = ANY ($1)`, without needing the
/// extension's operators (those statements run under `search_path = pg_catalog, pg_temp`).
pub fn ancestors_array(target: &[u8]) -> Result<Datum> {
    let mut ancestors = vec![scope::to_text(target)];
    let mut p = target;
    while let Some(parent) = scope::parent(p) {
        ancestors.push(scope::to_text(parent));
        p = parent;
    }
    text_array_datum(&ancestors)
}

/// The active crossings whose `to_scope` reaches `target`, ascending by id, each locked
/// `FOR SHARE` until the end of the transaction. Runs as `owner`.
pub fn active_into(owner: Oid, target: &[u8]) -> Result<Vec<Owned>> {
    let array = ancestors_array(target)?;
    as_owner(owner, || {
        with_spi(|spi| {
            let rows = ACTIVE_INTO.execute(
                spi,
                &[crate::pg::sys::types::TEXTARRAYOID],
                &[Some(array)],
                false,
                0,
            )?;
            (0..rows.len())
                .map(|i| {
                    Ok(Owned {
                        id: rows.must(i, 1)?,
                        from: rows.must::<ScopeBuf>(i, 2)?.0,
                        to: rows.must::<ScopeBuf>(i, 3)?.0,
                    })
                })
                .collect()
        })
    })
}

const GUARD: Spec = Spec {
    function: "pg_labels.crossings_guard()",
    tables: &["crossings"],
    timing: Timing::Before,
    row: true,
    ops: &[Op::Insert, Op::Update, Op::Delete],
};

static CROSSING_COLUMNS: Columns<8> = Columns::new([
    col::<i64>(c"id"),
    col::<ScopeBuf>(c"from_scope"),
    col::<ScopeBuf>(c"to_scope"),
    col::<String>(c"authorized_by"),
    col::<Timestamp>(c"expires_at"),
    col::<Timestamp>(c"revoked_at"),
    col::<String>(c"revoked_by"),
    col::<String>(c"reason"),
]);

sql_function! {
    /// BEFORE INSERT OR UPDATE OR DELETE FOR EACH ROW on pg_labels.crossings.
    fn pgl_crossings_guard(call) {
        crate::platform::refused::guarded("crossing", || crossings_guard(&call))
    }

    /// `pg_labels.authorize_crossing(from_scope scope, to_scope scope, reason text,
    /// expires_at timestamptz DEFAULT NULL) → bigint`
    fn pgl_authorize_crossing(call) {
        crate::platform::refused::guarded("crossing", || authorize(&call))
    }

    /// `pg_labels.revoke_crossing(crossing bigint, reason text DEFAULT NULL) → timestamptz`
    fn pgl_revoke_crossing(call) {
        crate::platform::refused::guarded("crossing", || revoke(&call))
    }
}

fn crossings_guard(call: &Call<'_>) -> Result<Datum> {
    let trigger = Trigger::fired(call, &GUARD)?;
    let row = trigger.row();
    let [c_id, c_from, c_to, c_by, c_expires, c_revoked_at, c_revoked_by, c_reason] =
        CROSSING_COLUMNS.of(&row)?;
    let id = row.get::<i64>(c_id)?.unwrap_or_default();
    // what a refusal's record names (platform::refused): a crossing's scopes are what its
    // authorizer claimed, kept apart; the record is read in * only
    crate::platform::refused::about(|a| {
        if trigger.op() != Op::Insert {
            a.kind = format!("{} of a crossing", trigger.op().verb()).into();
        }
    });
    let text = |c: i32| {
        row.get::<ScopeBuf>(c)
            .ok()
            .flatten()
            .map(|s| pg_labels_core::scope::to_text(&s.0).into())
    };
    crate::platform::refused::attempted("from_scope", text(c_from));
    crate::platform::refused::attempted("to_scope", text(c_to));
    match trigger.op() {
        Op::Insert if crate::platform::context::restoring() => Ok(row.unchanged()),
        Op::Insert => {
            // On a Citus node, this copy of the reference table is written by the node the
            // statement entered, as the tables' owner (authorize_crossing() runs as it): the
            // owner's write is taken with the role the function recorded.
            let through_function = match AUTHORIZING.current() {
                Some(who) => Some(who),
                None if context::owner_on_shard(trigger.owner()) => row.get::<String>(c_by)?,
                None => None,
            };
            let Some(who) = through_function else {
                return Err(refusal::crossing_not_through(
                    "recorded",
                    "pg_labels.authorize_crossing()",
                )
                .into());
            };
            let from = row.must::<ScopeBuf>(c_from, "crossings")?.0;
            let to = row.must::<ScopeBuf>(c_to, "crossings")?.0;
            if scope::reaches(&to, &from) {
                return Err(refusal::crossing_authorizes_nothing(&from, &to).into());
            }
            if from.is_empty() {
                return Err(refusal::crossing_from_installation(&to).into());
            }
            if row
                .get::<&str>(c_reason)?
                .is_none_or(|r| r.trim().is_empty())
            {
                return Err(refusal::crossing_without_reason().into());
            }
            if let Some(expires) = row.get::<Timestamp>(c_expires)? {
                if expires.0 <= crate::pg::backend::now() {
                    return Err(refusal::crossing_in_the_past().into());
                }
            }
            Ok(row.modified(&[
                (c_by, Some(text_datum(&who)?)),
                (c_revoked_at, None),
                (c_revoked_by, None),
            ]))
        }
        Op::Update => match REVOKING.current() {
            Some((r, _)) if r == id => Ok(trigger.new_row().unchanged()),
            None if context::owner_on_shard(trigger.owner()) => Ok(trigger.new_row().unchanged()),
            _ => Err(refusal::crossing_sealed(
                "a crossing is never changed but by pg_labels.revoke_crossing()".into(),
                format!("Crossing {id} is part of the audited record."),
            )
            .into()),
        },
        _ => Err(refusal::crossing_sealed(
            "crossings are never deleted".into(),
            format!("Crossing {id} is part of the audited record."),
        )
        .into()),
    }
}

fn authorize(call: &Call<'_>) -> Result<Datum> {
    for (i, name) in ["from_scope", "to_scope", "reason"].iter().enumerate() {
        if call.is_null(i) {
            return Err(Error::new(
                NULL_VALUE_NOT_ALLOWED,
                format!("authorize_crossing needs {name}"),
            ));
        }
    }
    let scope_type = call.arg_type(0).ok_or_else(|| {
        Error::new(
            FEATURE_NOT_SUPPORTED,
            "pg_labels.authorize_crossing() must be called from SQL",
        )
    })?;
    let who = current_user_name();
    // a crossing authorizer records crossings only between scopes its grants reach
    let role = crate::pg::role::current_user();
    for i in 0..2 {
        let scope = crate::types::datum::TypeArgs::scope(call, i)?;
        if !crate::platform::grants::reaches(role, scope)? {
            return Err(refusal::act_not_granted(&who, "authorize a crossing", scope).into());
        }
    }
    let owner = platform_owner()?;
    let _authorizing = AUTHORIZING.enter(who.clone());
    as_owner(owner, || {
        with_spi(|spi| {
            let by = text_datum(&who)?;
            let rows = AUTHORIZE.execute(
                spi,
                &[
                    scope_type,
                    scope_type,
                    crate::pg::sys::types::TEXTOID,
                    crate::pg::sys::types::TIMESTAMPTZOID,
                    crate::pg::sys::types::TEXTOID,
                ],
                &[call.opt(0), call.opt(1), call.opt(2), call.opt(3), Some(by)],
                false,
                0,
            )?;
            Ok(Datum::from(rows.must::<i64>(0, 1)?))
        })
    })
}

/// A crossing's two scopes.
static CROSSING_SCOPES: SavedPlan =
    SavedPlan::new(c"SELECT from_scope, to_scope FROM pg_labels.crossings WHERE id = $1");

fn revoke(call: &Call<'_>) -> Result<Datum> {
    if call.is_null(0) {
        return Err(Error::new(
            NULL_VALUE_NOT_ALLOWED,
            "revoke_crossing needs a crossing",
        ));
    }
    let id = call.i64(0);
    let who = current_user_name();
    let role = crate::pg::role::current_user();
    let owner = platform_owner()?;
    as_owner(owner, || {
        with_spi(|spi| {
            // an authorizer ends only crossings it could have recorded (its grants reach both
            // scopes): one it cannot even read (its grants reach neither) is answered as one
            // that does not exist
            let scopes = CROSSING_SCOPES.execute(
                spi,
                &[crate::pg::sys::types::INT8OID],
                &[Some(Datum::from(id))],
                true,
                1,
            )?;
            if let (Some(from), Some(to)) =
                (scopes.get::<ScopeBuf>(0, 1)?, scopes.get::<ScopeBuf>(0, 2)?)
            {
                let (f, t) = (
                    crate::platform::grants::reaches(role, &from.0)?,
                    crate::platform::grants::reaches(role, &to.0)?,
                );
                if !f && !t {
                    return Err(refusal::no_crossing(id).into());
                }
                if !(f && t) {
                    let unreached = if f { &to.0 } else { &from.0 };
                    return Err(refusal::act_not_granted(&who, "end a crossing", unreached).into());
                }
            }
            let who_d = text_datum(&who)?;
            let revoked = {
                let _revoking = REVOKING.enter((id, who.clone()));
                // the time is taken here, once: on a Citus cluster every copy of the crossing
                // records the same
                let now = Timestamp(crate::pg::backend::now());
                let rows = REVOKE.execute(
                    spi,
                    &[
                        crate::pg::sys::types::INT8OID,
                        crate::pg::sys::types::TEXTOID,
                        crate::pg::sys::types::TEXTOID,
                        crate::pg::sys::types::TIMESTAMPTZOID,
                    ],
                    &[
                        Some(Datum::from(id)),
                        Some(who_d),
                        call.opt(1),
                        Some(now.datum()),
                    ],
                    false,
                    0,
                )?;
                rows.get::<Timestamp>(0, 1)?
            };
            if let Some(at) = revoked {
                return Ok(at.datum());
            }
            let rows = REVOKED.execute(
                spi,
                &[crate::pg::sys::types::INT8OID],
                &[Some(Datum::from(id))],
                true,
                1,
            )?;
            if rows.is_empty() {
                return Err(refusal::no_crossing(id).into());
            }
            let at = rows.get::<String>(0, 1)?.unwrap_or_default();
            let by = rows.get::<String>(0, 2)?.unwrap_or_default();
            Err(refusal::crossing_already_revoked(id, &at, &by).into())
        })
    })
}
