//! Values in and out of datums, checked against the type they claim to be.
//!
//! [`FromDatum`] reads a datum of a known type into a Rust value; whoever hands it a datum also
//! hands the datum's type OID, and a mismatch is an error, never a misread. The trigger
//! protocol ([`crate::pg::trigger`]), SPI results ([`crate::pg::spi`]) and table scans
//! ([`crate::pg::heap`]) all read through it, so a column is never read without its type being
//! checked. The constructors build datums in the current memory context.
//!
//! Arrays (`bigint[]` read, array datums made) are in `array`.

mod array;

pub use array::{bytes_array_datum, int8_array_datum, text_array_datum, uuid_array_datum};

use crate::pg::error::{Error, Result, DATATYPE_MISMATCH};
use crate::pg::fmgr::{ret_bytes, varlena_bytes};
use pgrx::pg_sys::{self, Datum, Oid};
use std::ffi::CStr;

/// A value that can be read from a datum of the types [`FromDatum::accepts`] allows.
pub trait FromDatum<'a>: Sized {
    /// What the type is called in messages.
    const NAME: &'static str;

    /// Can a datum of type `oid` be read as `Self`?
    fn accepts(oid: Oid) -> bool;

    /// Read the value.
    ///
    /// # Safety
    /// `d` must be a valid, non-null datum of a type `accepts` allows, alive for `'a`.
    unsafe fn read(d: Datum) -> Result<Self>;
}

/// Read `d` (of type `oid`, `None` when NULL) as `T`, checking the type first. `what` names the
/// value for the error, and is only called to make one (the hot path formats nothing).
///
/// # Safety
/// `d`, when present, must be a valid datum of type `oid`, alive for `'a`.
pub unsafe fn read<'a, T: FromDatum<'a>>(
    d: Option<Datum>,
    oid: Oid,
    what: impl FnOnce() -> String,
) -> Result<Option<T>> {
    if !T::accepts(oid) {
        return Err(mismatch(&what(), T::NAME, oid));
    }
    match d {
        // SAFETY: non-null, of an accepted type (checked above), alive for 'a (caller).
        Some(d) => unsafe { T::read(d) }.map(Some),
        None => Ok(None),
    }
}

/// The error for a column or result of an unexpected type.
pub fn mismatch(what: &str, expected: &str, oid: Oid) -> Error {
    Error::new(
        DATATYPE_MISMATCH,
        format!(
            "pg_labels: {what} is of type {}, not {expected}",
            type_name(oid)
        ),
    )
}

/// The name of a type, for messages.
pub fn type_name(oid: Oid) -> String {
    // SAFETY: format_type_be copes with any OID (it prints ??? for unknown ones).
    unsafe {
        let p = pg_sys::format_type_be(oid);
        CStr::from_ptr(p).to_string_lossy().into_owned()
    }
}

impl FromDatum<'_> for i64 {
    const NAME: &'static str = "bigint";
    fn accepts(oid: Oid) -> bool {
        oid == pg_sys::INT8OID
    }
    unsafe fn read(d: Datum) -> Result<Self> {
        Ok(d.value() as i64)
    }
}

impl FromDatum<'_> for i32 {
    const NAME: &'static str = "integer";
    fn accepts(oid: Oid) -> bool {
        oid == pg_sys::INT4OID
    }
    unsafe fn read(d: Datum) -> Result<Self> {
        Ok(d.value() as i32)
    }
}

impl FromDatum<'_> for i16 {
    const NAME: &'static str = "smallint";
    fn accepts(oid: Oid) -> bool {
        oid == pg_sys::INT2OID
    }
    unsafe fn read(d: Datum) -> Result<Self> {
        Ok(d.value() as i16)
    }
}

impl FromDatum<'_> for bool {
    const NAME: &'static str = "boolean";
    fn accepts(oid: Oid) -> bool {
        oid == pg_sys::BOOLOID
    }
    unsafe fn read(d: Datum) -> Result<Self> {
        Ok(d.value() != 0)
    }
}

