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

use crate::error::{
    Error, Result, CHECK_VIOLATION, FEATURE_NOT_SUPPORTED, INVALID_PARAMETER_VALUE,
    NOT_IN_PREREQUISITE_STATE, NULL_VALUE_NOT_ALLOWED,
};
use crate::fmgr::{arg, arg_is_null, datum_scope};
use crate::refusal;
use crate::spi::{
    self, as_owner, current_user_name, result_datum, with_flag, with_spi, BackendLocal, Columns,
    SavedPlan,
};
use crate::sql_function;
use crate::trail::{Row, TRIGGER_PROTOCOL};
use pg_labels_core::crossing::Crossing;
use pg_labels_core::scope;
use pgrx::pg_sys::{self, Datum, Oid};

/// Raised by `authorize_crossing` while it inserts: the authorizing role.
static AUTHORIZING: BackendLocal<Option<String>> = BackendLocal::new(None);
/// Raised by `revoke_crossing` while it updates: (crossing id, revoking role).
static REVOKING: BackendLocal<Option<(i64, String)>> = BackendLocal::new(None);

pub const SEALED_HINT: &str =
    "Crossings are the audited record of who let which data cross, and why: \
they are ended with pg_labels.revoke_crossing(crossing, reason), never edited or deleted.";

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
    c"INSERT INTO pg_labels.crossings (from_scope, to_scope, reason, expires_at)
      VALUES ($1, $2, $3, $4) RETURNING id",
);

static REVOKE: SavedPlan = SavedPlan::new(
    c"UPDATE pg_labels.crossings
         SET revoked_at = clock_timestamp(), revoked_by = $2, revoke_reason = $3
       WHERE id = $1 AND revoked_at IS NULL
      RETURNING revoked_at",
);

static REVOKED: SavedPlan =
    SavedPlan::new(c"SELECT revoked_at::text, revoked_by FROM pg_labels.crossings WHERE id = $1");

/// An active crossing, owned.
pub struct Active {
    pub id: i64,
    pub from: Vec<u8>,
    pub to: Vec<u8>,
}

impl Active {
    pub fn view(&self) -> Crossing<'_> {
        Crossing {
            id: self.id,
            from: &self.from,
            to: &self.to,
        }
    }
}

/// Borrowed views of owned crossings, for the core's cover functions.
pub fn views(active: &[Active]) -> Vec<Crossing<'_>> {
    active.iter().map(Active::view).collect()
}

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
    spi::text_array_datum(&ancestors)
}

/// The active crossings whose `to_scope` reaches `target`, ascending by id, each locked
/// `FOR SHARE` until the end of the transaction. Runs as `owner`.
pub unsafe fn active_into(owner: Oid, target: &[u8]) -> Result<Vec<Active>> {
    unsafe {
        let array = ancestors_array(target)?;
        as_owner(owner, || {
            with_spi(|| {
                let n = ACTIVE_INTO.execute(&[pg_sys::TEXTARRAYOID], &[Some(array)], false, 0)?;
                (0..n)
                    .map(|i| {
                        let scope_of = |col| -> Result<Vec<u8>> {
                            let d = result_datum(i, col).ok_or_else(|| Error::corrupt("scope"))?;
                            Ok(datum_scope(d)?.to_vec())
                        };
                        Ok(Active {
                            id: result_datum(i, 1)
                                .map(|d| d.value() as i64)
                                .unwrap_or_default(),
                            from: scope_of(2)?,
                            to: scope_of(3)?,
                        })
                    })
                    .collect()
            })
        })
    }
}

static CROSSING_COLUMNS: Columns<8> = Columns::new([
    c"id",
    c"from_scope",
    c"to_scope",
    c"authorized_by",
    c"expires_at",
    c"revoked_at",
    c"revoked_by",
    c"reason",
]);

fn not_through(what: &str, function: &str) -> Error {
    Error::new(
        refusal::INSUFFICIENT_PRIVILEGE,
        format!("crossings are {what} only by {function}"),
    )
    .detail("pg_labels.crossings is the audited record of boundary-crossing authorizations.")
    .hint(format!(
        "A DBA allows a person to record and end crossings with GRANT EXECUTE ON FUNCTION \
         pg_labels.authorize_crossing(scope, scope, text, timestamptz), pg_labels.revoke_crossing(bigint, text) TO <role>; \
         {function} is the way."
    ))
    .constraint("crossings_guard")
    .table("pg_labels", "crossings")
}

