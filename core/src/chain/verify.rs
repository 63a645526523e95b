//! A run's chain checked in one pass: the stored steps fed in id order to a [`Verifier`],
//! which finds the first place the chain breaks ([`Break`]) and how ([`How`]).

use super::Hash;
use std::fmt;

/// How a chain breaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum How {
    /// The step's content (or the hash stored with it) is not what was chained.
    Edited,
    /// Steps are missing before this step (or, at the end, after it).
    Removed,
    /// This step was not chained where it stands: it was added.
    Inserted,
    /// This step stands where another was chained: ids were exchanged.
    Reordered,
}

impl How {
    pub fn name(self) -> &'static str {
        match self {
            How::Edited => "edited",
            How::Removed => "removed",
            How::Inserted => "inserted",
            How::Reordered => "reordered",
        }
    }
}

/// Where a chain first breaks: the step (`None`: the run row itself) and how.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Break {
    pub step: Option<i64>,
    pub how: How,
    /// The break is after the last step (steps removed at the end, or the head edited).
    pub at_end: bool,
}

impl fmt::Display for Break {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.step, self.at_end, self.how) {
            (None, _, How::Removed) => write!(f, "steps were removed from the start of the run"),
            (None, _, how) => write!(f, "the run's head was {}", how.name()),
            (Some(s), true, How::Removed) => write!(f, "steps were removed after step {s}"),
            (Some(s), true, how) => write!(f, "{} after step {s}", how.name()),
            (Some(s), false, How::Removed) => {
                write!(f, "steps were removed (or replaced) before step {s}")
            }
            (Some(s), false, how) => write!(f, "step {s} was {}", how.name()),
        }
    }
}

/// One stored step of a chain, in id order, with the hash its stored content links to.
#[derive(Clone, Copy, Debug)]
pub struct Stored {
    pub id: i64,
    /// The predecessor's hash it stores (`None`: never chained).
    pub prev: Option<Hash>,
    /// The hash it stores.
    pub hash: Option<Hash>,
    /// `link(prev, leaf(content))`, computed again from what is stored now.
    pub computed: Option<Hash>,
}

/// A one-pass check of a run's chain: constant memory whatever the run's length. Feed the
/// stored steps in id order with [`Verifier::push`], then [`Verifier::finish`].
pub struct Verifier {
    expected: Hash,
    /// The hash of the step before the previous one, and the previous step's id.
    before_prev: Option<Hash>,
    prev_id: Option<i64>,
    seen: i64,
    start_count: i64,
    head: Hash,
    /// `None`: the head is a checkpoint the chain must pass through, with steps chained after
    /// it allowed ([`Verifier::passing`]).
    length: Option<i64>,
    hash_at_length: Option<(i64, Hash)>,
    head_seen: bool,
    first_extra: Option<i64>,
    found: Option<Break>,
    pending: Option<Pending>,
    /// A step whose content does not give its stored hash: (its id, the hash before it).
    suspect: Option<(i64, Hash)>,
}

/// A link that did not match at `at`: decided by what follows.
struct Pending {
    at: i64,
    wanted: Hash,
    expected: Hash,
    next_checked: bool,
}

impl Verifier {
    /// `start`: the genesis (or the cut the chain continues from), `before`: how many steps
    /// came before it (0, or the purged count); `head` and `length`: what the run row keeps.
    pub fn new(start: Hash, before: i64, head: Hash, length: i64) -> Self {
        let mut v = Verifier::passing(start, before, head);
        v.length = Some(length);
        v.hash_at_length = (length == before).then_some((0, start));
        v
    }

    /// A chain that must pass through `checkpoint` (the start itself, or a step's hash) and
    /// may go on after it: what a run's row keeps (its head as of the last write of the row),
    /// while the steps after it are chained in the trail alone.
    pub fn passing(start: Hash, before: i64, checkpoint: Hash) -> Self {
        Verifier {
            expected: start,
            before_prev: None,
            prev_id: None,
            seen: 0,
            start_count: before,
            head: checkpoint,
            length: None,
            hash_at_length: None,
            head_seen: start == checkpoint,
            first_extra: None,
            found: None,
            pending: None,
            suspect: None,
        }
    }

