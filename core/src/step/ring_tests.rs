//! The trail's ring's tests: a step's slot and month.

use super::*;

#[test]
fn slots() {
    const DAY: i64 = 86_400_000_000;
    assert_eq!(year_month(0), (2000, 1));
    assert_eq!(year_month(31 * DAY - 1), (2000, 1));
    assert_eq!(year_month(31 * DAY), (2000, 2));
    assert_eq!(year_month(-1), (1999, 12));
    // 2026-12-03: 9833 days after 2000-01-01
    assert_eq!(year_month(9833 * DAY), (2026, 12));
    assert_eq!(trail_slot(9833 * DAY), ((2026 * 12 + 11) % 24) as i16);
    // 2000-01 is slot (2000 * 12) % 24 = 0, and slots cycle every 24 months
    assert_eq!(trail_slot(0), 0);
    assert_eq!(trail_slot(31 * DAY), 1);
}
