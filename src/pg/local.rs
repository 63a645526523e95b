//! State private to one backend, and scoped state whose lifetime shows where it holds.
//!
//! A PostgreSQL backend runs its SQL on one thread, so per-backend state is a plain static.
//! [`BackendLocal`] hands it out only inside a closure, through a `RefCell`: a re-entrant use
//! (a callback firing while the value is borrowed) is a clean error, never two `&mut`.
//!
//! [`Scoped`] is state that holds only while a guard lives: `let _g = FLAG.enter(v);` raises it
//! and dropping the guard (also on an error unwinding through the frame) lowers it. The end of
//! every transaction lowers them all as well ([`end_of_transaction`]), so an error that skips a
//! frame (a `longjmp`) cannot leave one raised.

use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::BuildHasherDefault;

/// A value private to this backend.
pub struct BackendLocal<T>(RefCell<T>);

// SAFETY: a PostgreSQL backend is single-threaded, and this extension starts no threads: these
// statics are only ever touched by the backend's own thread.
unsafe impl<T> Sync for BackendLocal<T> {}

impl<T> BackendLocal<T> {
    pub const fn new(v: T) -> Self {
        BackendLocal(RefCell::new(v))
    }

    /// Run `f` with the value. Panics (which pgrx turns into an ERROR) if called re-entrantly
    /// from inside another `with` of the same value.
    pub fn with<R>(&self, f: impl FnOnce(&mut T) -> R) -> R {
        f(&mut self.0.borrow_mut())
    }
}

impl<T: Clone> BackendLocal<T> {
    /// A copy of the value.
    pub fn get(&self) -> T {
        self.0.borrow().clone()
    }

    /// Replace the value.
    pub fn set(&self, v: T) {
        *self.0.borrow_mut() = v;
    }
}

/// State that holds while a guard returned by [`Scoped::enter`] lives.
pub struct Scoped<T: 'static> {
    value: BackendLocal<Option<T>>,
}

/// Lowers its [`Scoped`] state when dropped.
#[must_use = "the state holds only while the guard lives"]
pub struct Guard<T: 'static> {
    scoped: &'static Scoped<T>,
    previous: Option<T>,
}

impl<T: Clone + 'static> Scoped<T> {
    pub const fn new() -> Self {
        Scoped {
            value: BackendLocal::new(None),
        }
    }

    /// Raise the state until the guard is dropped (the previous value comes back then).
    pub fn enter(&'static self, v: T) -> Guard<T> {
        let previous = self.value.with(|slot| slot.replace(v));
        Guard {
            scoped: self,
            previous,
        }
    }

    /// The current value, if raised.
    pub fn current(&self) -> Option<T> {
        self.value.get()
    }

    fn clear(&self) {
        self.value.set(None);
    }
}

impl<T: Clone + 'static> Default for Scoped<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: 'static> Drop for Guard<T> {
    fn drop(&mut self) {
        let previous = self.previous.take();
        self.scoped.value.with(|slot| *slot = previous);
    }
}

/// Called at the end of every transaction: lowers every scoped state of the platform.
pub fn end_of_transaction(all: &[&dyn Lower]) {
    for s in all {
        s.lower();
    }
}

/// Something [`end_of_transaction`] lowers.
pub trait Lower {
    fn lower(&self);
}

impl<T: Clone + 'static> Lower for Scoped<T> {
    fn lower(&self) {
        self.clear();
    }
}

/// A hasher for keys that are ids drawn at random (uuids, with oids and small tags beside
/// them): their own bits are a good hash, and SipHash per probe would cost more than the probe
/// saves. Run ids can be chosen by whoever opens a run, so the state starts from a seed drawn
/// once per backend and every word is multiplied in before the next is mixed: a difference
/// planted in one word cannot be cancelled by the next without knowing the seed (with the
/// seed and the words only xored and multiplied, flipping a word's top bit and one bit of the
/// next would collide whatever the seed).
pub struct IdHasher(u64);

impl Default for IdHasher {
    fn default() -> Self {
        static SEED: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
        IdHasher(*SEED.get_or_init(|| {
            use std::hash::BuildHasher;
            std::collections::hash_map::RandomState::new().hash_one(0x5eed_u64)
        }))
    }
}