sql_function! {
    /// BEFORE INSERT OR UPDATE OR DELETE FOR EACH ROW on pg_labels.crossings.
    fn pgl_crossings_guard(fc) {
        let row = Row::of(fc, "pg_labels.crossings_guard()")?;
        if !row.is_before_row() {
            return Err(Error::new(TRIGGER_PROTOCOL, "pg_labels.crossings_guard() must fire BEFORE ... FOR EACH ROW"));
        }
        let [c_id, c_from, c_to, c_by, c_expires, c_revoked_at, c_revoked_by, c_reason] =
            CROSSING_COLUMNS.of(row.relid(), row.desc)?;
        match row.op() {
            pg_sys::TRIGGER_EVENT_INSERT => {
                let Some(who) = AUTHORIZING.get().clone() else {
                    return Err(not_through("recorded", "pg_labels.authorize_crossing()"));
                };
                let from = datum_scope(row.get(c_from).ok_or_else(|| crate::trail::not_null("crossings", "from_scope"))?)?;
                let to = datum_scope(row.get(c_to).ok_or_else(|| crate::trail::not_null("crossings", "to_scope"))?)?;
                if scope::reaches(to, from) {
                    return Err(Error::new(
                        INVALID_PARAMETER_VALUE,
                        format!("a crossing from {} to {} authorizes nothing", scope::to_text(from), scope::to_text(to)),
                    )
                    .detail(format!("Scope {} already reaches {}: its runs may carry that data without a crossing.",
                        scope::to_text(to), scope::to_text(from)))
                    .table("pg_labels", "crossings"));
                }
                let reason = row.get(c_reason).map(|d| spi::datum_text(d).trim().is_empty());
                if reason.unwrap_or(true) {
                    return Err(Error::new(CHECK_VIOLATION, "a crossing needs a reason")
                        .detail("Why this data may cross is part of the record: reason must not be empty.")
                        .constraint("crossings_reason_check")
                        .table("pg_labels", "crossings"));
                }
                if let Some(expires) = row.get(c_expires) {
                    if (expires.value() as i64) <= pg_sys::GetCurrentTimestamp() {
                        return Err(Error::new(INVALID_PARAMETER_VALUE, "a crossing cannot expire in the past")
                            .detail("expires_at must be later than now, or NULL (until revoked).")
                            .table("pg_labels", "crossings"));
                    }
                }
                Ok(row.modified(&[
                    (c_by, Some(spi::text_datum(&who)?)),
                    (c_revoked_at, None),
                    (c_revoked_by, None),
                ]))
            }
            pg_sys::TRIGGER_EVENT_UPDATE => {
                let id = row.get(c_id).map(|d| d.value() as i64);
                match &*REVOKING.get() {
                    Some((r, _)) if Some(*r) == id => Ok(Datum::from((*row.td).tg_newtuple)),
                    _ => Err(refusal::sealed(
                        "crossings",
                        "a crossing is never changed but by pg_labels.revoke_crossing()".into(),
                        format!("Crossing {} is part of the audited record.", id.unwrap_or_default()),
                    ).hint(SEALED_HINT)),
                }
            }
            _ => Err(refusal::sealed(
                "crossings",
                "crossings are never deleted".into(),
                format!("Crossing {} is part of the audited record.",
                    row.get(c_id).map(|d| d.value() as i64).unwrap_or_default()),
            ).hint(SEALED_HINT)),
        }
    }

    /// `pg_labels.authorize_crossing(from_scope scope, to_scope scope, reason text,
    /// expires_at timestamptz DEFAULT NULL) → bigint`
    fn pgl_authorize_crossing(fc) {
        for (i, name) in ["from_scope", "to_scope", "reason"].iter().enumerate() {
            if arg_is_null(fc, i) {
                return Err(Error::new(NULL_VALUE_NOT_ALLOWED, format!("authorize_crossing needs {name}")));
            }
        }
        let scope_type = pg_sys::get_fn_expr_argtype((*fc).flinfo, 0);
        if scope_type == Oid::INVALID {
            return Err(Error::new(FEATURE_NOT_SUPPORTED, "pg_labels.authorize_crossing() must be called from SQL"));
        }
        let expires = if arg_is_null(fc, 3) { None } else { Some(arg(fc, 3)) };
        let who = current_user_name();
        let owner = crate::approval::platform_owner()?;
        let id = as_owner(owner, || with_spi(|| {
            with_flag(&AUTHORIZING, Some(who), || {
                AUTHORIZE.execute(
                    &[scope_type, scope_type, pg_sys::TEXTOID, pg_sys::TIMESTAMPTZOID],
                    &[Some(arg(fc, 0)), Some(arg(fc, 1)), Some(arg(fc, 2)), expires],
                    false,
                    0,
                )
            })?;
            Ok(result_datum(0, 1).map(|d| d.value() as i64).unwrap_or_default())
        }))?;
        Ok(Datum::from(id))
    }

    /// `pg_labels.revoke_crossing(crossing bigint, reason text DEFAULT NULL) → timestamptz`
    fn pgl_revoke_crossing(fc) {
        if arg_is_null(fc, 0) {
            return Err(Error::new(NULL_VALUE_NOT_ALLOWED, "revoke_crossing needs a crossing"));
        }
        let id = arg(fc, 0).value() as i64;
        let reason = if arg_is_null(fc, 1) { None } else { Some(arg(fc, 1)) };
        let who = current_user_name();
        let owner = crate::approval::platform_owner()?;
        let at = as_owner(owner, || with_spi(|| {
            let who_d = spi::text_datum(&who)?;
            let n = with_flag(&REVOKING, Some((id, who.clone())), || {
                REVOKE.execute(
                    &[pg_sys::INT8OID, pg_sys::TEXTOID, pg_sys::TEXTOID],
                    &[Some(Datum::from(id)), Some(who_d), reason],
                    false,
                    0,
                )
            })?;
            if n == 1 {
                return Ok(result_datum(0, 1).map(|d| d.value() as i64).unwrap_or_default());
            }
            if REVOKED.execute(&[pg_sys::INT8OID], &[Some(Datum::from(id))], true, 1)? == 0 {
                return Err(Error::new(refusal::FOREIGN_KEY_VIOLATION, format!("there is no crossing {id}"))
                    .constraint("crossings_pkey")
                    .table("pg_labels", "crossings"));
            }
            let text = |c| result_datum(0, c).map(|d| spi::datum_text(d)).unwrap_or_default();
            Err(Error::new(NOT_IN_PREREQUISITE_STATE, format!("crossing {id} was already revoked"))
                .detail(format!("Revoked at {} by {}.", text(1), text(2)))
                .table("pg_labels", "crossings"))
        }))?;
        Ok(Datum::from(at))
    }
}
