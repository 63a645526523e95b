//! Retention: which cutoffs `pg_labels.purge(older_than)` accepts.
//!
//! Retention removes the past, never the present: a purge keeps at least the month it runs in
//! and the [`MIN_RETENTION_MONTHS`] before it (UTC), whoever calls it and whatever cutoff it is
//! given. A cutoff later than the start of that kept window, an infinite one or none at all is
//! refused before anything is read.
//!
//! Times are PostgreSQL's: microseconds since 2000-01-01 00:00 UTC, `i64::MIN` and `i64::MAX`
//! for `-infinity` and `infinity`.

use crate::refusal::{self, Refusal};
use crate::step::year_month;

/// Whole months (UTC) before the current one that a purge always keeps.
pub const MIN_RETENTION_MONTHS: i64 = 1;

const DAY: i64 = 86_400_000_000;

/// What a purge with an accepted cutoff removes: every month of the trail before the month
/// the cutoff falls in (`month_start`), and whole runs with nothing at or after the cutoff.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cut {
    pub cutoff: i64,
    pub month_start: i64,
}

/// Check a purge's cutoff against the time it runs at (`now`, the transaction's start).
pub fn cut(now: i64, cutoff: Option<i64>) -> Result<Cut, Refusal> {
    let Some(cutoff) = cutoff else {
        return Err(refusal::purge_without_cutoff());
    };
    if cutoff == i64::MAX || cutoff == i64::MIN {
        let which = if cutoff == i64::MAX {
            "infinity"
        } else {
            "-infinity"
        };
        return Err(refusal::purge_cutoff_infinite(
            which,
            &utc_text(latest_cutoff(now)),
        ));
    }
    let latest = latest_cutoff(now);
    if cutoff > latest {
        return Err(refusal::purge_removes_present(
            &utc_text(cutoff),
            &utc_text(latest),
            MIN_RETENTION_MONTHS,
        ));
    }
    Ok(Cut {
        cutoff,
        month_start: month_start(cutoff),
    })
}

/// The latest cutoff a purge at `now` accepts: the start (UTC) of the month
/// [`MIN_RETENTION_MONTHS`] before the current one.
pub fn latest_cutoff(now: i64) -> i64 {
    let (y, m) = year_month(now);
    let months = y * 12 + (m - 1) - MIN_RETENTION_MONTHS;
    start_of(months.div_euclid(12), months.rem_euclid(12) + 1)
}

/// The start (UTC) of the month `t` falls in.
pub fn month_start(t: i64) -> i64 {
    let (y, m) = year_month(t);
    start_of(y, m)
}

/// Midnight UTC of the first day of month `m` (1-12) of year `y`.
fn start_of(y: i64, m: i64) -> i64 {
    (days_from_civil(y, m, 1) - 10_957) * DAY
}

/// Days since 1970-01-01 of a date (H. Hinnant's days_from_civil).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// A time as `YYYY-MM-DD HH:MM:SS+00`, whatever the session's DateStyle or TimeZone (for
/// messages; seconds' fractions dropped).
pub fn utc_text(t: i64) -> String {
    let (y, m) = year_month(t);
    let day = t.div_euclid(DAY) - (days_from_civil(y, m, 1) - 10_957) + 1;
    let secs = t.rem_euclid(DAY) / 1_000_000;
    format!(
        "{y:04}-{m:02}-{day:02} {:02}:{:02}:{:02}+00",
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    )
}

/// A time as `YYYY-MM-DD HH:MM:SS.ffffff+00` (microseconds kept), whatever the session's
/// settings: a value PostgreSQL's `timestamptz` input reads back exactly.
pub fn utc_text_micros(t: i64) -> String {
    let whole = utc_text(t);
    format!(
        "{}.{:06}+00",
        &whole[..whole.len() - 3],
        t.rem_euclid(1_000_000)
    )
}

#[cfg(test)]
mod tests;
