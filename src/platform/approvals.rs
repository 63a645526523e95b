//! Approvals: a person the DBA allows decides on one concrete call.
//!
//! `pg_labels.decide_approval(request, granted, reason)` is the only way an `approval_decided`
//! step enters the trail: EXECUTE is revoked from PUBLIC and granted by the DBA to the roles
//! that may decide. It refuses the role that requested the approval (and any role that can act
//! as it through membership), and records the decision with the decider in `actor`. A request
//! past its `expires_at` is decided by no one.
//!
//! `pg_labels.withdraw_approval(request, reason)` lets the role that wrote a request deny it
//! itself (the agent stopped waiting): the same `approval_decided` step, `denied`, with the
//! requester in `actor` (which no approver can be).

use crate::pg::datum::{text_datum, Jsonb, Timestamp, Uuid};
use crate::pg::error::{Error, Result, NULL_VALUE_NOT_ALLOWED};
use crate::pg::local::BackendLocal;
use crate::pg::role::{as_owner, current_user, current_user_name, is_member, role_oid};
use crate::pg::spi::{with_spi, SavedPlan};
use crate::pg::sys::Datum;
use crate::pg::sys::SubTransactionId;
use crate::platform::relations::platform_owner;
use crate::platform::state::DECIDING;
use crate::sql_function;
use pg_labels_core::refusal;

static REQUEST: SavedPlan = SavedPlan::new(
    c"SELECT s.run_id, s.actor, s.tool, s.args,
             EXISTS (SELECT FROM pg_labels.steps d
                      WHERE d.run_id = s.run_id AND d.request_id = s.id AND d.kind = 'approval_decided'),
             s.expires_at
        FROM pg_labels.steps s
       WHERE s.id = $1 AND s.kind = 'approval_requested'",
);

/// The same, in a trail of a release before 0.3.1 (until ALTER EXTENSION UPDATE): no request
/// expires.
static REQUEST_BEFORE_0_3_1: SavedPlan = SavedPlan::new(
    c"SELECT s.run_id, s.actor, s.tool, s.args,
             EXISTS (SELECT FROM pg_labels.steps d
                      WHERE d.run_id = s.run_id AND d.request_id = s.id AND d.kind = 'approval_decided'),
             NULL::timestamptz
        FROM pg_labels.steps s
       WHERE s.id = $1 AND s.kind = 'approval_requested'",
);

/// Does the trail have expiries (release 0.3.1, or until ALTER EXTENSION UPDATE an earlier
/// one)?
static TRAIL_EXPIRES: SavedPlan = SavedPlan::new(
    c"SELECT EXISTS (SELECT FROM pg_catalog.pg_attribute
                      WHERE attrelid = 'pg_labels.steps'::pg_catalog.regclass
                        AND attname = 'expires_at' AND NOT attisdropped)",
);

/// Does the trail have `expires_at` (a table of release 0.3.1)? Read as the caller can: the
/// catalog is everyone's.
pub(crate) fn trail_expires(spi: &crate::pg::spi::Spi) -> Result<bool> {
    Ok(TRAIL_EXPIRES
        .execute(spi, &[], &[], true, 1)?
        .get::<bool>(0, 1)?
        .unwrap_or(false))
}

/// The scope a request is read in (the tables of release 0.3.1, where roles are bound).
static REQUEST_SCOPE: SavedPlan = SavedPlan::new(
    c"SELECT coalesce(s.carried_scope, (SELECT r.carried_scope FROM pg_labels.runs r WHERE r.id = s.run_id))
        FROM pg_labels.steps s
       WHERE s.id = $1 AND s.kind = 'approval_requested'",
);

static DECIDE: SavedPlan = SavedPlan::new(
    c"INSERT INTO pg_labels.steps (run_id, kind, tool, args, decision, reason, request_id, actor)
      VALUES ($1, 'approval_decided', $2, $3, $4, $5, $6, $7)
      RETURNING id",
);

