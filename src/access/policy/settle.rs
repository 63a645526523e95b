//! What a query's start fixes for the policies (`settle`): for each platform table the query
//! reads, whether the current role writes it, and which roles of `pg_labels.grants` it is a
//! member of; kept per transaction and role while the catalogs say the same.

use super::*;

/// While [`settle`] runs (its own statements start executors too).
pub(super) static SETTLING: Scoped<()> = Scoped::new();

/// At the start of each query's execution (`pg::executor`), before any row: the scope in force
/// (a session scope's grant checked again, once per transaction; the scope a Citus node is
/// carried), and, for each platform table the query reads, whether the current role writes it
/// and, for `grants`, which of its roles the current role is a member of.
pub fn settle(relations: &[Oid]) -> Result<()> {
    if in_parallel_worker() || SETTLING.current().is_some() {
        return Ok(());
    }
    let Some(ns) = platform_schema() else {
        return Ok(());
    };
    let _settling = SETTLING.enter(());
    settle_scope()?;
    let generation = crate::pg::inval::generation();
    let tables = policy_tables(ns, generation, relations);
    if tables.is_empty() {
        return Ok(());
    }
    let view = (generation, active_head());
    let (xact, role) = (xact(), current_user());
    let (crossings, grants) = state(|s| {
        s.known
            .as_ref()
            .map_or((Oid::INVALID, Oid::INVALID), |k| (k.crossings, k.grants))
    });
    for &table in &tables {
        let current = state(|s| {
            s.writes
                .iter()
                .any(|w| w.xact == xact && w.role == role && w.table == table && w.view == view)
        });
        // (a role that bypasses row-level security meets no policy)
        if !current && !bypasses(generation, role) {
            let writes = if table == crossings {
                may_write_crossings(ns)?
            } else {
                may_insert(table)
            };
            keep_writes(xact, role, table, view, writes);
        }
    }
    // where the role writes, found now (a grant read for a row would tell which rows)
    let writes_any = state(|s| {
        s.writes
            .iter()
            .any(|w| w.xact == xact && w.role == role && w.writes && tables.contains(&w.table))
    });
    // (on a Citus node, where the writers' clause is acts_in(), read for every query that
    // reads a platform table: a shard's query is not known as its table's)
    if writes_any || citus::loaded() {
        let reach = crate::platform::grants::reach(role)?;
        state(|s| s.reach = Some((xact, role, reach)));
    }
    if tables.contains(&grants) && !bypasses(generation, role) {
        settle_members(xact, role, view)?;
    }
    Ok(())
}

/// Does `role` bypass row-level security (kept while no invalidation arrived: a role's
/// attributes are among what [`crate::pg::inval`] counts)?
pub(super) fn bypasses(generation: u64, role: Oid) -> bool {
    let kept = state(|s| {
        s.known
            .as_ref()
            .filter(|k| k.generation == generation)
            .and_then(|k| k.bypass.iter().find(|b| b.0 == role).map(|b| b.1))
    });
    if let Some(b) = kept {
        return b;
    }
    let b = bypasses_rls();
    state(|s| {
        if let Some(k) = s.known.as_mut().filter(|k| k.generation == generation) {
            if k.bypass.len() < KNOWN_RELATIONS {
                k.bypass.push((role, b));
            }
        }
    });
    b
}

/// The platform's tables with policies of their own, as this backend knows them while no
/// invalidation arrived: the trail (its partitions are read under its policy), crossings and
/// grants (whose policies differ), and which relations of recent plans are which.
#[derive(Clone, Default)]
pub(super) struct Known {
    pub(super) generation: u64,
    pub(super) steps: Oid,
    pub(super) crossings: Oid,
    pub(super) grants: Oid,
    /// (relation, the platform table whose policy it is read under, or INVALID)
    pub(super) relations: Vec<(Oid, Oid)>,
    /// (role, whether it bypasses row-level security)
    pub(super) bypass: Vec<(Oid, bool)>,
}

/// How many relations [`Known`] keeps.
pub(super) const KNOWN_RELATIONS: usize = 64;

/// The platform tables (by their policies) a plan's relations are read under.
pub(super) fn policy_tables(ns: Oid, generation: u64, relations: &[Oid]) -> Vec<Oid> {
    state(|s| {
        let k = match &mut s.known {
            Some(k) if k.generation == generation => k,
            other => other.insert(Known {
                generation,
                steps: relation(ns, c"steps"),
                crossings: relation(ns, c"crossings"),
                grants: relation(ns, c"grants"),
                relations: Vec::new(),
                bypass: Vec::new(),
            }),
        };
        let mut tables: Vec<Oid> = Vec::new();
        for &rel in relations {
            let table = match k.relations.iter().find(|(r, _)| *r == rel) {
                Some(&(_, t)) => t,
                None => {
                    let t = if namespace_of(rel) != ns {
                        Oid::INVALID
                    } else if is_partition(rel) {
                        k.steps
                    } else {
                        rel
                    };
                    if k.relations.len() >= KNOWN_RELATIONS {
                        k.relations.clear();
                    }
                    k.relations.push((rel, t));
                    t
                }
            };
            if table != Oid::INVALID && !tables.contains(&table) {
                tables.push(table);
            }
        }
        tables
    })
}