impl std::hash::Hasher for IdHasher {
    fn finish(&self) -> u64 {
        // the low bits choose the bucket: mix the high ones in
        let h = self.0 ^ (self.0 >> 32);
        h.wrapping_mul(0x9e_37_79_b9_7f_4a_7c_15) ^ (h >> 29)
    }
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.0 = (self
                .0
                .rotate_left(23)
                .wrapping_mul(0x9e_37_79_b9_7f_4a_7c_15)
                ^ u64::from_le_bytes(word))
            .wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
        }
    }
}

/// A map keyed by ids drawn at random (see [`IdHasher`]).
pub type IdMap<K, V> = HashMap<K, V, BuildHasherDefault<IdHasher>>;

/// A bounded map of the most recently used entries, keyed by ids drawn at random: two
/// generations of at most `keep` entries each. An entry is looked up in the current generation,
/// then in the previous one (and moved into the current); when the current one is full it
/// becomes the previous one, and the entries not used since are dropped. So a backend that goes
/// round more keys than `keep` still finds the last `keep` it used, where a map cleared whole
/// when full would miss about half of them.
pub struct Recent<K, V> {
    current: IdMap<K, V>,
    previous: IdMap<K, V>,
    keep: usize,
}

impl<K: std::hash::Hash + Eq, V> Recent<K, V> {
    pub const fn new(keep: usize) -> Self {
        Recent {
            current: HashMap::with_hasher(BuildHasherDefault::new()),
            previous: HashMap::with_hasher(BuildHasherDefault::new()),
            keep,
        }
    }

    /// Is `key` in the current generation (moved there from the previous one if it was used
    /// in that)?
    fn promote(&mut self, key: &K) -> bool
    where
        K: Copy,
    {
        if self.current.contains_key(key) {
            return true;
        }
        match self.previous.remove(key) {
            Some(v) => {
                self.insert(*key, v);
                true
            }
            None => false,
        }
    }

    /// The entry of `key`, if it was used in this generation or the one before.
    pub fn get(&mut self, key: &K) -> Option<&mut V>
    where
        K: Copy,
    {
        if self.promote(key) {
            self.current.get_mut(key)
        } else {
            None
        }
    }

    /// Keep `value` for `key`.
    pub fn insert(&mut self, key: K, value: V) {
        if self.current.len() >= self.keep && !self.current.contains_key(&key) {
            self.previous = std::mem::take(&mut self.current);
        }
        self.current.insert(key, value);
    }

    /// The entry of `key`, made with `V::default()` if there is none.
    pub fn entry(&mut self, key: K) -> &mut V
    where
        K: Copy,
        V: Default,
    {
        if !self.promote(&key) {
            self.insert(key, V::default());
        }
        self.current.entry(key).or_default()
    }

    pub fn clear(&mut self) {
        self.current.clear();
        self.previous.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::Recent;

    #[test]
    fn recent_keeps_what_was_used_last() {
        let mut r: Recent<u64, u64> = Recent::new(2);
        r.insert(1, 10);
        r.insert(2, 20);
        // full: the next new key starts a generation, the two before are still found
        r.insert(3, 30);
        assert_eq!(r.get(&1).copied(), Some(10));
        // 1 moved into the current generation (3, 1): full again
        r.insert(4, 40);
        // (3, 1) the previous generation now, 2 dropped
        assert_eq!(r.get(&2), None);
        assert_eq!(r.get(&3).copied(), Some(30));
        assert_eq!(r.get(&4).copied(), Some(40));
        *r.entry(5) += 5;
        assert_eq!(r.get(&5).copied(), Some(5));
        assert!(r.current.len() <= 2 && r.previous.len() <= 2);
        // going round as many keys as kept (a map cleared whole when full would lose them
        // all at every turn): after the first round each is found
        let mut r: Recent<u64, u64> = Recent::new(100);
        for round in 0..3 {
            for k in 0..100 {
                assert_eq!(r.get(&k).is_some(), round > 0, "key {k}, round {round}");
                r.insert(k, k);
            }
        }
        r.clear();
        assert_eq!(r.get(&1), None);
    }
}
