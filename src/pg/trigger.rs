//! The trigger protocol: a trigger function of the extension runs only when the extension's own
//! table fired it, at the event, timing and level it was written for; it reads a column only
//! after checking the column's name and type.
//!
//! The trigger functions are EXECUTE to PUBLIC (PostgreSQL checks EXECUTE on a trigger function
//! when a trigger is created, not when it fires), so any role can attach one to a table of its
//! own. [`Trigger::fired`] refuses (`39P01`, naming the function and the table) unless the table
//! is one of the platform tables the function belongs to, in the platform schema (or a
//! partition of one), and the event, timing and level are the expected ones. [`Columns`] checks
//! every column it resolves, by name and by type, before any value is read.

use crate::pg::citus;
use crate::pg::error::{Error, Result, TRIGGER_PROTOCOL_VIOLATED};
use crate::pg::fmgr::Call;
use crate::pg::inval;
use crate::pg::local::{BackendLocal, Guard};
use crate::pg::tuple::Tuple;
use pgrx::pg_sys::{self, Datum, Oid};
use std::ffi::CStr;

/// The platform schema, where the extension's tables live.
pub const PLATFORM_SCHEMA: &CStr = c"pg_labels";

/// When a trigger fires.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Timing {
    Before,
    After,
}

/// What fired it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Insert,
    Update,
    Delete,
    Truncate,
}

impl Op {
    pub fn verb(self) -> &'static str {
        match self {
            Op::Insert => "INSERT",
            Op::Update => "UPDATE",
            Op::Delete => "DELETE",
            Op::Truncate => "TRUNCATE",
        }
    }
}

/// What a trigger function was written for.
pub struct Spec {
    /// Its SQL name, for messages: `pg_labels.steps_insert()`.
    pub function: &'static str,
    /// The platform tables it may fire on (by name, in the platform schema).
    pub tables: &'static [&'static str],
    pub timing: Timing,
    /// `FOR EACH ROW` (true) or `FOR EACH STATEMENT`.
    pub row: bool,
    /// The operations it handles.
    pub ops: &'static [Op],
}

/// A trigger call that passed the protocol checks.
pub struct Trigger<'a> {
    td: &'a pg_sys::TriggerData,
    op: Op,
    table: &'static str,
    /// raised while the trigger runs when it fired on a Citus shard
    _shard: Option<Guard<i64>>,
}

/// What this backend knows of the relations its triggers fired on, while no invalidation
/// arrived ([`inval::generation`]): the platform schema, and per relation the name and schema
/// of its root (itself, or the partitioned table it is a partition of).
struct Known {
    generation: u64,
    schema: Option<Oid>,
    roots: Vec<(Oid, Root)>,
}

#[derive(Clone)]
struct Root {
    namespace: Oid,
    name: Option<String>,
    /// a Citus shard of a platform table: its id (and `name` is the table's)
    shard: Option<i64>,
}

static KNOWN: BackendLocal<Known> = BackendLocal::new(Known {
    generation: 0,
    schema: None,
    roots: Vec::new(),
});

fn protocol(spec: &Spec, table: &str, what: String) -> Error {
    Error::new(
        TRIGGER_PROTOCOL_VIOLATED,
        format!("{} cannot be used as a trigger {what} (table {table})", spec.function),
    )
    .detail(format!(
        "{} is the extension's own trigger for {} in schema pg_labels, {}{} {}.",
        spec.function,
        spec.tables.join(", "),
        match spec.timing {
            Timing::Before => "BEFORE ",
            Timing::After => "AFTER ",
        },
        spec.ops.iter().map(|o| o.verb()).collect::<Vec<_>>().join(" OR "),
        if spec.row { "FOR EACH ROW" } else { "FOR EACH STATEMENT" },
    ))
    .hint("Trigger functions of pg_labels are attached by the extension itself; they cannot guard other tables.")
}

/// Run `f` with what is known, forgotten first if an invalidation arrived since.
fn known<R>(f: impl FnOnce(&mut Known) -> R) -> R {
    let generation = inval::generation();
    KNOWN.with(|k| {
        if k.generation != generation {
            k.generation = generation;
            k.roots.clear();
            // SAFETY: a syscache lookup by name.
            let oid = unsafe { pg_sys::get_namespace_oid(PLATFORM_SCHEMA.as_ptr(), true) };
            k.schema = (oid != Oid::INVALID).then_some(oid);
        }
        f(k)
    })
}

/// The OID of the platform schema (`None` if it does not exist).
pub fn platform_schema() -> Option<Oid> {
    known(|k| k.schema)
}

// Not in pgrx's bindings (partition.h); called through pgrx's guard.
unsafe extern "C-unwind" {
    fn get_partition_ancestors(relid: Oid) -> *mut pg_sys::List;
}

