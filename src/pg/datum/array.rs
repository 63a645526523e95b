//! Arrays in and out of datums: a `bigint[]` read as a `Vec<i64>`, and one-dimensional array
//! datums of `bigint`, `text`, byte strings and `uuid` made in the current memory context.

use super::{text_datum, FromDatum, Uuid};
use crate::pg::error::Result;
use crate::pg::fmgr::ret_bytes;
use pgrx::pg_sys::{self, Datum, Oid};

/// An `int8[]` value.
impl FromDatum<'_> for Vec<i64> {
    const NAME: &'static str = "bigint[]";
    fn accepts(oid: Oid) -> bool {
        oid == pg_sys::INT8ARRAYOID
    }
    unsafe fn read(d: Datum) -> Result<Self> {
        // SAFETY: an int8[] datum; deconstruct_array hands back its elements.
        unsafe {
            let arr = pg_sys::pg_detoast_datum(d.cast_mut_ptr()) as *mut pg_sys::ArrayType;
            let mut elems: *mut Datum = std::ptr::null_mut();
            let mut nulls: *mut bool = std::ptr::null_mut();
            let mut n: i32 = 0;
            pg_sys::deconstruct_array(
                arr,
                pg_sys::INT8OID,
                8,
                true,
                pg_sys::TYPALIGN_DOUBLE as _,
                &mut elems,
                &mut nulls,
                &mut n,
            );
            Ok((0..n as usize)
                .filter(|&i| !*nulls.add(i))
                .map(|i| (*elems.add(i)).value() as i64)
                .collect())
        }
    }
}

/// A one-dimensional array datum of `elems` (of type `elem`, as `pg_type` describes it), in
/// the current memory context.
fn array_datum(mut elems: Vec<Datum>, elem: Oid, len: i32, byval: bool, align: u8) -> Datum {
    // SAFETY: elems are datums of type `elem`, described by len/byval/align.
    unsafe {
        let a = pg_sys::construct_array(
            elems.as_mut_ptr(),
            elems.len() as i32,
            elem,
            len,
            byval,
            align as std::ffi::c_char,
        );
        Datum::from(a)
    }
}

/// A `bigint[]` datum in the current memory context.
pub fn int8_array_datum(values: &[i64]) -> Datum {
    let elems = values.iter().map(|&v| Datum::from(v)).collect();
    array_datum(elems, pg_sys::INT8OID, 8, true, pg_sys::TYPALIGN_DOUBLE)
}

/// A `text[]` datum in the current memory context.
pub fn text_array_datum(values: &[String]) -> Result<Datum> {
    let elems = values
        .iter()
        .map(|v| text_datum(v))
        .collect::<Result<_>>()?;
    Ok(array_datum(
        elems,
        pg_sys::TEXTOID,
        -1,
        false,
        pg_sys::TYPALIGN_INT,
    ))
}

/// A `uuid[]` datum in the current memory context.
pub fn uuid_array_datum(ids: &[Uuid]) -> Datum {
    let elems = ids.iter().map(Uuid::datum).collect();
    array_datum(elems, pg_sys::UUIDOID, 16, false, pg_sys::TYPALIGN_CHAR)
}

/// A `text[]` datum of byte strings, in the current memory context.
pub fn bytes_array_datum(values: &[Vec<u8>]) -> Result<Datum> {
    let elems = values.iter().map(|v| ret_bytes(v)).collect::<Result<_>>()?;
    Ok(array_datum(
        elems,
        pg_sys::TEXTOID,
        -1,
        false,
        pg_sys::TYPALIGN_INT,
    ))
}
