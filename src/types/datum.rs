//! The datums of `scope` and `labelset`: a version byte, then the core's internal form (a
//! scope's path, a labelset's body). Read in place, built in the current memory context, and
//! recognised by type OID when read from a table or a statement's result.

use crate::pg::datum::FromDatum;
use crate::pg::error::{Error, Result};
use crate::pg::fmgr::{varlena_bytes, varlena_from, Call};
use crate::pg::local::BackendLocal;
use crate::pg::sys::{Datum, Oid};
use pg_labels_core::LabelSet;

/// Version byte at the head of every `scope` and `labelset` datum and binary message.
pub const FORMAT_VERSION: u8 = 1;

/// Strip and check the version byte of a stored datum.
#[inline(always)]
fn versioned<'a>(bytes: &'a [u8], type_name: &str) -> Result<&'a [u8]> {
    match bytes.split_first() {
        Some((&FORMAT_VERSION, rest)) => Ok(rest),
        _ => Err(Error::corrupt(type_name)),
    }
}

/// A `scope` value: its path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Scope<'a>(pub &'a [u8]);

/// A `scope` from the bytes of its datum (after the varlena header).
#[inline(always)]
pub fn scope_from_bytes(bytes: &[u8]) -> Result<&[u8]> {
    versioned(bytes, "scope")
}

/// A `labelset` from the bytes of its datum.
#[inline(always)]
pub fn labelset_from_bytes(bytes: &[u8]) -> Result<LabelSet<'_>> {
    LabelSet::from_body(versioned(bytes, "labelset")?).map_err(|_| Error::corrupt("labelset"))
}

/// The OIDs of the extension's types, found once per backend (and again when an OID is not
/// recognised: the extension may have been created again).
#[derive(Clone, Copy, Default)]
struct TypeOids {
    scope: Oid,
    labelset: Oid,
}

static TYPE_OIDS: BackendLocal<TypeOids> = BackendLocal::new(TypeOids {
    scope: Oid::INVALID,
    labelset: Oid::INVALID,
});

/// Is `oid` the extension's type named `name`?
fn is_extension_type(oid: Oid, name: &str) -> bool {
    crate::pg::catalog::extension_type_name(oid, c"pg_labels")
        .is_some_and(|qualified| qualified.rsplit('.').next() == Some(name))
}

fn accepts(oid: Oid, pick: fn(&mut TypeOids) -> &mut Oid, name: &str) -> bool {
    if TYPE_OIDS.with(|t| *pick(t) == oid) && oid != Oid::INVALID {
        return true;
    }
    if is_extension_type(oid, name) {
        TYPE_OIDS.with(|t| *pick(t) = oid);
        return true;
    }
    false
}

impl<'a> FromDatum<'a> for Scope<'a> {
    const NAME: &'static str = "scope";
    fn accepts(oid: Oid) -> bool {
        accepts(oid, |t| &mut t.scope, "scope")
    }
    unsafe fn read(d: Datum) -> Result<Self> {
        // SAFETY: a scope datum is a varlena (caller).
        scope_from_bytes(unsafe { varlena_bytes(d.cast_mut_ptr()) }).map(Scope)
    }
}

impl<'a> FromDatum<'a> for LabelSet<'a> {
    const NAME: &'static str = "labelset";
    fn accepts(oid: Oid) -> bool {
        accepts(oid, |t| &mut t.labelset, "labelset")
    }
    unsafe fn read(d: Datum) -> Result<Self> {
        // SAFETY: a labelset datum is a varlena (caller).
        labelset_from_bytes(unsafe { varlena_bytes(d.cast_mut_ptr()) })
    }
}

/// An owned `scope` path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScopeBuf(pub Vec<u8>);

impl FromDatum<'_> for ScopeBuf {
    const NAME: &'static str = "scope";
    fn accepts(oid: Oid) -> bool {
        <Scope<'_> as FromDatum<'_>>::accepts(oid)
    }
    unsafe fn read(d: Datum) -> Result<Self> {
        Ok(ScopeBuf(
            // SAFETY: the caller's guarantee (a scope datum), handed on.
            unsafe { <Scope<'_> as FromDatum<'_>>::read(d) }?.0.to_vec(),
        ))
    }
}

/// An owned `labelset` body.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct LabelSetBuf(pub Vec<u8>);

impl LabelSetBuf {
    pub fn set(&self) -> LabelSet<'_> {
        LabelSet::from_canonical(&self.0)
    }
}

impl FromDatum<'_> for LabelSetBuf {
    const NAME: &'static str = "labelset";
    fn accepts(oid: Oid) -> bool {
        <LabelSet<'_> as FromDatum<'_>>::accepts(oid)
    }
    unsafe fn read(d: Datum) -> Result<Self> {
        Ok(LabelSetBuf(
            // SAFETY: the caller's guarantee (a labelset datum), handed on.
            unsafe { <LabelSet<'_> as FromDatum<'_>>::read(d) }?
                .body()
                .to_vec(),
        ))
    }
}

/// A `scope` datum from its path.
#[inline]
pub fn scope_datum(path: &[u8]) -> Result<Datum> {
    varlena_from(&[&[FORMAT_VERSION], path])
}

/// A `labelset` datum from its body.
#[inline]
pub fn labelset_datum(body: &[u8]) -> Result<Datum> {
    varlena_from(&[&[FORMAT_VERSION], body])
}

/// The extension's type arguments of a call.
pub trait TypeArgs<'a> {
    /// A `scope` argument: its path.
    fn scope(&self, n: usize) -> Result<&'a [u8]>;
    /// A `labelset` argument.
    fn labelset(&self, n: usize) -> Result<LabelSet<'a>>;
}

impl<'a> TypeArgs<'a> for Call<'a> {
    #[inline(always)]
    fn scope(&self, n: usize) -> Result<&'a [u8]> {
        scope_from_bytes(self.bytes(n))
    }

    #[inline(always)]
    fn labelset(&self, n: usize) -> Result<LabelSet<'a>> {
        labelset_from_bytes(self.bytes(n))
    }
}