/// The topmost ancestor of a relation that is a partition (itself otherwise), with its name
/// and schema.
fn root_of(rel: &pg_sys::RelationData) -> Result<Root> {
    if let Some(root) = known(|k| {
        k.roots
            .iter()
            .find(|(r, _)| *r == rel.rd_id)
            .map(|x| x.1.clone())
    }) {
        return Ok(root);
    }
    // SAFETY: rd_rel is the relation's pg_class row, valid while the relation is open.
    let form = unsafe { &*rel.rd_rel };
    let oid = if !form.relispartition {
        rel.rd_id
    } else {
        // SAFETY: a catalog scan of pg_inherits, behind pgrx's guard (an ERROR becomes a Rust
        // panic); the list it returns ends with the root.
        unsafe {
            let list = pg_sys::submodules::ffi::pg_guard_ffi_boundary(|| {
                get_partition_ancestors(rel.rd_id)
            });
            if list.is_null() || (*list).length == 0 {
                rel.rd_id
            } else {
                (*(*list).elements.add((*list).length as usize - 1)).oid_value
            }
        }
    };
    // SAFETY: syscache lookups of the root; get_rel_name returns NULL or a palloc'd cstring.
    let mut root = unsafe {
        let p = pg_sys::get_rel_name(oid);
        Root {
            namespace: pg_sys::get_rel_namespace(oid),
            name: (!p.is_null()).then(|| CStr::from_ptr(p).to_string_lossy().into_owned()),
            shard: None,
        }
    };
    // a shard Citus made of a platform table (in the platform schema, where only its owner and
    // Citus make relations, and listed as that table's shard in Citus' metadata)
    if Some(root.namespace) == platform_schema() {
        if let Some((table, id)) = root.name.as_deref().and_then(citus::split) {
            if citus::is_shard_of(root.namespace, table, id)? {
                root.name = Some(table.to_owned());
                root.shard = Some(id);
            }
        }
    }
    known(|k| {
        if k.roots.len() >= 256 {
            k.roots.clear();
        }
        k.roots.push((rel.rd_id, root.clone()));
    });
    Ok(root)
}

impl<'a> Trigger<'a> {
    /// The trigger data of a call, checked against what the function was written for.
    pub fn fired(call: &Call<'a>, spec: &Spec) -> Result<Trigger<'a>> {
        // SAFETY: fcinfo->context is NULL or a Node; a TriggerData is what a trigger call
        // carries, alive for the call.
        let td = unsafe {
            let ctx = (*call.raw()).context;
            if ctx.is_null() || (*ctx).type_ != pg_sys::NodeTag::T_TriggerData {
                return Err(Error::new(
                    TRIGGER_PROTOCOL_VIOLATED,
                    format!("{} can only be called as a trigger", spec.function),
                ));
            }
            &*(ctx as *const pg_sys::TriggerData)
        };
        // SAFETY: tg_relation is the open relation the trigger fired on.
        let rel = unsafe { &*td.tg_relation };
        // SAFETY: as above.
        let form = unsafe { &*rel.rd_rel };
        let event = td.tg_event;
        let op = match event & pg_sys::TRIGGER_EVENT_OPMASK {
            pg_sys::TRIGGER_EVENT_INSERT => Op::Insert,
            pg_sys::TRIGGER_EVENT_UPDATE => Op::Update,
            pg_sys::TRIGGER_EVENT_DELETE => Op::Delete,
            _ => Op::Truncate,
        };
        // The table: in the platform schema (only its owner can create relations there), and
        // one of the function's tables or a partition of one.
        let schema = platform_schema();
        let root = root_of(rel)?;
        let table = if Some(form.relnamespace) == schema && Some(root.namespace) == schema {
            spec.tables
                .iter()
                .find(|t| root.name.as_deref() == Some(**t))
                .copied()
        } else {
            None
        };
        let Some(table) = table else {
            // a partition is named by its table in messages
            let name = root.name.unwrap_or_else(|| {
                // SAFETY: relname is a NUL-terminated NameData.
                unsafe { CStr::from_ptr(form.relname.data.as_ptr()) }
                    .to_string_lossy()
                    .into_owned()
            });
            let qualified = format!(
                "{}.{}",
                // SAFETY: get_namespace_name returns NULL or a palloc'd cstring.
                unsafe {
                    let p = pg_sys::get_namespace_name(form.relnamespace);
                    if p.is_null() {
                        "?".to_string()
                    } else {
                        CStr::from_ptr(p).to_string_lossy().into_owned()
                    }
                },
                name
            );
            return Err(protocol(spec, &qualified, "on this table".into()));
        };
        let timing_ok = match spec.timing {
            Timing::Before => {
                event & pg_sys::TRIGGER_EVENT_TIMINGMASK == pg_sys::TRIGGER_EVENT_BEFORE
            }
            Timing::After => {
                event & pg_sys::TRIGGER_EVENT_TIMINGMASK == pg_sys::TRIGGER_EVENT_AFTER
            }
        };
        let row_ok = (event & pg_sys::TRIGGER_EVENT_ROW != 0) == spec.row;
        if !timing_ok || !row_ok || !spec.ops.contains(&op) {
            let when = match event & pg_sys::TRIGGER_EVENT_TIMINGMASK {
                pg_sys::TRIGGER_EVENT_BEFORE => "BEFORE",
                pg_sys::TRIGGER_EVENT_AFTER => "AFTER",
                _ => "INSTEAD OF",
            };
            let level = if event & pg_sys::TRIGGER_EVENT_ROW != 0 {
                "FOR EACH ROW"
            } else {
                "FOR EACH STATEMENT"
            };
            return Err(protocol(
                spec,
                &format!("pg_labels.{table}"),
                format!("{when} {} {level}", op.verb()),
            ));
        }
        // on a shard, what the function reads is next to it (crate::pg::citus)
        let _shard = root.shard.map(|id| citus::SHARD.enter(id));
        Ok(Trigger {
            td,
            op,
            table,
            _shard,
        })
    }

    pub fn op(&self) -> Op {
        self.op
    }

    /// The platform table (the partitioned table, for a partition).
    pub fn table(&self) -> &'static str {
        self.table
    }