impl FromDatum<'_> for Oid {
    const NAME: &'static str = "oid";
    fn accepts(oid: Oid) -> bool {
        oid == pg_sys::OIDOID || oid == pg_sys::REGCLASSOID
    }
    unsafe fn read(d: Datum) -> Result<Self> {
        Ok(Oid::from(d.value() as u32))
    }
}

/// A `timestamptz`, in PostgreSQL's microseconds since 2000-01-01.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Timestamp(pub i64);

impl FromDatum<'_> for Timestamp {
    const NAME: &'static str = "timestamp with time zone";
    fn accepts(oid: Oid) -> bool {
        oid == pg_sys::TIMESTAMPTZOID
    }
    unsafe fn read(d: Datum) -> Result<Self> {
        Ok(Timestamp(d.value() as i64))
    }
}

impl Timestamp {
    pub fn datum(self) -> Datum {
        Datum::from(self.0)
    }

    /// The text form, as `timestamptz` output prints it.
    pub fn text(self) -> String {
        // SAFETY: timestamptz_out reads a by-value timestamp and returns a palloc'd cstring.
        unsafe {
            let (mut out, mut varlena) = (Oid::INVALID, false);
            pg_sys::getTypeOutputInfo(pg_sys::TIMESTAMPTZOID, &mut out, &mut varlena);
            let p = pg_sys::OidOutputFunctionCall(out, self.datum());
            CStr::from_ptr(p).to_string_lossy().into_owned()
        }
    }
}

/// `text` read in place (as long as the datum lives).
impl<'a> FromDatum<'a> for &'a str {
    const NAME: &'static str = "text";
    fn accepts(oid: Oid) -> bool {
        oid == pg_sys::TEXTOID
    }
    unsafe fn read(d: Datum) -> Result<Self> {
        // SAFETY: a text datum is a varlena (caller); the bytes live as long as the datum.
        let bytes = unsafe { varlena_bytes(d.cast_mut_ptr()) };
        std::str::from_utf8(bytes).map_err(|_| {
            Error::new(
                crate::pg::error::CHARACTER_NOT_IN_REPERTOIRE,
                "pg_labels: text that is not valid UTF-8",
            )
        })
    }
}

/// `text`, copied (a byte that is not part of valid UTF-8, which only a `SQL_ASCII` database
/// holds, written `\xNN`: [`escaped`]).
impl FromDatum<'_> for String {
    const NAME: &'static str = "text";
    fn accepts(oid: Oid) -> bool {
        oid == pg_sys::TEXTOID
    }
    unsafe fn read(d: Datum) -> Result<Self> {
        // SAFETY: a text datum is a varlena (caller).
        Ok(escaped(unsafe { varlena_bytes(d.cast_mut_ptr()) }))
    }
}

/// Bytes as text: valid UTF-8 as it is, every other byte written `\xNN` (nothing is lost, as a
/// replacement character would lose it).
pub fn escaped(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        out.push_str(chunk.valid());
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out
}

/// A `bytea` value, copied.
pub struct Bytea(pub Vec<u8>);

impl FromDatum<'_> for Bytea {
    const NAME: &'static str = "bytea";
    fn accepts(oid: Oid) -> bool {
        oid == pg_sys::BYTEAOID
    }
    unsafe fn read(d: Datum) -> Result<Self> {
        // SAFETY: a bytea datum is a varlena (caller).
        Ok(Bytea(unsafe { varlena_bytes(d.cast_mut_ptr()) }.to_vec()))
    }
}

/// A `bytea` datum in the current memory context.
pub fn bytea_datum(b: &[u8]) -> Result<Datum> {
    ret_bytes(b)
}

/// A `name` value (a role), read as a NUL-terminated string.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Name(pub String);