/// The decisions this transaction wrote on requests that expire: (request, its expiry, the
/// subtransaction that wrote it). A decision checked before the expiry whose transaction
/// commits after it is refused at the commit ([`before_commit`]): a request read as expired
/// never turns out decided.
static DECIDED: BackendLocal<Vec<(i64, i64, SubTransactionId)>> = BackendLocal::new(Vec::new());

/// Called from `_PG_init`: the decisions on expiring requests checked before each commit,
/// forgotten at each transaction's end and with a subtransaction rolled back.
pub fn init() {
    crate::pg::xact::before_commit(before_commit);
    crate::pg::xact::on_end(|_| end_of_transaction());
    crate::pg::xact::on_subtransaction_end(|end, my, _| {
        if end == crate::pg::xact::SubEnd::Abort {
            subtransaction_aborted(my);
        }
    });
}

/// Before the transaction commits: is every decision it wrote still before its request's
/// expiry?
fn before_commit() -> Result<()> {
    // (most transactions decide nothing: no clock for them)
    if DECIDED.with(|d| d.is_empty()) {
        return Ok(());
    }
    let now = crate::pg::backend::now();
    match DECIDED.with(|d| d.iter().find(|(_, at, _)| now >= *at).copied()) {
        Some((request, at, _)) => Err(refusal::request_expired(
            request,
            &pg_labels_core::retention::utc_text_micros(at),
        )
        .into()),
        None => Ok(()),
    }
}

/// The transaction ended: its decisions are written or gone.
fn end_of_transaction() {
    DECIDED.with(|d| d.clear());
}

/// A subtransaction rolled back: the decisions it (or one inside it) wrote are gone.
fn subtransaction_aborted(sub: SubTransactionId) {
    DECIDED.with(|d| d.retain(|(_, _, s)| *s < sub));
}

sql_function! {
    /// `pg_labels.decide_approval(request bigint, granted boolean, reason text) → bigint`
    fn pgl_decide_approval(call) {
        crate::platform::refused::guarded("approval", || {
            if call.is_null(0) || call.is_null(1) {
                return Err(Error::new(
                    NULL_VALUE_NOT_ALLOWED,
                    "decide_approval needs a request and a decision",
                ));
            }
            decide(call.i64(0), call.bool(1), call.opt(2), false)
        })
    }

    /// `pg_labels.withdraw_approval(request bigint, reason text) → bigint`
    fn pgl_withdraw_approval(call) {
        crate::platform::refused::guarded("approval", || {
            if call.is_null(0) {
                return Err(Error::new(
                    NULL_VALUE_NOT_ALLOWED,
                    "withdraw_approval needs a request",
                ));
            }
            let why = (!call.is_null(1)).then(|| String::from_utf8_lossy(call.bytes(1)).into_owned());
            let reason = match why.as_deref() {
                Some(r) => format!("withdrawn: {r}"),
                None => "withdrawn".to_string(),
            };
            decide(call.i64(0), false, Some(text_datum(&reason)?), true)
        })
    }
}

