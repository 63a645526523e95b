//! The scope a transaction carries to Citus' workers, bound to the role that entered it.
//!
//! On a Citus cluster a statement's rows are read by backends Citus opens on the workers, as
//! the current user of the node the statement entered, which have entered no scope.
//! `enter_scope()` sets a setting Citus replays on every connection of the transaction; anyone
//! can set that setting too. So the value names the role that entered the scope and carries an
//! HMAC-SHA256 of (role, scope) under a key only the tables' owner reads (a reference table on
//! every node): a worker's backend takes the scope only for that role, acting as itself, and
//! only with a valid tag. A caller cannot forge another role's claim, so a `SECURITY DEFINER`
//! function, whose queries reach the workers as its owner, gets no scope from its caller.
//!
//! The value: `<64 hex digits>|<scope>|<role>` (a scope has no `|`; a role name may).

use sha2::{Digest, Sha256};

/// HMAC-SHA256 (RFC 2104).
pub fn hmac(key: &[u8], message: &[u8]) -> [u8; 32] {
    const BLOCK: usize = 64;
    let mut k = [0u8; BLOCK];
    if key.len() > BLOCK {
        k[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        k[..key.len()].copy_from_slice(key);
    }
    let pad = |byte: u8| k.map(|b| b ^ byte);
    let mut inner = Sha256::new();
    inner.update(pad(0x36));
    inner.update(message);
    let mut outer = Sha256::new();
    outer.update(pad(0x5c));
    outer.update(inner.finalize());
    outer.finalize().into()
}

fn tag(key: &[u8], role: &str, scope: &str) -> [u8; 32] {
    let mut message = Vec::with_capacity(role.len() + scope.len() + 1);
    message.extend_from_slice(role.as_bytes());
    message.push(0);
    message.extend_from_slice(scope.as_bytes());
    hmac(key, &message)
}

/// The value carrying `scope` (its text) entered by `role`.
pub fn seal(key: &[u8], role: &str, scope: &str) -> String {
    let t = tag(key, role, scope);
    let mut out = String::with_capacity(64 + 2 + scope.len() + role.len());
    for b in t {
        out.push_str(&format!("{b:02x}"));
    }
    out.push('|');
    out.push_str(scope);
    out.push('|');
    out.push_str(role);
    out
}

/// The scope (its text) a value carries for `role`: `None` unless it names that role and its
/// tag is valid under `key`.
pub fn open<'a>(value: &'a str, key: &[u8], role: &str) -> Option<&'a str> {
    let (hex, rest) = value.split_once('|')?;
    let (scope, named) = rest.split_once('|')?;
    if named != role || hex.len() != 64 {
        return None;
    }
    let mut given = [0u8; 32];
    for (i, b) in given.iter_mut().enumerate() {
        *b = u8::from_str_radix(hex.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    let expected = tag(key, role, scope);
    // compared in constant time
    let differ = given
        .iter()
        .zip(expected)
        .fold(0u8, |d, (a, b)| d | (a ^ b));
    (differ == 0).then_some(scope)
}

#[cfg(test)]
mod tests;
