//! The carried scope's tests: HMAC-SHA256 against RFC 4231's case 2, and only the role with
//! the key carries a scope.

use super::*;

#[test]
fn rfc4231_case_2() {
    let mac = hmac(b"Jefe", b"what do ya want for nothing?");
    let hex: String = mac.iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(
        hex,
        "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
    );
}

#[test]
fn only_the_role_with_the_key() {
    let key = [7u8; 32];
    let v = seal(&key, "analyst", "acme/support");
    assert_eq!(open(&v, &key, "analyst"), Some("acme/support"));
    assert_eq!(open(&v, &key, "definer"), None);
    assert_eq!(open(&v, &[8u8; 32], "analyst"), None);
    // another role's claim cannot be made from one's own
    let forged = v.replace("|analyst", "|definer");
    assert_eq!(open(&forged, &key, "definer"), None);
    let widened = v.replace("acme/support", "acme");
    assert_eq!(open(&widened, &key, "analyst"), None);
    // a role name with the separator in it
    let odd = seal(&key, "a|b", "acme");
    assert_eq!(open(&odd, &key, "a|b"), Some("acme"));
    for bad in ["", "acme", "|acme|analyst", "zz|acme|analyst"] {
        assert_eq!(open(bad, &key, "analyst"), None);
    }
}