/// Record the decision of `request` (`withdraw`: its requester's denial).
fn decide(request: i64, granted: bool, reason: Option<Datum>, withdraw: bool) -> Result<Datum> {
    let approver_oid = current_user();
    let approver = current_user_name();
    let owner = platform_owner()?;
    as_owner(owner, || {
        with_spi(|spi| {
            let plan = if trail_expires(spi)? {
                &REQUEST
            } else {
                &REQUEST_BEFORE_0_3_1
            };
            let req = plan.execute(
                spi,
                &[crate::pg::sys::types::INT8OID],
                &[Some(Datum::from(request))],
                false,
                1,
            )?;
            // an approver decides only requests its grants reach: the scope the request's data
            // is read in (its run's, wider when the run carries another area's labels), so
            // that what it may decide is exactly the queue it can list in the scopes it may
            // enter; another's is answered as one that does not exist (decided or not)
            let reach = crate::platform::grants::reach(approver_oid)?;
            if !reach.everywhere && !withdraw {
                let scope = REQUEST_SCOPE
                    .execute(
                        spi,
                        &[crate::pg::sys::types::INT8OID],
                        &[Some(Datum::from(request))],
                        false,
                        1,
                    )?
                    .get::<crate::types::datum::ScopeBuf>(0, 1)?;
                if !scope.is_some_and(|s| reach.reaches(&s.0)) {
                    return Err(refusal::no_request(request).into());
                }
            }
            // (after the reach's lookups, which a request that does not exist takes too: the
            // time taken tells no one whether another company's id is a request)
            if req.is_empty() {
                return Err(refusal::no_request(request).into());
            }
            let requester: String = req.get(0, 2)?.unwrap_or_default();
            // a withdrawal is the requester's own: to any other role, a request is answered
            // exactly as one that does not exist (its refusal's record names no run either)
            if withdraw && requester != approver {
                return Err(refusal::no_request(request).into());
            }
            let run: Uuid = req.must(0, 1)?;
            crate::platform::refused::about(|a| a.run = Some(run));
            let tool: Option<String> = req.get(0, 3)?;
            let args: Option<Jsonb> = req.get(0, 4)?;
            let decided = req.get::<bool>(0, 5)?.unwrap_or(false);
            let expires_at = req.get::<Timestamp>(0, 6)?;
            if !withdraw && requester == approver {
                return Err(refusal::approver_denied(
                    format!("approval_required: role {approver} requested approval {request} and cannot decide it"),
                    format!("Approval request {request} was written by {requester}."),
                )
                .into());
            }
            // Neither can a role that can act as the requester, nor one the requester can act as
            // (a shared group role would let the platform approve itself either way).
            if let Some(requester_oid) = role_oid(&requester).filter(|_| !withdraw) {
                if is_member(approver_oid, requester_oid) {
                    return Err(refusal::approver_denied(
                        format!("approval_required: role {approver} can act as {requester}, who requested approval {request}"),
                        format!("{approver} is a member of {requester}."),
                    )
                    .into());
                }
                if is_member(requester_oid, approver_oid) {
                    return Err(refusal::approver_denied(
                        format!("approval_required: {requester}, who requested approval {request}, can act as role {approver}"),
                        format!("{requester} is a member of {approver}."),
                    )
                    .into());
                }
            }
            if decided {
                return Err(refusal::already_decided(request).into());
            }
            if let Some(at) = expires_at.filter(|at| !withdraw && crate::pg::backend::now() >= at.0)
            {
                return Err(refusal::request_expired(
                    request,
                    &pg_labels_core::retention::utc_text_micros(at.0),
                )
                .into());
            }
            let decision = text_datum(if granted { "granted" } else { "denied" })?;
            let tool = tool.as_deref().map(text_datum).transpose()?;
            let _deciding = DECIDING.enter((request, approver.clone()));
            let rows = DECIDE.execute(
                spi,
                &[
                    crate::pg::sys::types::UUIDOID,
                    crate::pg::sys::types::TEXTOID,
                    crate::pg::sys::types::JSONBOID,
                    crate::pg::sys::types::TEXTOID,
                    crate::pg::sys::types::TEXTOID,
                    crate::pg::sys::types::INT8OID,
                    crate::pg::sys::types::TEXTOID,
                ],
                &[
                    Some(run.datum()),
                    tool,
                    args.map(|a| a.0),
                    Some(decision),
                    reason,
                    Some(Datum::from(request)),
                    // the decider, named in the row too: on a Citus cluster the trigger that
                    // takes it runs on another node
                    Some(text_datum(&approver)?),
                ],
                false,
                0,
            )?;
            if let Some(at) = expires_at.filter(|_| !withdraw) {
                let sub = crate::pg::xact::subtransaction();
                DECIDED.with(|d| d.push((request, at.0, sub)));
            }
            Ok(Datum::from(rows.must::<i64>(0, 1)?))
        })
    })
}
