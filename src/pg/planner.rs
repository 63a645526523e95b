//! Planner support functions: a clause that is not a btree operator handed to the planner as
//! a range of a btree index (as `LIKE 'abc%'` is).

use crate::pg::error::Result;
use pgrx::pg_sys::{self, Datum};

/// # Safety
/// `list` must be a valid pointer list with more than `n` elements.
unsafe fn list_nth(list: *mut pg_sys::List, n: usize) -> *mut pg_sys::Node {
    // SAFETY: the caller's guarantee.
    unsafe { (*(*list).elements.add(n)).ptr_value as *mut pg_sys::Node }
}

/// # Safety
/// `node` must be NULL or a valid node.
unsafe fn is_a(node: *mut pg_sys::Node, tag: pg_sys::NodeTag) -> bool {
    // SAFETY: the caller's guarantee.
    unsafe { !node.is_null() && (*node).type_ == tag }
}

/// Answer a `SupportRequestIndexCondition` for a two-argument boolean function (or operator)
/// whose index-side argument is `col_arg` (0 or 1) and whose other argument is a constant of a
/// varlena type, on a btree index: `range` maps the constant's bytes to the bounds of a range,
/// `(lower, upper)` as datums of the same type, that holds exactly the values the clause is
/// true for (`None`: nothing to offer); the planner is handed `col >= lower AND col < upper`,
/// exact (not rechecked). Returns a `List *` of index conditions, or NULL.
///
/// # Safety
/// `req` must be the `internal` argument of a planner support function: a valid node.
pub unsafe fn btree_range_condition(
    req: Datum,
    col_arg: i32,
    range: impl FnOnce(&[u8]) -> Result<Option<(Datum, Datum)>>,
) -> Result<Datum> {
    const NOTHING: Result<Datum> = Ok(Datum::null());
    // SAFETY: the planner hands a valid request node; its fields are read as the planner's own
    // support functions (e.g. textlike_support) read them.
    unsafe {
        let node = req.cast_mut_ptr::<pg_sys::Node>();
        if !is_a(node, pg_sys::NodeTag::T_SupportRequestIndexCondition) {
            return NOTHING;
        }
        let req = node as *mut pg_sys::SupportRequestIndexCondition;
        if (*req).indexarg != col_arg || (*(*req).index).relam != pg_sys::BTREE_AM_OID {
            return NOTHING;
        }
        let clause = (*req).node;
        let args = if is_a(clause, pg_sys::NodeTag::T_OpExpr) {
            (*(clause as *mut pg_sys::OpExpr)).args
        } else if is_a(clause, pg_sys::NodeTag::T_FuncExpr) {
            (*(clause as *mut pg_sys::FuncExpr)).args
        } else {
            return NOTHING;
        };
        if args.is_null() || (*args).length != 2 {
            return NOTHING;
        }
        let key = list_nth(args, col_arg as usize);
        let other = list_nth(args, 1 - col_arg as usize);
        if !is_a(other, pg_sys::NodeTag::T_Const) {
            return NOTHING;
        }
        let c = other as *mut pg_sys::Const;
        if (*c).constisnull {
            return NOTHING;
        }
        let typ = (*c).consttype;
        let opfamily = (*req).opfamily;
        let ge = pg_sys::get_opfamily_member(
            opfamily,
            typ,
            typ,
            pg_sys::BTGreaterEqualStrategyNumber as i16,
        );
        let lt =
            pg_sys::get_opfamily_member(opfamily, typ, typ, pg_sys::BTLessStrategyNumber as i16);
        if ge == pg_sys::InvalidOid || lt == pg_sys::InvalidOid {
            return NOTHING;
        }
        let bytes = crate::pg::fmgr::varlena_bytes((*c).constvalue.cast_mut_ptr());
        let Some((lower, upper)) = range(bytes)? else {
            return NOTHING;
        };
        let lower_const = pg_sys::makeConst(typ, -1, pg_sys::InvalidOid, -1, lower, false, false);
        let upper_const = pg_sys::makeConst(typ, -1, pg_sys::InvalidOid, -1, upper, false, false);
        let key = key as *mut pg_sys::Expr;
        let ge_clause = pg_sys::make_opclause(
            ge,
            pg_sys::BOOLOID,
            false,
            key,
            lower_const as *mut pg_sys::Expr,
            pg_sys::InvalidOid,
            pg_sys::InvalidOid,
        );
        let lt_clause = pg_sys::make_opclause(
            lt,
            pg_sys::BOOLOID,
            false,
            key,
            upper_const as *mut pg_sys::Expr,
            pg_sys::InvalidOid,
            pg_sys::InvalidOid,
        );
        let list = pg_sys::lappend(std::ptr::null_mut(), ge_clause as *mut std::ffi::c_void);
        let list = pg_sys::lappend(list, lt_clause as *mut std::ffi::c_void);
        (*req).lossy = false;
        Ok(Datum::from(list))
    }
}
