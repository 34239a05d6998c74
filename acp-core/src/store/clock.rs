//! The stores' clock: `updated_at` and `created_at` as RFC 3339 UTC with milliseconds, always
//! moving forward for a session.

use std::time::{SystemTime, UNIX_EPOCH};

/// The `updated_at` of a change now, given the session's previous one: the wall clock, but
/// always after `previous` (so every change moves it, also when the clock stands still or
/// steps back).
pub(super) fn touch_time(previous: Option<&str>) -> String {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
    touch_time_at(previous, now)
}

/// [`touch_time`] on another clock: `now` in milliseconds since the Unix epoch (a shared
/// database's clock, which the replicas sharing it agree on).
pub(super) fn touch_time_at(previous: Option<&str>, now: i64) -> String {
    let at = match previous.and_then(parse_rfc3339_ms) {
        Some(previous) if previous >= now => previous + 1,
        _ => now,
    };
    format_rfc3339_ms(at)
}

/// `YYYY-MM-DDTHH:MM:SS.mmmZ` for milliseconds since the Unix epoch.
fn format_rfc3339_ms(ms: i64) -> String {
    let (days, ms_of_day) = (ms.div_euclid(86_400_000), ms.rem_euclid(86_400_000));
    let (year, month, day) = civil_from_days(days);
    let secs = ms_of_day / 1000;
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        secs / 3600,
        secs / 60 % 60,
        secs % 60,
        ms_of_day % 1000
    )
}

/// Milliseconds since the Unix epoch of a UTC RFC 3339 time as the store writes it (`Z`,
/// optional fraction); `None` for anything else.
fn parse_rfc3339_ms(text: &str) -> Option<i64> {
    let b = text.as_bytes();
    let num = |range: std::ops::Range<usize>| -> Option<i64> {
        let digits = b.get(range)?;
        digits.iter().try_fold(0i64, |n, &d| {
            d.is_ascii_digit().then(|| n * 10 + i64::from(d - b'0'))
        })
    };
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || b[10] != b'T' || b[13] != b':' {
        return None;
    }
    if b[16] != b':' || *b.last()? != b'Z' {
        return None;
    }
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hour, minute, second) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || minute > 59 {
        return None;
    }
    if second > 60 {
        return None;
    }
    let millis = match &b[19..b.len() - 1] {
        [] => 0,
        [b'.', fraction @ ..] if !fraction.is_empty() => {
            let first3 = &fraction[..fraction.len().min(3)];
            let n = num(20..20 + first3.len())?;
            if !fraction.iter().all(u8::is_ascii_digit) {
                return None;
            }
            n * 10i64.pow(3 - first3.len() as u32)
        }
        _ => return None,
    };
    let days = days_from_civil(year, month, day);
    Some(((days * 24 + hour) * 60 + minute) * 60_000 + second * 1000 + millis)
}

/// (year, month, day) of a day number since 1970-01-01 (proleptic Gregorian; H. Hinnant's
/// algorithm).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// The day number since 1970-01-01 of a date (the inverse of [`civil_from_days`]).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let yoe = year - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_format_and_parse_back() {
        assert_eq!(format_rfc3339_ms(0), "1970-01-01T00:00:00.000Z");
        // 2026-11-23T16:20:00Z, checked with `date -u -d @1795450800`.
        assert_eq!(
            format_rfc3339_ms(1_795_450_800_123),
            "2026-11-23T16:20:00.123Z"
        );
        assert_eq!(
            format_rfc3339_ms(951_782_400_000),
            "2000-02-29T00:00:00.000Z"
        );
        for ms in [0, 1, 951_782_400_000, 1_795_450_800_123, 4_102_444_799_999] {
            assert_eq!(parse_rfc3339_ms(&format_rfc3339_ms(ms)), Some(ms));
        }
        assert_eq!(
            parse_rfc3339_ms("2026-11-23T16:20:00Z"),
            Some(1_795_450_800_000)
        );
        assert_eq!(
            parse_rfc3339_ms("2026-11-23T16:20:00.5Z"),
            Some(1_795_450_800_500)
        );
        assert_eq!(
            parse_rfc3339_ms("2026-11-23T16:20:00.123456Z"),
            Some(1_795_450_800_123)
        );
        for bad in [
            "",
            "2026-11-23",
            "2026-11-23T16:20:00",
            "2026-11-23T16:20:00+01:00",
            "2026-13-23T16:20:00Z",
            "2026-11-23T16:20:00.Z",
            "2026-11-23T16:20:00.1x3Z",
            "２026-11-23T16:20:00Z",
        ] {
            assert_eq!(parse_rfc3339_ms(bad), None, "{bad}");
        }
    }

    #[test]
    fn touch_time_always_moves_forward() {
        let far_future = "2999-01-01T00:00:00.000Z";
        assert_eq!(touch_time(Some(far_future)), "2999-01-01T00:00:00.001Z");
        let a = touch_time(None);
        let b = touch_time(Some(&a));
        assert!(b > a, "{b} > {a}");
        // A foreign format is not read back: the clock decides.
        assert!(touch_time(Some("yesterday")) >= a);
    }
}