impl FromDatum<'_> for Name {
    const NAME: &'static str = "name";
    fn accepts(oid: Oid) -> bool {
        oid == pg_sys::NAMEOID
    }
    unsafe fn read(d: Datum) -> Result<Self> {
        // SAFETY: a name datum points to a NUL-padded NAMEDATALEN buffer.
        let s = unsafe { CStr::from_ptr(d.cast_mut_ptr::<std::ffi::c_char>()) };
        Ok(Name(s.to_string_lossy().into_owned()))
    }
}

/// A `uuid`'s 16 bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Uuid(pub [u8; 16]);

impl FromDatum<'_> for Uuid {
    const NAME: &'static str = "uuid";
    fn accepts(oid: Oid) -> bool {
        oid == pg_sys::UUIDOID
    }
    unsafe fn read(d: Datum) -> Result<Self> {
        let mut u = [0u8; 16];
        // SAFETY: a uuid datum points to 16 bytes.
        unsafe {
            std::ptr::copy_nonoverlapping(d.cast_mut_ptr::<u8>() as *const u8, u.as_mut_ptr(), 16)
        };
        Ok(Uuid(u))
    }
}

impl Uuid {
    /// A `uuid` datum in the current memory context.
    pub fn datum(&self) -> Datum {
        // SAFETY: palloc returns 16 writable bytes (or raises).
        unsafe {
            let p = pg_sys::palloc(16) as *mut u8;
            std::ptr::copy_nonoverlapping(self.0.as_ptr(), p, 16);
            Datum::from(p)
        }
    }
}

impl std::fmt::Display for Uuid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, b) in self.0.iter().enumerate() {
            if matches!(i, 4 | 6 | 8 | 10) {
                f.write_str("-")?;
            }
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

/// A `jsonb` value, kept as its datum (compared and stored, never looked into here).
#[derive(Clone, Copy, Debug)]
pub struct Jsonb(pub Datum);

impl FromDatum<'_> for Jsonb {
    const NAME: &'static str = "jsonb";
    fn accepts(oid: Oid) -> bool {
        oid == pg_sys::JSONBOID
    }
    unsafe fn read(d: Datum) -> Result<Self> {
        Ok(Jsonb(d))
    }
}

// jsonb's output function itself, a V1 function (pgrx binds it without the C calling
// convention).
unsafe extern "C-unwind" {
    fn jsonb_out(fcinfo: pg_sys::FunctionCallInfo) -> Datum;
}

impl Jsonb {
    /// The text form: what jsonb's output function prints (called directly: no catalog
    /// lookup of it). The trail's hash chain encodes a step's `args` as this text.
    #[inline]
    pub fn text(self) -> String {
        self.output()
    }

    /// The text form, by jsonb's output function.
    pub fn output(self) -> String {
        // SAFETY: self.0 is a jsonb datum (FromDatum checked the type); jsonb_out returns a
        // palloc'd cstring.
        unsafe {
            let p = pg_sys::DirectFunctionCall1Coll(Some(jsonb_out), Oid::INVALID, self.0);
            CStr::from_ptr(p.cast_mut_ptr())
                .to_string_lossy()
                .into_owned()
        }
    }

    /// A `jsonb` datum from JSON text, by the input function (raises 22P02 on bad JSON).
    pub fn from_text(text: &str) -> Result<Jsonb> {
        let c = std::ffi::CString::new(text)
            .map_err(|_| Error::new(crate::pg::error::INVALID_PARAMETER_VALUE, "NUL in JSON"))?;
        Self::from_cstr(&c)
    }

    /// A `jsonb` datum from JSON text that ends with its NUL (and has no other), without
    /// copying it first.
    pub fn from_nul_terminated(text: &[u8]) -> Result<Jsonb> {
        let c = CStr::from_bytes_with_nul(text)
            .map_err(|_| Error::new(crate::pg::error::INVALID_PARAMETER_VALUE, "NUL in JSON"))?;
        Self::from_cstr(c)
    }

