// `#[pg_test]`s of the plumbing that need a backend and a raw datum. Included into `mod tests`
// by lib.rs, beside src/tests.rs.

/// A short-header datum from a heap page is read in place: `packed` hands back the same
/// pointer, no copy is made.
#[pg_test]
fn short_varlena_is_read_in_place() {
    // SAFETY: buf is a valid 1-byte-header varlena for the whole block.
    unsafe {
        // a 1-byte-header varlena of five bytes (a scope's: the format's version, then 'acme')
        let mut buf: [u8; 6] = [0, 1, b'a', b'c', b'm', b'e'];
        pgrx::varlena::set_varsize_1b(buf.as_mut_ptr() as *mut pg_sys::varlena, 6);
        let p = buf.as_mut_ptr() as *mut pg_sys::varlena;
        assert_eq!(crate::pg::fmgr::packed(p), p);
        let bytes = crate::pg::fmgr::varlena_bytes(p);
        assert_eq!(bytes, &[1, b'a', b'c', b'm', b'e']);
    }
}
