//! Approvals: a person the DBA allows decides on one concrete call.
//!
//! `pg_labels.decide_approval(request, granted, reason)` is the only way an `approval_decided`
//! step enters the trail: EXECUTE is revoked from PUBLIC and granted by the DBA to the roles
//! that may decide. It refuses the role that requested the approval (and any role that can act
//! as it through membership), and records the decision with the decider in `actor`.

use crate::error::{Error, Result, NULL_VALUE_NOT_ALLOWED};
use crate::fmgr::{arg, arg_is_null};
use crate::refusal::{FOREIGN_KEY_VIOLATION, INSUFFICIENT_PRIVILEGE};
use crate::spi::{
    as_owner, current_user_name, datum_text, result_datum, with_flag, with_spi, BackendLocal,
    SavedPlan,
};
use crate::sql_function;
use pgrx::pg_sys::{self, Datum, Oid};

/// Raised by `decide_approval` while it inserts its decision: (request id, deciding role).
/// The steps trigger refuses `approval_decided` rows unless it matches.
pub static DECIDING: BackendLocal<Option<(i64, String)>> = BackendLocal::new(None);

static REQUEST: SavedPlan = SavedPlan::new(
    c"SELECT s.run_id, s.actor, s.tool, s.args,
             EXISTS (SELECT FROM pg_labels.steps d WHERE d.request_id = s.id AND d.kind = 'approval_decided')
        FROM pg_labels.steps s
       WHERE s.id = $1 AND s.kind = 'approval_requested'",
);

static DECIDE: SavedPlan = SavedPlan::new(
    c"INSERT INTO pg_labels.steps (run_id, kind, tool, args, decision, reason, request_id)
      VALUES ($1, 'approval_decided', $2, $3, $4, $5, $6)
      RETURNING id",
);

static STEPS_OWNER: SavedPlan = SavedPlan::new(
    c"SELECT relowner FROM pg_catalog.pg_class WHERE oid = 'pg_labels.steps'::regclass",
);

/// The owner of the platform tables.
pub(crate) unsafe fn platform_owner() -> Result<Oid> {
    unsafe {
        with_spi(|| {
            STEPS_OWNER.execute(&[], &[], true, 1)?;
            Ok(result_datum(0, 1)
                .map(|d| Oid::from(d.value() as u32))
                .unwrap_or(Oid::INVALID))
        })
    }
}

fn denied(message: String, detail: String) -> Error {
    Error::new(INSUFFICIENT_PRIVILEGE, message)
        .detail(detail)
        .hint("The role that writes the platform's steps cannot approve its own calls; a DBA allows a person to \
               decide with GRANT EXECUTE ON FUNCTION pg_labels.decide_approval(bigint, boolean, text) TO <role>.")
        .constraint("approval_required")
        .table("pg_labels", "steps")
}

sql_function! {
    /// `pg_labels.decide_approval(request bigint, granted boolean, reason text) → bigint`
    fn pgl_decide_approval(fc) {
        if arg_is_null(fc, 0) || arg_is_null(fc, 1) {
            return Err(Error::new(NULL_VALUE_NOT_ALLOWED, "decide_approval needs a request and a decision"));
        }
        let request = arg(fc, 0).value() as i64;
        let granted = arg(fc, 1).value() != 0;
        let reason = if arg_is_null(fc, 2) { None } else { Some(arg(fc, 2)) };
        let approver_oid = pg_sys::GetUserId();
        let approver = current_user_name();
        let owner = platform_owner()?;
        let id = as_owner(owner, || with_spi(|| {
            if REQUEST.execute(&[pg_sys::INT8OID], &[Some(Datum::from(request))], false, 1)? == 0 {
                return Err(Error::new(FOREIGN_KEY_VIOLATION, format!("approval_required: there is no approval request {request}"))
                    .detail("request must be the id of an approval_requested step.")
                    .table("pg_labels", "steps"));
            }
            let run = result_datum(0, 1);
            let requester = result_datum(0, 2).map(|d| datum_text(d)).unwrap_or_default();
            let (tool, args) = (result_datum(0, 3), result_datum(0, 4));
            let decided = result_datum(0, 5).map(|d| d.value() != 0).unwrap_or(false);
            if requester == approver {
                return Err(denied(
                    format!("approval_required: role {approver} requested approval {request} and cannot decide it"),
                    format!("Approval request {request} was written by {requester}."),
                ));
            }
            let requester_oid = pg_sys::get_role_oid(std::ffi::CString::new(requester.clone()).unwrap_or_default().as_ptr(), true);
            if requester_oid != Oid::INVALID && pg_sys::is_member_of_role_nosuper(approver_oid, requester_oid) {
                return Err(denied(
                    format!("approval_required: role {approver} can act as {requester}, who requested approval {request}"),
                    format!("{approver} is a member of {requester}."),
                ));
            }
            if decided {
                return Err(Error::new(*b"23505", format!("approval_required: approval request {request} was already decided"))
                    .constraint("steps_one_decision_idx")
                    .table("pg_labels", "steps"));
            }
            let decision = crate::spi::text_datum(if granted { "granted" } else { "denied" })?;
            with_flag(&DECIDING, Some((request, approver.clone())), || {
                DECIDE.execute(
                    &[pg_sys::UUIDOID, pg_sys::TEXTOID, pg_sys::JSONBOID, pg_sys::TEXTOID, pg_sys::TEXTOID, pg_sys::INT8OID],
                    &[run, tool, args, Some(decision), reason, Some(Datum::from(request))],
                    false,
                    0,
                )
            })?;
            Ok(result_datum(0, 1).map(|d| d.value() as i64).unwrap_or_default())
        }))?;
        Ok(Datum::from(id))
    }
}