    fn from_cstr(c: &CStr) -> Result<Jsonb> {
        // SAFETY: jsonb_in reads a NUL-terminated string.
        unsafe {
            let (mut input, mut ioparam) = (Oid::INVALID, Oid::INVALID);
            pg_sys::getTypeInputInfo(pg_sys::JSONBOID, &mut input, &mut ioparam);
            Ok(Jsonb(pg_sys::OidInputFunctionCall(
                input,
                c.as_ptr() as *mut _,
                ioparam,
                -1,
            )))
        }
    }
}

/// A `text` datum in the current memory context.
pub fn text_datum(s: &str) -> Result<Datum> {
    ret_bytes(s.as_bytes())
}

/// Do two non-null datums of a column hold the same image?
///
/// # Safety
/// `a` and `b` must be valid datums of the column `attr` describes.
pub unsafe fn same_image(a: Datum, b: Datum, attr: &pg_sys::FormData_pg_attribute) -> bool {
    // SAFETY: the caller's guarantee: the datums are of the type attr describes, so they are
    // read by value, as attlen bytes, as varlenas or as cstrings accordingly.
    unsafe {
        if attr.attbyval {
            a == b
        } else if attr.attlen > 0 {
            let n = attr.attlen as usize;
            std::slice::from_raw_parts(a.cast_mut_ptr::<u8>() as *const u8, n)
                == std::slice::from_raw_parts(b.cast_mut_ptr::<u8>() as *const u8, n)
        } else if attr.attlen == -1 {
            varlena_bytes(a.cast_mut_ptr()) == varlena_bytes(b.cast_mut_ptr())
        } else {
            CStr::from_ptr(a.cast_mut_ptr::<std::ffi::c_char>())
                == CStr::from_ptr(b.cast_mut_ptr::<std::ffi::c_char>())
        }
    }
}

/// Arguments of the built-in types a call reads beyond the plain ones of [`Call`].
pub trait BuiltinArgs<'a> {
    /// The elements of a `text[]` argument (`None` for a NULL element).
    fn text_array(&self, n: usize) -> Vec<Option<&'a [u8]>>;
    /// A `jsonb` argument.
    fn jsonb(&self, n: usize) -> Jsonb;
}

impl<'a> BuiltinArgs<'a> for crate::pg::fmgr::Call<'a> {
    fn text_array(&self, n: usize) -> Vec<Option<&'a [u8]>> {
        if self.is_null(n) {
            return Vec::new();
        }
        // SAFETY: the SQL declaration makes argument n a text[]; deconstruct_array hands back
        // its elements (palloc'd in the call's memory context, alive for the call).
        unsafe {
            let arr =
                pg_sys::pg_detoast_datum(self.datum(n).cast_mut_ptr()) as *mut pg_sys::ArrayType;
            let mut elems: *mut Datum = std::ptr::null_mut();
            let mut nulls: *mut bool = std::ptr::null_mut();
            let mut count: i32 = 0;
            pg_sys::deconstruct_array(
                arr,
                pg_sys::TEXTOID,
                -1,
                false,
                pg_sys::TYPALIGN_INT as _,
                &mut elems,
                &mut nulls,
                &mut count,
            );
            (0..count as usize)
                .map(|i| (!*nulls.add(i)).then(|| varlena_bytes((*elems.add(i)).cast_mut_ptr())))
                .collect()
        }
    }

    fn jsonb(&self, n: usize) -> Jsonb {
        Jsonb(self.datum(n))
    }
}

/// A `uuid` argument of a call (all zeros when NULL).
pub fn uuid_arg(call: &crate::pg::fmgr::Call<'_>, n: usize) -> Uuid {
    let mut u = [0u8; 16];
    if !call.is_null(n) {
        // SAFETY: the SQL declaration makes argument n a uuid: 16 bytes.
        unsafe {
            std::ptr::copy_nonoverlapping(
                call.datum(n).cast_mut_ptr::<u8>() as *const u8,
                u.as_mut_ptr(),
                16,
            )
        }
    }
    Uuid(u)
}