pub(super) fn keep_writes(
    xact: u64,
    role: Oid,
    table: Oid,
    view: (u64, Option<[u64; 3]>),
    writes: bool,
) {
    state(|s| {
        s.writes.retain(|w| w.xact == xact);
        if let Some(w) = s
            .writes
            .iter_mut()
            .find(|w| w.role == role && w.table == table)
        {
            w.view = view;
            w.writes = writes;
        } else if s.writes.len() < WRITES_KEPT {
            s.writes.push(Writes {
                xact,
                role,
                table,
                view,
                writes,
            });
        }
    });
}

/// May the current role write `pg_labels.crossings` (through its functions)?
pub(super) static CROSSING_WRITER: SavedPlan = SavedPlan::new(
    c"SELECT coalesce(bool_or(pg_catalog.has_function_privilege(p.oid, 'EXECUTE')), false)
        FROM pg_catalog.pg_proc p
       WHERE p.pronamespace = $1 AND p.proname IN ('authorize_crossing', 'revoke_crossing')",
);

pub(super) fn may_write_crossings(ns: Oid) -> Result<bool> {
    with_spi(|spi| {
        CROSSING_WRITER
            .execute(
                spi,
                &[crate::pg::sys::types::OIDOID],
                &[Some(crate::pg::sys::Datum::from(ns))],
                true,
                1,
            )?
            .must::<bool>(0, 1)
    })
}

/// The roles `pg_labels.grants` names (read as the tables' owner: every row, whatever the
/// caller may see).
pub(super) static GRANTED_ROLES: SavedPlan =
    SavedPlan::new(c"SELECT DISTINCT role FROM pg_labels.grants");

pub(super) fn settle_members(xact: u64, role: Oid, view: (u64, Option<[u64; 3]>)) -> Result<()> {
    let current = state(|s| {
        s.members
            .as_ref()
            .is_some_and(|m| m.xact == xact && m.role == role && m.view == view)
    });
    if current {
        return Ok(());
    }
    let owner = crate::platform::relations::platform_owner()?;
    let names: Vec<String> = crate::pg::role::as_owner(owner, || {
        with_spi(|spi| {
            let rows = GRANTED_ROLES.execute(spi, &[], &[], true, 0)?;
            let mut names = Vec::new();
            for i in 0..rows.len() {
                if let Some(n) = rows.get::<Name>(i, 1)? {
                    names.push(n.0);
                }
            }
            Ok(names)
        })
    })?;
    let names = names
        .into_iter()
        .map(|n| {
            let member = role_oid(&n).is_some_and(|r| is_member(role, r));
            (n, member)
        })
        .collect();
    state(|s| {
        s.members = Some(Members {
            xact,
            role,
            view,
            names,
        })
    });
    Ok(())
}

/// Does the current role write `tab` (see [`Writes`])? Fixed when the query started; found now
/// only where no query's start did (a direct call).
pub(super) fn writes(tab: Oid) -> Result<bool> {
    let (xact, role) = (xact(), current_user());
    let kept = state(|s| {
        s.writes
            .iter()
            .find(|w| w.xact == xact && w.role == role && w.table == tab)
            .map(|w| w.writes)
    });
    if let Some(w) = kept {
        return Ok(w);
    }
    let ns = platform_schema().unwrap_or(Oid::INVALID);
    let writes = if ns != Oid::INVALID && tab == relation(ns, c"crossings") {
        may_write_crossings(ns)?
    } else {
        may_insert(tab)
    };
    keep_writes(
        xact,
        role,
        tab,
        (crate::pg::inval::generation(), active_head()),
        writes,
    );
    Ok(writes)
}

/// Does the scope in force reach `needed`? `None`: no scope is in force for the current role.
pub(super) fn reaches(needed: &[u8]) -> Result<Option<bool>> {
    let user = current_user();
    let kept = in_force(user, |scope| {
        scope.map(|(_, scope)| pg_labels_core::scope::reaches(scope, needed))
    });
    match kept {
        Some(answer) => Ok(Some(answer)),
        None => Ok(effective()?.map(|scope| pg_labels_core::scope::reaches(&scope, needed))),
    }
}
