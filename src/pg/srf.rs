//! Set-returning functions in materialize mode: the rows go to a tuplestore PostgreSQL reads
//! when the function returns.

use crate::pg::error::{Error, Result, DATATYPE_MISMATCH, FEATURE_NOT_SUPPORTED};
use crate::pg::fmgr::Call;
use pgrx::pg_sys::{self, Datum};

/// Where a set-returning function puts its rows.
pub struct Output {
    store: *mut pg_sys::Tuplestorestate,
    desc: pg_sys::TupleDesc,
    columns: usize,
}

/// Set the call up to return rows of `columns` columns (as the SQL declaration says), or refuse
/// a call from a context that cannot take a set.
pub fn materialize(call: &Call<'_>, function: &str, columns: usize) -> Result<Output> {
    // SAFETY: resultinfo is NULL or a node; InitMaterializedSRF sets up setResult and setDesc
    // for a ReturnSetInfo that allows materialize mode (it raises otherwise).
    unsafe {
        let fc = call.raw();
        let rsinfo = (*fc).resultinfo as *mut pg_sys::ReturnSetInfo;
        if rsinfo.is_null() || (*rsinfo).type_ != pg_sys::NodeTag::T_ReturnSetInfo {
            return Err(Error::new(
                FEATURE_NOT_SUPPORTED,
                format!("{function} must be called in a FROM clause"),
            ));
        }
        pg_sys::InitMaterializedSRF(fc, pg_sys::MAT_SRF_USE_EXPECTED_DESC);
        let (store, desc) = ((*rsinfo).setResult, (*rsinfo).setDesc);
        if (*desc).natts as usize != columns {
            return Err(Error::new(
                DATATYPE_MISMATCH,
                format!("{function} returns {columns} columns"),
            ));
        }
        Ok(Output {
            store,
            desc,
            columns,
        })
    }
}

impl Output {
    /// Add a row (`None`: NULL); the datums must be of the declared column types.
    pub fn push(&self, cells: &[Option<Datum>]) {
        assert_eq!(cells.len(), self.columns, "a row of the declared width");
        let mut values: Vec<Datum> = cells
            .iter()
            .map(|c| c.unwrap_or(Datum::from(0usize)))
            .collect();
        let mut nulls: Vec<bool> = cells.iter().map(Option::is_none).collect();
        // SAFETY: the store and descriptor come from InitMaterializedSRF; the row has natts
        // values of the declared types (caller).
        unsafe {
            pg_sys::tuplestore_putvalues(
                self.store,
                self.desc,
                values.as_mut_ptr(),
                nulls.as_mut_ptr(),
            )
        }
    }
}
