//! The chain's tests: a verifier against every kind of tampering, the Merkle paths, the
//! canonical encoding.

use super::*;
use proptest::prelude::*;

fn h(i: u8) -> Hash {
    [i; 32]
}

/// A chain of n steps from a start: (stored steps, head).
fn chain(n: usize) -> (Hash, Vec<(i64, Hash, Hash)>) {
    let start = h(200);
    let mut prev = start;
    let mut out = Vec::new();
    for i in 0..n {
        let leaf = h(i as u8);
        let hash = link(&prev, &leaf);
        out.push(((i as i64 + 1) * 10, prev, leaf));
        prev = hash;
    }
    (start, out)
}

/// Verify stored (id, prev, leaf) rows, as a database would hand them over.
fn verify(start: Hash, rows: &[(i64, Hash, Hash, Hash)], head: Hash, length: i64) -> Option<Break> {
    check(Verifier::new(start, 0, head, length), rows)
}

/// Feed stored (id, prev, leaf, hash) rows to a verifier.
fn check(mut v: Verifier, rows: &[(i64, Hash, Hash, Hash)]) -> Option<Break> {
    for &(id, prev, leaf, hash) in rows {
        v.push(&Stored {
            id,
            prev: Some(prev),
            hash: Some(hash),
            computed: Some(link(&prev, &leaf)),
        });
    }
    v.finish()
}

fn stored(start: Hash, n: usize) -> (Vec<(i64, Hash, Hash, Hash)>, Hash) {
    let (_, c) = chain(n);
    let rows: Vec<_> = c
        .iter()
        .map(|&(id, prev, leaf)| (id, prev, leaf, link(&prev, &leaf)))
        .collect();
    let head = rows.last().map(|r| r.3).unwrap_or(start);
    (rows, head)
}

#[test]
fn intact() {
    for n in 0..6 {
        let (start, _) = chain(n);
        let (rows, head) = stored(start, n);
        assert_eq!(verify(start, &rows, head, n as i64), None, "n={n}");
    }
}

#[test]
fn edited() {
    let (start, _) = chain(5);
    let (mut rows, head) = stored(start, 5);
    rows[2].2 = h(99); // content changed, hash kept
    assert_eq!(
        verify(start, &rows, head, 5),
        Some(Break {
            step: Some(30),
            how: How::Edited,
            at_end: false
        })
    );
}

#[test]
fn removed_middle_and_end() {
    let (start, _) = chain(5);
    let (rows, head) = stored(start, 5);
    let mut middle = rows.clone();
    middle.remove(2);
    assert_eq!(
        verify(start, &middle, head, 5),
        Some(Break {
            step: Some(40),
            how: How::Removed,
            at_end: false
        })
    );
    let mut last = rows.clone();
    last.pop();
    assert_eq!(
        verify(start, &last, head, 5),
        Some(Break {
            step: Some(40),
            how: How::Removed,
            at_end: true
        })
    );
    let mut first = rows.clone();
    first.remove(0);
    assert_eq!(
        verify(start, &first, head, 5),
        Some(Break {
            step: Some(20),
            how: How::Removed,
            at_end: false
        })
    );
}

#[test]
fn inserted() {
    let (start, _) = chain(5);
    let (rows, head) = stored(start, 5);
    // a forged step chained to step 20, placed between 20 and 30
    let forged_leaf = h(77);
    let forged = (25, rows[1].3, forged_leaf, link(&rows[1].3, &forged_leaf));
    let mut with = rows.clone();
    with.insert(2, forged);
    assert_eq!(
        verify(start, &with, head, 5),
        Some(Break {
            step: Some(25),
            how: How::Inserted,
            at_end: false
        })
    );
    // a forged step with a made-up predecessor
    let mut with = rows.clone();
    with.insert(2, (25, h(1), forged_leaf, link(&h(1), &forged_leaf)));
    assert_eq!(
        verify(start, &with, head, 5),
        Some(Break {
            step: Some(25),
            how: How::Inserted,
            at_end: false
        })
    );
    // a forged step chained to step 20 with a hash that is not its content's (the one a
    // forger without the encoding would store): the next step still follows step 20
    let mut with = rows.clone();
    with.insert(2, (25, rows[1].3, forged_leaf, h(3)));
    assert_eq!(
        verify(start, &with, head, 5),
        Some(Break {
            step: Some(25),
            how: How::Inserted,
            at_end: false
        })
    );
    // the same as the last step
    let mut with = rows.clone();
    with.push((60, head, forged_leaf, h(3)));
    assert_eq!(
        verify(start, &with, head, 5),
        Some(Break {
            step: Some(60),
            how: How::Inserted,
            at_end: false
        })
    );
    // a forged last step chained to the head, the run row untouched
    let mut with = rows.clone();
    with.push((60, head, forged_leaf, link(&head, &forged_leaf)));
    assert_eq!(
        verify(start, &with, head, 5),
        Some(Break {
            step: Some(60),
            how: How::Inserted,
            at_end: false
        })
    );
}

