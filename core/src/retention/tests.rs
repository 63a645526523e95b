//! The retention's tests: times and the cutoffs a purge accepts.

use super::*;

// 2026-12-05 07:12:01 UTC
const NOW: i64 = (9835 * 86_400 + 7 * 3600 + 12 * 60 + 1) * 1_000_000;

#[test]
fn times() {
    assert_eq!(utc_text(0), "2000-01-01 00:00:00+00");
    assert_eq!(utc_text(NOW), "2026-12-05 07:12:01+00");
    assert_eq!(utc_text(-1), "1999-12-31 23:59:59+00");
    assert_eq!(utc_text_micros(-1), "1999-12-31 23:59:59.999999+00");
    assert_eq!(utc_text_micros(NOW + 42), "2026-12-05 07:12:01.000042+00");
    assert_eq!(utc_text(month_start(NOW)), "2026-12-01 00:00:00+00");
    assert_eq!(utc_text(latest_cutoff(NOW)), "2026-11-01 00:00:00+00");
    // across a year
    let jan = start_of(2027, 1) + 5 * DAY;
    assert_eq!(utc_text(latest_cutoff(jan)), "2026-12-01 00:00:00+00");
    for y in 1990..2040 {
        for m in 1..=12 {
            let s = start_of(y, m);
            assert_eq!(year_month(s), (y, m));
            assert_eq!(
                year_month(s - 1),
                if m == 1 { (y - 1, 12) } else { (y, m - 1) }
            );
            assert_eq!(month_start(s + 3 * DAY), s);
        }
    }
}

#[test]
fn cutoffs() {
    let latest = latest_cutoff(NOW);
    assert_eq!(
        cut(NOW, Some(latest)),
        Ok(Cut {
            cutoff: latest,
            month_start: latest
        })
    );
    let year_ago = NOW - 365 * DAY;
    assert_eq!(
        cut(NOW, Some(year_ago)).map(|c| c.month_start),
        Ok(month_start(year_ago))
    );
    for bad in [
        None,
        Some(i64::MAX),
        Some(i64::MIN),
        Some(latest + 1),
        Some(NOW),
        Some(NOW + DAY),
    ] {
        let r = cut(NOW, bad).unwrap_err();
        assert!(r.message.starts_with("purge"), "{}", r.message);
    }
}