    fn rel(&self) -> &'a pg_sys::RelationData {
        // SAFETY: checked open relation of the call.
        unsafe { &*self.td.tg_relation }
    }

    pub fn relid(&self) -> Oid {
        self.rel().rd_id
    }

    /// The schema of the relation (the platform schema).
    pub fn namespace(&self) -> Oid {
        // SAFETY: rd_rel is valid while the relation is open.
        unsafe { (*self.rel().rd_rel).relnamespace }
    }

    /// The owner of the relation (the platform tables' owner).
    pub fn owner(&self) -> Oid {
        // SAFETY: as above.
        unsafe { (*self.rel().rd_rel).relowner }
    }

    /// The row being inserted, or the old row of an update or delete (row triggers only).
    pub fn row(&self) -> Tuple<'a> {
        Tuple {
            tuple: self.td.tg_trigtuple,
            desc: self.rel().rd_att,
            relid: self.relid(),
            deformed: std::cell::OnceCell::new(),
            _call: std::marker::PhantomData,
        }
    }

    /// The new row of an update.
    pub fn new_row(&self) -> Tuple<'a> {
        Tuple {
            tuple: self.td.tg_newtuple,
            desc: self.rel().rd_att,
            relid: self.relid(),
            deformed: std::cell::OnceCell::new(),
            _call: std::marker::PhantomData,
        }
    }

    /// What a statement-level or TRUNCATE trigger returns, and a row trigger that lets the row
    /// go unchanged.
    pub fn unchanged(&self) -> Datum {
        Datum::from(self.td.tg_trigtuple)
    }
}

/// Was this call fired by a TRUNCATE (for choosing which protocol error to report)?
pub fn fired_by_truncate(call: &Call<'_>) -> bool {
    // SAFETY: fcinfo->context is NULL or a Node, a TriggerData for trigger calls.
    unsafe {
        let ctx = (*call.raw()).context;
        !ctx.is_null()
            && (*ctx).type_ == pg_sys::NodeTag::T_TriggerData
            && (*(ctx as *const pg_sys::TriggerData)).tg_event & pg_sys::TRIGGER_EVENT_OPMASK
                == pg_sys::TRIGGER_EVENT_TRUNCATE
    }
}

/// A `DROP EXTENSION` an event trigger fired for: the extensions named, and whether it
/// cascades. `None` when the event is another command.
pub struct DropExtension {
    pub names: Vec<String>,
    pub cascade: bool,
}

/// The `DROP EXTENSION` a `ddl_command_start` event trigger was fired for (`None` for another
/// command); refused (39P01) when the function is not called as an event trigger.
pub fn drop_extension_event(call: &Call<'_>, function: &str) -> Result<Option<DropExtension>> {
    // SAFETY: fcinfo->context is NULL or a Node; an EventTriggerData is what an event trigger
    // call carries, its parse tree a valid node; a DropStmt's objects are String nodes for
    // extensions.
    unsafe {
        let ctx = (*call.raw()).context;
        if ctx.is_null() || (*ctx).type_ != pg_sys::NodeTag::T_EventTriggerData {
            return Err(Error::new(
                TRIGGER_PROTOCOL_VIOLATED,
                format!("{function} can only be called as an event trigger"),
            ));
        }
        let data = &*(ctx as *const pg_sys::EventTriggerData);
        let node = data.parsetree;
        if node.is_null() || (*node).type_ != pg_sys::NodeTag::T_DropStmt {
            return Ok(None);
        }
        let stmt = &*(node as *const pg_sys::DropStmt);
        if stmt.removeType != pg_sys::ObjectType::OBJECT_EXTENSION {
            return Ok(None);
        }
        let mut names = Vec::new();
        let list = stmt.objects;
        if !list.is_null() {
            for i in 0..(*list).length as usize {
                let item = (*(*list).elements.add(i)).ptr_value as *const pg_sys::Node;
                if !item.is_null() && (*item).type_ == pg_sys::NodeTag::T_String {
                    let sval = (*(item as *const pg_sys::String)).sval;
                    if !sval.is_null() {
                        names.push(CStr::from_ptr(sval).to_string_lossy().into_owned());
                    }
                }
            }
        }
        Ok(Some(DropExtension {
            names,
            cascade: stmt.behavior == pg_sys::DropBehavior::DROP_CASCADE,
        }))
    }
}
