//! GIN opclass `labelset_ops`: one key per label.
//!
//! Keys are the labels' entries (`[kind][value]`) stored as `bytea` and ordered by `byteacmp`,
//! which is exactly the order of labels inside a `labelset`. Keys are exact, so `@>`, `&&` and
//! `?` need no recheck; `=` and `<@` are rechecked on the heap.

use crate::pg::fmgr::*;
use crate::pg::gin::{keys, Consistent, Extract, SearchMode, FALSE, MAYBE, TRUE};
use crate::pg::sys::Datum;
use crate::sql_function;
use crate::types::datum::*;
use pg_labels_core::label;

/// Strategy numbers (those of the built-in `array_ops`, and jsonb's for `?`).
const OVERLAP: i16 = 1;
const CONTAINS: i16 = 2;
const CONTAINED: i16 = 3;
const EQUAL: i16 = 4;
const HAS: i16 = 9;

sql_function! {
    /// `extractValue(labelset, internal nkeys, internal nullFlags)`
    fn pgl_labelset_gin_extract_value(call) {
        // SAFETY: the SQL declaration (sql/types.sql) makes this the opclass's extractValue.
        let gin = unsafe { Extract::new(&call, false) };
        let set = call.labelset(0)?;
        let n = set.len();
        gin.set_nkeys(n as i32);
        keys(set.iter().map(|l| l.0), n)
    }

    /// `extractQuery(query, internal nkeys, int2 strategy, internal pmatch, internal extra,
    /// internal nullFlags, internal searchMode)`
    fn pgl_labelset_gin_extract_query(call) {
        // SAFETY: the SQL declaration (sql/types.sql) makes this the opclass's extractQuery.
        let gin = unsafe { Extract::new(&call, true) };
        let strategy = gin.strategy();
        let set_nkeys = |n: i32| gin.set_nkeys(n);
        if strategy == HAS {
            // a string that is not a label matches nothing
            return match label::parse(call.bytes(0)) {
                Ok(entry) => {
                    set_nkeys(1);
                    keys(std::iter::once(&entry[..]), 1)
                }
                Err(_) => {
                    set_nkeys(0);
                    Ok(Datum::null())
                }
            };
        }
        let set = call.labelset(0)?;
        let n = set.len();
        set_nkeys(n as i32);
        gin.set_search_mode(match strategy {
            CONTAINS if n == 0 => SearchMode::All,
            CONTAINED => SearchMode::IncludeEmpty,
            EQUAL if n == 0 => SearchMode::IncludeEmpty,
            _ => SearchMode::Default,
        });
        keys(set.iter().map(|l| l.0), n)
    }

    /// `consistent(internal check, int2 strategy, query, int4 nkeys, internal extra,
    /// internal recheck, internal queryKeys, internal nullFlags) → bool`
    fn pgl_labelset_gin_consistent(call) {
        // SAFETY: the SQL declaration (sql/types.sql) makes this the opclass's consistent.
        let gin = unsafe { Consistent::new(&call, false) };
        let strategy = gin.strategy();
        let check = gin.check();
        let (result, re) = match strategy {
            OVERLAP => (check.iter().any(|&c| c), false),
            CONTAINS | HAS => (check.iter().all(|&c| c), false),
            EQUAL => (check.iter().all(|&c| c), true),
            _ => (true, true), // CONTAINED: the heap decides
        };
        gin.set_recheck(re);
        ret_bool(result)
    }

    /// `triConsistent(internal check, int2 strategy, query, int4 nkeys, internal extra,
    /// internal queryKeys, internal nullFlags) → "char"`
    fn pgl_labelset_gin_triconsistent(call) {
        // SAFETY: the SQL declaration (sql/types.sql) makes this the opclass's triConsistent.
        let gin = unsafe { Consistent::new(&call, true) };
        let strategy = gin.strategy();
        let check = gin.ternary_check();
        let all = || {
            if check.contains(&FALSE) {
                FALSE
            } else if check.contains(&MAYBE) {
                MAYBE
            } else {
                TRUE
            }
        };
        let v = match strategy {
            OVERLAP => {
                if check.contains(&TRUE) {
                    TRUE
                } else if check.contains(&MAYBE) {
                    MAYBE
                } else {
                    FALSE
                }
            }
            CONTAINS | HAS => all(),
            EQUAL => match all() {
                FALSE => FALSE,
                _ => MAYBE,
            },
            _ => MAYBE,
        };
        Ok(Datum::from(v))
    }
}