    /// The first break found so far.
    pub fn broken(&self) -> Option<Break> {
        self.found
    }

    pub fn push(&mut self, s: &Stored) {
        self.seen += 1;
        let position = self.start_count + self.seen;
        if Some(position) == self.length {
            self.hash_at_length = Some((s.id, s.hash.unwrap_or([0; 32])));
        } else if Some(position - 1) == self.length {
            self.first_extra = Some(s.id);
        }
        if s.hash == Some(self.head) {
            self.head_seen = true;
        }
        if self.found.is_some() {
            return;
        }
        if let Some((at, before)) = self.suspect.take() {
            self.found = Some(Break {
                step: Some(at),
                how: if s.prev == Some(before) {
                    How::Inserted
                } else {
                    How::Edited
                },
                at_end: false,
            });
            return;
        }
        if let Some(p) = &mut self.pending {
            if s.hash == Some(p.wanted) {
                // the step at `at` is chained to one that stands after it
                self.found = Some(Break {
                    step: Some(p.at),
                    how: How::Reordered,
                    at_end: false,
                });
                return;
            }
            if !p.next_checked {
                p.next_checked = true;
                if s.prev == Some(p.expected) {
                    // the step at `at` sits between two steps chained to each other
                    self.found = Some(Break {
                        step: Some(p.at),
                        how: How::Inserted,
                        at_end: false,
                    });
                }
            }
            return;
        }
        let (Some(prev), Some(hash)) = (s.prev, s.hash) else {
            self.found = Some(Break {
                step: Some(s.id),
                how: How::Edited,
                at_end: false,
            });
            return;
        };
        if prev != self.expected {
            if Some(prev) == self.before_prev {
                // chained to the step before the previous one: the previous one was added
                self.found = Some(Break {
                    step: self.prev_id,
                    how: How::Inserted,
                    at_end: false,
                });
            } else {
                self.pending = Some(Pending {
                    at: s.id,
                    wanted: prev,
                    expected: self.expected,
                    next_checked: false,
                });
            }
            return;
        }
        if s.computed != Some(hash) {
            // edited, or added with a hash of its own: the next step tells (it is chained to
            // this one's stored hash, or to the step before it)
            self.suspect = Some((s.id, self.expected));
            self.before_prev = Some(self.expected);
            self.expected = hash;
            self.prev_id = Some(s.id);
            return;
        }
        self.before_prev = Some(self.expected);
        self.expected = hash;
        self.prev_id = Some(s.id);
    }

    /// The first break, if any, once every stored step was pushed.
    pub fn finish(mut self) -> Option<Break> {
        if let Some((at, _)) = self.suspect.take() {
            if self.found.is_none() {
                // the last step: added if the run holds more steps than it chained
                self.found = Some(Break {
                    step: Some(at),
                    how: if self
                        .length
                        .is_some_and(|l| self.start_count + self.seen > l)
                    {
                        How::Inserted
                    } else {
                        How::Edited
                    },
                    at_end: false,
                });
            }
        }
        if let Some(p) = self.pending.take() {
            if self.found.is_none() {
                self.found = Some(Break {
                    step: Some(p.at),
                    how: How::Removed,
                    at_end: false,
                });
            }
        }
        if self.found.is_some() {
            return self.found;
        }
        let total = self.start_count + self.seen;
        let Some(length) = self.length else {
            // a checkpoint: every step chained, and the checkpoint among them (or the start)
            return (!self.head_seen).then_some(Break {
                step: self.prev_id,
                how: How::Removed,
                at_end: true,
            });
        };
        if total < length {
            return Some(Break {
                step: self.prev_id,
                how: How::Removed,
                at_end: true,
            });
        }
        if total > length {
            return Some(Break {
                step: self.first_extra,
                how: How::Inserted,
                at_end: false,
            });
        }
        match self.hash_at_length {
            Some((_, h)) if h == self.head => None,
            _ => Some(Break {
                step: self.prev_id,
                how: How::Edited,
                at_end: true,
            }),
        }
    }
}