#[test]
fn reordered() {
    let (start, _) = chain(5);
    let (rows, head) = stored(start, 5);
    // ids of 20 and 30 exchanged: the rows' contents (their leaves) keep their own id
    // in a real trail; here the order of the rows is what changes
    let mut swapped = rows.clone();
    swapped.swap(1, 2);
    let (a, b) = (swapped[1].0, swapped[2].0);
    swapped[1].0 = b;
    swapped[2].0 = a;
    assert_eq!(
        verify(start, &swapped, head, 5),
        Some(Break {
            step: Some(20),
            how: How::Reordered,
            at_end: false
        })
    );
}

/// A run row's checkpoint: the chain passes through it and may go on.
fn verify_passing(
    start: Hash,
    rows: &[(i64, Hash, Hash, Hash)],
    checkpoint: Hash,
) -> Option<Break> {
    check(Verifier::passing(start, 0, checkpoint), rows)
}

#[test]
fn checkpoint() {
    let (start, _) = chain(5);
    let (rows, head) = stored(start, 5);
    // every step, or the start, may be the checkpoint
    assert_eq!(verify_passing(start, &rows, start), None);
    for r in &rows {
        assert_eq!(verify_passing(start, &rows, r.3), None);
    }
    assert_eq!(verify_passing(start, &rows, head), None);
    // the checkpoint step removed (with what follows it)
    let cut: Vec<_> = rows[..2].to_vec();
    assert_eq!(
        verify_passing(start, &cut, rows[2].3),
        Some(Break {
            step: Some(20),
            how: How::Removed,
            at_end: true
        })
    );
    // a checkpoint not in the chain at all (the row's head edited)
    assert_eq!(
        verify_passing(start, &rows, h(9)),
        Some(Break {
            step: Some(50),
            how: How::Removed,
            at_end: true
        })
    );
    // tampering before or after the checkpoint is found as with a head
    let mut middle = rows.clone();
    middle.remove(3);
    assert_eq!(
        verify_passing(start, &middle, rows[1].3),
        Some(Break {
            step: Some(50),
            how: How::Removed,
            at_end: false
        })
    );
    let mut edited = rows.clone();
    edited[4].2 = h(99);
    assert_eq!(
        verify_passing(start, &edited, rows[1].3),
        Some(Break {
            step: Some(50),
            how: How::Edited,
            at_end: false
        })
    );
}

#[test]
fn head_edited() {
    let (start, _) = chain(3);
    let (rows, _) = stored(start, 3);
    assert_eq!(
        verify(start, &rows, h(5), 3),
        Some(Break {
            step: Some(30),
            how: How::Edited,
            at_end: true
        })
    );
}

#[test]
fn merkle_paths() {
    for n in 1..20usize {
        let leaves: Vec<Hash> = (0..n).map(|i| h(i as u8)).collect();
        let r = root(&leaves);
        for i in 0..n {
            let p = audit_path(&leaves, i);
            assert_eq!(
                root_from_path(&leaves[i], i as u64, n as u64, &p),
                Some(r),
                "n={n} i={i}"
            );
            assert_ne!(root_from_path(&h(250), i as u64, n as u64, &p), Some(r));
        }
    }
}

#[test]
fn encoding_is_unambiguous() {
    // a NULL and an empty text differ; field boundaries cannot shift
    let a = {
        let mut e = Encoder::new("t");
        e.text(None).text(Some("ab"));
        e.finish()
    };
    let b = {
        let mut e = Encoder::new("t");
        e.text(Some("")).text(Some("ab"));
        e.finish()
    };
    let c = {
        let mut e = Encoder::new("t");
        e.text(Some("a")).text(Some("b"));
        e.finish()
    };
    assert!(a != b && b != c && a != c);
    assert_eq!(hex(&from_hex(&hex(&a)).unwrap()), hex(&a));
}

