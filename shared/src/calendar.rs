//! Calendar dates from Unix time, for the moments racelab stamps (a recording's, the atlas's),
//! without a date library: the browser app builds this crate too.

/// Seconds since 1970 (UTC) as `(year, month, day, hour, minute, second)`.
pub fn utc(unix_seconds: u64) -> (u64, u64, u64, u64, u64, u64) {
    let (year, month, day) = civil_from_days(unix_seconds / 86_400);
    let of_day = unix_seconds % 86_400;
    (year, month, day, of_day / 3600, of_day % 3600 / 60, of_day % 60)
}

/// The calendar date `days` after 1970-01-01 (proleptic Gregorian): Howard Hinnant's
/// `civil_from_days`, for days on or after the epoch.
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let day_of_era = z - era * 146_097;
    let year_of_era = (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let shifted_month = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * shifted_month + 2) / 5 + 1;
    let month = if shifted_month < 10 {
        shifted_month + 3
    } else {
        shifted_month - 9
    };
    let year = year_of_era + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unix_time_is_a_utc_calendar_moment() {
        assert_eq!(utc(0), (1970, 1, 1, 0, 0, 0));
        assert_eq!(utc(1_796_535_012), (2026, 12, 6, 5, 30, 12));
        // The last second of a leap day, and the first of the next year.
        assert_eq!(utc(951_868_799), (2000, 2, 29, 23, 59, 59));
        assert_eq!(utc(1_767_225_600), (2026, 1, 1, 0, 0, 0));
    }
}
