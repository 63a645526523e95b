// `#[pg_test]`s: what needs a backend but is not a SQL scenario (those are in
// `tests/pg_regress`). Included into `mod tests` by lib.rs.

use pgrx::prelude::*;

/// A short-header datum from a heap page is read in place: `packed` hands back the same
/// pointer, no copy is made.
#[pg_test]
fn short_varlena_is_read_in_place() {
    // SAFETY: buf is a valid 1-byte-header varlena for the whole block.
    unsafe {
        // 'acme' as a 1-byte-header varlena: header, version byte, path
        let mut buf: [u8; 6] = [0, crate::types::datum::FORMAT_VERSION, b'a', b'c', b'm', b'e'];
        pgrx::varlena::set_varsize_1b(buf.as_mut_ptr() as *mut pg_sys::varlena, 6);
        let p = buf.as_mut_ptr() as *mut pg_sys::varlena;
        assert_eq!(crate::pg::fmgr::packed(p), p);
        let bytes = crate::pg::fmgr::varlena_bytes(p);
        assert_eq!(bytes, &[crate::types::datum::FORMAT_VERSION, b'a', b'c', b'm', b'e']);
    }
}

/// An error raised through `error::raise` reaches PL/pgSQL with its SQLSTATE (not XX000).
#[pg_test(error = "caught 22P02")]
fn raised_errors_keep_their_sqlstate() {
    Spi::run(
        "DO $$ BEGIN PERFORM 'Acme'::scope; EXCEPTION WHEN OTHERS THEN
           RAISE EXCEPTION 'caught %', SQLSTATE; END $$",
    )
    .unwrap();
}

/// The aggregate's transition function hands back its state when nothing new arrives.
#[pg_test]
fn union_aggregate_over_many_rows() {
    Spi::run(
        "CREATE TEMP TABLE pu AS SELECT labelset(ARRAY['tag:t' || (i % 50)]) l
         FROM generate_series(1, 20000) i",
    )
    .unwrap();
    let serial = Spi::get_one::<String>("SELECT labelset_union(l)::text FROM pu").unwrap();
    assert_eq!(serial.map(|s| s.matches(',').count()), Some(49));
}

/// jsonb's text read from its binary form (`pg_labels_core::jsonb`, the trail's canonical
/// encoding of `args`) is byte for byte what `jsonb_out` prints (what `verify()` hashes).
#[pg_extern]
fn jsonb_text_agrees(j: pgrx::AnyElement) -> bool {
    // SAFETY: a jsonb datum (the test passes only jsonb): a varlena.
    let bytes = unsafe { crate::pg::fmgr::varlena_bytes(j.datum().cast_mut_ptr()) };
    // (read, not left to jsonb_out: nothing in the corpus is nested deeper than MAX_DEPTH)
    let read = pg_labels_core::jsonb::to_text(bytes);
    let output = crate::pg::datum::Jsonb(j.datum()).output();
    if read.as_deref() != Some(output.as_str()) {
        pgrx::warning!("read {read:?}, jsonb_out {output:?}");
    }
    read.as_deref() == Some(output.as_str())
}

/// A value the reader leaves to `jsonb_out` (its text past `MAX_LEN`): `Jsonb::text` is
/// `jsonb_out`'s.
#[pg_extern]
fn jsonb_text_falls_back(j: pgrx::AnyElement) -> bool {
    // SAFETY: a jsonb datum (the test passes only jsonb): a varlena.
    let bytes = unsafe { crate::pg::fmgr::varlena_bytes(j.datum().cast_mut_ptr()) };
    let j = crate::pg::datum::Jsonb(j.datum());
    pg_labels_core::jsonb::to_text(bytes).is_none() && j.text() == j.output()
}

#[pg_test]
fn jsonb_text_is_jsonb_out() {
    // every part of the format: scalars alone, strings that need escaping, numbers of every
    // scale and weight (short and long numerics), empty and nested containers, containers past
    // 32 entries (whose entries hold end offsets), stored rows (short varlena headers),
    // values large enough to be compressed, and random ones
    Spi::run(
        r#"CREATE TEMP TABLE corpus (j jsonb);
        INSERT INTO corpus VALUES ('null'), ('true'), ('false'), ('0'), ('-0'), ('0.0'),
          ('1'), ('-1'), ('42'), ('1.50'), ('-1.5e-3'), ('1e20'), ('1e-20'), ('-123456789012345678901234567890.0000012'),
          ('9999.9999'), ('10000'), ('0.00010000'), ('1e100'), ('123e-130'), ('3.14159265358979323846264338327950288419716939937510'),
          ('""'), ('"plain"'), ('"a\"b\\c\/d\b\f\n\r\t\u0001\u001f\u007f é ü 日本 😀"'),
          ('[]'), ('{}'), ('[[]]'), ('{"a": {}}'), ('[null, true, false, 1, "x", [1, [2, [3]]], {"k": [{}]}]'),
          ('{"ticket": 42}'), ('{"b": 1, "a": 2, "aa": [1.0, 2.00], "": null}'),
          ('{"key with \"quotes\"": "v\n", "ü": -0.5}');
        INSERT INTO corpus SELECT jsonb_agg(i * 1.5) FROM generate_series(1, 100) i;
        INSERT INTO corpus SELECT jsonb_object_agg('k' || i, CASE i % 4 WHEN 0 THEN to_jsonb(i) WHEN 1 THEN to_jsonb('s' || i)
            WHEN 2 THEN jsonb_build_array(i, i / 7.0) ELSE jsonb_build_object('n', i % 2 = 0) END) FROM generate_series(1, 70) i;
        INSERT INTO corpus SELECT jsonb_build_object('big', repeat('xyz', 5000), 'n', 1);
        INSERT INTO corpus
        SELECT jsonb_build_object('r', round((random() - 0.5)::numeric * 10::numeric ^ (random() * 40 - 20)::int, (random() * 30)::int),
                                  's', md5(i::text), 'a', jsonb_build_array(i, -i, i::numeric / 3, (i % 3 = 0)))
          FROM generate_series(1, 2000) i;
        CREATE TEMP TABLE stored AS SELECT j FROM corpus;"#,
    )
    .unwrap();
    for (table, query) in [
        (
            "corpus",
            "SELECT count(*) FILTER (WHERE NOT tests.jsonb_text_agrees(j)) FROM corpus",
        ),
        (
            "stored",
            "SELECT count(*) FILTER (WHERE NOT tests.jsonb_text_agrees(j)) FROM stored",
        ),
    ] {
        let bad = Spi::get_one::<i64>(query).unwrap();
        assert_eq!(bad, Some(0), "{table}");
    }
    // nine numerics of 131,072 digits each (a few bytes each in the binary form)
    let fell_back = Spi::get_one::<bool>(
        "SELECT tests.jsonb_text_falls_back(jsonb_agg(('1' || repeat('0', 131071))::numeric))
           FROM generate_series(1, 9)",
    )
    .unwrap();
    assert_eq!(fell_back, Some(true));
}
