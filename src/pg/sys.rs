//! PostgreSQL's own names that the layers above `pg` use: C types passed by value, the ids of
//! built-in types, lock modes and comparison functions. Names and constants only, listed one by
//! one: every function of PostgreSQL's C API is reached through a safe function of `pg`.

pub use pgrx::pg_sys::{
    Datum, InvalidTransactionId, Oid, SubTransactionId, TransactionId, LOCKMODE,
};

/// The ids of built-in types (a saved plan's parameter types).
pub mod types {
    pub use pgrx::pg_sys::{
        BOOLOID, BYTEAOID, INT2OID, INT4OID, INT8OID, JSONBOID, OIDOID, REGCLASSOID, TEXTARRAYOID,
        TEXTOID, TIMESTAMPTZOID, UUIDARRAYOID, UUIDOID,
    };
}

/// Lock modes of the lock manager (tables and objects).
pub mod locks {
    pub use pgrx::pg_sys::{
        AccessShareLock, ExclusiveLock, RowExclusiveLock, RowShareLock, ShareLock,
    };
}

/// Built-in comparison functions (an index probe's key equality).
pub mod funcs {
    pub use pgrx::pg_sys::{F_TEXTEQ, F_UUID_EQ};
}