#[test]
fn an_expiry_is_hashed_only_when_there_is_one() {
    let labels = crate::labelset::parse(b"{origin:slack}").unwrap();
    let step = |expires_at: Option<i64>| StepContent {
        id: 7,
        run_id: [1; 16],
        kind: "approval_requested",
        tool: Some("tickets.update"),
        labels: LabelSet::from_canonical(&labels),
        args: Some("{}"),
        decision: None,
        rule: None,
        reason: None,
        request_id: None,
        origin_run: None,
        artifact_id: None,
        digest: None,
        share_id: None,
        crossing_ids: None,
        actor: "platform",
        created_at: 1_000,
        scope: "acme",
        labels_after: h(3),
        expires_at,
    };
    // without one, the leaf is what the encoding before 0.3.1 gave (the fields, nothing after)
    let mut e = Encoder::new(STEP_DOMAIN);
    e.int(Some(7))
        .bytes(Some(&[1; 16]))
        .text(Some("approval_requested"))
        .text(Some("tickets.update"))
        .labels(Some(LabelSet::from_canonical(&labels)))
        .text(Some("{}"));
    // decision, rule, reason, request_id, origin_run, artifact_id, digest, share_id
    for _ in 0..8 {
        e.null();
    }
    e.ints(None)
        .text(Some("platform"))
        .int(Some(1_000))
        .text(Some("acme"))
        .bytes(Some(&h(3)));
    assert_eq!(leaf(&step(None)), e.finish());
    // with one, it is hashed, and any change of it changes the leaf
    assert_ne!(leaf(&step(Some(2_000))), leaf(&step(None)));
    assert_ne!(leaf(&step(Some(2_000))), leaf(&step(Some(2_001))));
}

proptest! {
    /// The encoder hashes exactly the canonical encoding docs/proving.md specifies, for fields
    /// shorter and longer than a SHA-256 block: against the encoding written out byte by
    /// byte and hashed at once.
    #[test]
    fn encoder_is_the_canonical_encoding(
        fields in proptest::collection::vec(
            proptest::option::of(proptest::collection::vec(any::<u8>(), 0..700)), 0..12),
        ints in proptest::option::of(proptest::collection::vec(any::<i64>(), 0..80)),
        n in proptest::option::of(any::<i64>()),
    ) {
        let mut e = Encoder::new(STEP_DOMAIN);
        let mut plain = STEP_DOMAIN.as_bytes().to_vec();
        plain.push(0);
        let field = |plain: &mut Vec<u8>, b: Option<&[u8]>| match b {
            None => plain.push(0),
            Some(b) => {
                plain.push(1);
                plain.extend_from_slice(&(b.len() as u32).to_be_bytes());
                plain.extend_from_slice(b);
            }
        };
        for f in &fields {
            e.bytes(f.as_deref());
            field(&mut plain, f.as_deref());
        }
        e.int(n);
        field(&mut plain, n.map(i64::to_be_bytes).as_ref().map(|b| &b[..]));
        e.ints(ints.as_deref());
        let ints_bytes: Option<Vec<u8>> =
            ints.as_ref().map(|v| v.iter().flat_map(|x| x.to_be_bytes()).collect());
        field(&mut plain, ints_bytes.as_deref());
        prop_assert_eq!(e.finish(), <[u8; 32]>::from(Sha256::digest(&plain)));
    }
}

proptest! {
    /// Any single removal, insertion, edit or exchange of neighbours is found, and at
    /// the step it touches.
    #[test]
    fn any_tampering_is_found(n in 2usize..30, at in 0usize..30, what in 0u8..4) {
        let at = at % n;
        let (start, _) = chain(n);
        let (rows, head) = stored(start, n);
        let mut t = rows.clone();
        let expect_step;
        match what {
            0 => { t[at].2 = h(250); expect_step = Some(rows[at].0); }
            1 => { t.remove(at); expect_step = None; }
            2 => {
                let forged = (rows[at].0 + 5, rows[at].3, h(251), link(&rows[at].3, &h(251)));
                t.insert(at + 1, forged);
                expect_step = Some(rows[at].0 + 5);
            }
            _ => {
                let j = if at + 1 < n { at + 1 } else { at - 1 };
                let (lo, hi) = (at.min(j), at.max(j));
                t.swap(lo, hi);
                let (a, b) = (t[lo].0, t[hi].0);
                t[lo].0 = b; t[hi].0 = a;
                expect_step = Some(rows[lo].0);
            }
        }
        let found = verify(start, &t, head, n as i64);
        prop_assert!(found.is_some());
        if let Some(s) = expect_step { prop_assert_eq!(found.unwrap().step, Some(s)); }
        // against a checkpoint at or after the step touched, the same (a forged step
        // appended after the checkpoint with a chain of its own is what only a digest shows)
        let cp = rows[(at + 1).min(n - 1)].3;
        let passing = verify_passing(start, &t, cp);
        if what != 2 || at + 1 < n {
            prop_assert!(passing.is_some(), "what={} at={}", what, at);
        }
    }
}
