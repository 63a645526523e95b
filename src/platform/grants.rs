//! Where a role may act: the scopes its grants in `pg_labels.grants` reach, its own and those
//! of every role it is a member of, with the seed's containment (a grant of `acme` reaches
//! `acme/*`; `*` is the installation). One grant model for every role: an analyst enters a
//! scope a grant reaches; a writer opens runs and writes steps, artifacts, shares, agent
//! versions and listeners only where its grants reach, and reads the platform's rows only
//! there; an approver decides, and a crossing authorizer records or ends crossings, only there.
//! The tables' owner (the triggers' own statements run as it) and superusers act everywhere.
//!
//! A writer's check runs in the trigger of every step, so what a role reaches is read once and
//! kept, while the invalidation generation stays the same ([`crate::pg::inval`]): a change of
//! `pg_labels.grants` invalidates its relation's cache entry in every backend (its statement
//! trigger, [`pgl_grants_changed`]), and a change of a role's memberships is counted too. On a
//! Citus node the grants are this node's copy of the reference table (a change made through
//! another node invalidates nothing here), so they are kept for one transaction only.

use crate::pg::citus;
use crate::pg::datum::Name;
use crate::pg::error::Result;
use crate::pg::local::BackendLocal;
use crate::pg::role::{as_owner, is_member, role_oid};
use crate::pg::spi::{with_spi, SavedPlan};
use crate::pg::sys::Oid;
use crate::pg::trigger::{platform_schema, Op, Spec, Timing, Trigger};
use crate::platform::relations::{platform_owner, relation};
use crate::sql_function;
use crate::types::datum::ScopeBuf;
use pg_labels_core::scope;
use std::rc::Rc;

/// What a role reaches.
#[derive(Debug, Default)]
pub struct Reach {
    /// The tables' owner, or a superuser: everywhere, with or without a grant (and every role
    /// on the tables of a release before 0.3.1: [`bound`]).
    pub everywhere: bool,
    /// The scopes its grants (and those of the roles it is a member of) give it.
    pub granted: Vec<Vec<u8>>,
    /// Those of them it may also enter (`enter_scope()`): every grant but one made with
    /// `enters = false` (what `ALTER EXTENSION UPDATE` gave the roles that acted everywhere).
    pub enterable: Vec<Vec<u8>>,
}

impl Reach {
    /// May the role act in `target` (a grant reaches it, or it acts everywhere)?
    pub fn reaches(&self, target: &[u8]) -> bool {
        self.everywhere || self.granted.iter().any(|g| scope::reaches(g, target))
    }

    /// Does a grant that lets it enter (not its being the owner) reach `target`: what
    /// `enter_scope()` asks.
    pub fn may_enter(&self, target: &[u8]) -> bool {
        self.enterable.iter().any(|g| scope::reaches(g, target))
    }

    /// The deepest scope that reaches every granted one (`None` without a grant).
    pub fn common(&self) -> Option<Vec<u8>> {
        self.granted
            .iter()
            .cloned()
            .reduce(|a, b| scope::lca(&a, &b).to_vec())
    }
}

struct Kept {
    generation: u64,
    rows: Rc<Vec<Grant>>,
    roles: Vec<(Oid, Rc<Reach>)>,
}

/// How many roles' reach a backend keeps.
const ROLES_KEPT: usize = 32;

static KEPT: BackendLocal<Option<Kept>> = BackendLocal::new(None);

/// A row of `pg_labels.grants`: role, scope, whether it lets the role enter the scope.
type Grant = (String, Vec<u8>, bool);

/// Every grant, read as the tables' owner (on the tables of a release before 0.3.1, every
/// grant lets its role enter).
static GRANTS: SavedPlan = SavedPlan::new(c"SELECT role, scope, enters FROM pg_labels.grants");
static GRANTS_BEFORE_031: SavedPlan =
    SavedPlan::new(c"SELECT role, scope, true FROM pg_labels.grants");

fn read_grants() -> Result<Vec<Grant>> {
    let plan = if bound() { &GRANTS } else { &GRANTS_BEFORE_031 };
    let owner = platform_owner()?;
    // on a Citus node, the grants are this node's copy of the reference table
    let _place = match (citus::loaded(), platform_schema()) {
        (true, Some(ns)) => citus::reference_shard(ns, "grants")?.map(|id| citus::SHARD.enter(id)),
        _ => None,
    };
    as_owner(owner, || {
        with_spi(|spi| {
            // with the latest snapshot: a grant removed after this transaction's (or this
            // statement's) snapshot was taken is gone here too, and what is read is kept under
            // the generation read before it (a change committed later invalidates it)
            let rows = plan.execute_latest(spi, &[], &[], 0)?;
            let mut out = Vec::with_capacity(rows.len() as usize);
            for i in 0..rows.len() {
                if let (Some(role), Some(scope)) =
                    (rows.get::<Name>(i, 1)?, rows.get::<ScopeBuf>(i, 2)?)
                {
                    out.push((role.0, scope.0, rows.get::<bool>(i, 3)?.unwrap_or(false)));
                }
            }
            Ok(out)
        })
    })
}

/// What `role` reaches (see the module).
pub fn reach(role: Oid) -> Result<Rc<Reach>> {
    let generation = crate::pg::inval::generation();
    let (kept, rows) = KEPT.with(
        |k| match k.as_ref().filter(|k| k.generation == generation) {
            Some(k) => (
                k.roles.iter().find(|r| r.0 == role).map(|r| r.1.clone()),
                Some(k.rows.clone()),
            ),
            None => (None, None),
        },
    );
    if let Some(r) = kept {
        return Ok(r);
    }
    let rows = match rows {
        Some(rows) => rows,
        None => Rc::new(read_grants()?),
    };
    let owner = platform_owner()?;
    let everywhere = !bound() || is_member(role, owner) || crate::pg::backend::is_superuser(role);
    let (mut granted, mut enterable): (Vec<Vec<u8>>, Vec<Vec<u8>>) = (Vec::new(), Vec::new());
    for (name, scope, enters) in rows.iter() {
        if role_oid(name).is_some_and(|r| is_member(role, r)) {
            if !granted.contains(scope) {
                granted.push(scope.clone());
            }
            if *enters && !enterable.contains(scope) {
                enterable.push(scope.clone());
            }
        }
    }
    let reach = Rc::new(Reach {
        everywhere,
        granted,
        enterable,
    });
    // (what was read may be older than the generation now: kept under the one it was read in)
    KEPT.with(|k| {
        let k = match k {
            Some(k) if k.generation == generation => k,
            other => other.insert(Kept {
                generation,
                rows: rows.clone(),
                roles: Vec::new(),
            }),
        };
        if k.roles.len() >= ROLES_KEPT {
            k.roles.clear();
        }
        k.roles.push((role, reach.clone()));
    });
    Ok(reach)
}

/// Are the platform's tables of a release that binds every role to its grants (0.3.1, whose
/// trail has `run_scope`)? The library serves the tables of earlier releases until
/// `ALTER EXTENSION UPDATE`, and there every role but an analyst acts everywhere, as it did.
fn bound() -> bool {
    platform_schema().is_some_and(|ns| {
        let steps = relation(ns, c"steps");
        steps != Oid::INVALID && crate::pg::heap::has_column(steps, c"run_scope")
    })
}

/// At the end of every transaction: on a Citus node, forget what was read (see the module).
pub fn end_of_transaction() {
    if citus::loaded() {
        KEPT.with(|k| *k = None);
    }
}

/// Does a role reach `target`?
pub fn reaches(role: Oid, target: &[u8]) -> Result<bool> {
    Ok(reach(role)?.reaches(target))
}

/// The role the extension acts for (the caller, inside a function that writes as the owner).
pub fn acting() -> Oid {
    crate::pg::role::acting_for()
}

sql_function! {
    /// `pg_labels.acts_in(scope) → boolean`: the current role may act in `scope` (a grant of
    /// it, or of a role it is a member of, reaches it; or it acts everywhere). The writers'
    /// clause of the policies on a Citus cluster, where a shard's query cannot use what a
    /// query's start fixed for the table; what the role reaches is read when the query starts
    /// ([`crate::access::policy::settle`]), never for a row.
    fn pgl_acts_in(call) {
        use crate::types::datum::TypeArgs;
        let target = call.scope(0)?;
        crate::pg::fmgr::ret_bool(reaches(crate::pg::role::current_user(), target)?)
    }
}

const CHANGED: Spec = Spec {
    function: "pg_labels.grants_changed()",
    tables: &["grants"],
    timing: Timing::After,
    row: false,
    ops: &[Op::Insert, Op::Update, Op::Delete, Op::Truncate],
};

sql_function! {
    /// AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE FOR EACH STATEMENT on `pg_labels.grants`:
    /// every backend forgets what roles reach (at its next command, or when it next takes a
    /// lock), as it would after a change of the table's definition.
    fn pgl_grants_changed(call) {
        let trigger = Trigger::fired(&call, &CHANGED)?;
        let grants = platform_schema()
            .map(|ns| relation(ns, c"grants"))
            .unwrap_or(Oid::INVALID);
        if grants != Oid::INVALID {
            crate::pg::inval::relation_changed_everywhere(grants);
        }
        Ok(trigger.unchanged())
    }
}

sql_function! {
    /// `pg_labels.granted_scopes() → TABLE (scope scope)`: the scopes the current role's grants
    /// give it (its own and those of every role it is a member of): where it may act. What a
    /// service checks of its own credential (the MCP gateway refuses to start with one that
    /// reaches further than its configured scope); a role reads only its own.
    fn pgl_granted_scopes(call) {
        let out = crate::pg::srf::materialize(&call, "pg_labels.granted_scopes()", 1)?;
        let reach = reach(crate::pg::role::current_user())?;
        for scope in &reach.granted {
            out.push(&[Some(crate::types::datum::scope_datum(scope)?)]);
        }
        Ok(crate::pg::sys::Datum::from(0usize))
    }
}
