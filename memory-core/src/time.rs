//! The forms a time takes in storage and on the wire: milliseconds from the Unix epoch (signed
//! where a time before 1970 must read back as itself) and RFC 3339 to the millisecond.

use std::time::{Duration, SystemTime};

/// `time` as whole milliseconds since the Unix epoch, the form JSON clients read: 0 for a time
/// before it (a clock set far back), `u64::MAX` past what that holds.
pub fn unix_millis(time: SystemTime) -> u64 {
    time.duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| {
            u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
        })
}

/// The last millisecond RFC 3339 can show, 9999-12-31T23:59:59.999Z, as milliseconds since the
/// Unix epoch.
const LAST_SHOWN_MILLIS: u64 = 253_402_300_799_999;

/// A document's `modified` as JSON gives it (the CLI's `--json`, the HTTP API): whole
/// milliseconds since the Unix epoch, or `None` (null) for a time before 1970 or past the year
/// 9999 (a clock set far off), which the text forms show as `unknown (out of range)`. Not 0 or
/// a negative number: the API's `modified` is a count of milliseconds from 0 or null, and 0
/// would claim 1970-01-01.
pub fn shown_unix_millis(time: SystemTime) -> Option<u64> {
    time.duration_since(std::time::UNIX_EPOCH)
        .ok()
        .and_then(|since| u64::try_from(since.as_millis()).ok())
        .filter(|millis| *millis <= LAST_SHOWN_MILLIS)
}

/// `time` in RFC 3339 in UTC to the millisecond, as JavaScript's `Date.prototype.toISOString`
/// writes it (`2025-06-01T10:00:02.000Z`, the form Ethos stores), clamped into the years
/// 1970..=9999 that the form can show: a hand-set clock must not crash whoever writes it.
pub fn format_utc_millis(time: SystemTime) -> String {
    /// 9999-12-31T23:59:59.999Z.
    const LAST: Duration = Duration::from_millis(253_402_300_799_999);
    let since = time
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .min(LAST);
    humantime::format_rfc3339_millis(std::time::UNIX_EPOCH + since).to_string()
}

/// `time` as whole milliseconds from the Unix epoch, negative before it, saturating at
/// `i64`'s ends: the form stored revisions keep their time in, so that a time before 1970 (a
/// file's mtime from a clock set far back) reads back as itself, not as 1970.
pub fn signed_unix_millis(time: SystemTime) -> i64 {
    let millis = |span: Duration| i64::try_from(span.as_millis()).unwrap_or(i64::MAX);
    match time.duration_since(std::time::UNIX_EPOCH) {
        Ok(since) => millis(since),
        Err(before) => -millis(before.duration()),
    }
}

/// The time `millis` milliseconds from the Unix epoch (negative: before it), as
/// [`signed_unix_millis`] writes it; saturating at what the platform's clock can hold.
pub fn from_signed_unix_millis(millis: i64) -> SystemTime {
    let span = Duration::from_millis(millis.unsigned_abs());
    let moved = if millis < 0 {
        std::time::UNIX_EPOCH.checked_sub(span)
    } else {
        std::time::UNIX_EPOCH.checked_add(span)
    };
    moved.unwrap_or(std::time::UNIX_EPOCH)
}

/// `SystemTime` as whole milliseconds from the Unix epoch, negative before it (see
/// [`signed_unix_millis`]): the stored form of a revision's time. Reads either sign, and
/// unsigned counts past `i64` as written before times were signed.
pub(crate) mod unix_millis_required {
    use std::time::SystemTime;

    use serde::Serializer;
    use serde::de::{Deserializer, Error, Visitor};

    pub fn serialize<S: Serializer>(time: &SystemTime, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_i64(super::signed_unix_millis(*time))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<SystemTime, D::Error> {
        struct Millis;
        impl Visitor<'_> for Millis {
            type Value = SystemTime;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a time in milliseconds since the Unix epoch")
            }
            fn visit_i64<E: Error>(self, millis: i64) -> Result<SystemTime, E> {
                Ok(super::from_signed_unix_millis(millis))
            }
            fn visit_u64<E: Error>(self, millis: u64) -> Result<SystemTime, E> {
                Ok(super::from_signed_unix_millis(
                    i64::try_from(millis).unwrap_or(i64::MAX),
                ))
            }
        }
        d.deserialize_i64(Millis)
    }
}

/// `Option<SystemTime>` as whole milliseconds since the Unix epoch, the form JSON clients read.
pub(crate) mod unix_millis {
    use std::time::{Duration, SystemTime, UNIX_EPOCH};

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(time: &Option<SystemTime>, s: S) -> Result<S::Ok, S::Error> {
        match time {
            Some(time) => match super::shown_unix_millis(*time) {
                Some(millis) => s.serialize_some(&millis),
                None => s.serialize_none(),
            },
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<SystemTime>, D::Error> {
        let millis = Option::<u64>::deserialize(d)?;
        Ok(millis.map(|ms| UNIX_EPOCH + Duration::from_millis(ms)))
    }
}

#[cfg(test)]
mod tests {
    use serde::{Deserialize, Serialize};

    use super::*;

    #[test]
    fn utc_millis_are_javascript_iso_strings_clamped_to_the_years_they_can_show() {
        use std::time::{Duration, UNIX_EPOCH};
        let at = UNIX_EPOCH + Duration::from_millis(1_700_000_000_123);
        assert_eq!(format_utc_millis(at), "2023-11-14T22:13:20.123Z");
        assert_eq!(
            format_utc_millis(UNIX_EPOCH - Duration::from_secs(1)),
            "1970-01-01T00:00:00.000Z"
        );
        let far = UNIX_EPOCH + Duration::from_secs(400_000_000_000);
        assert_eq!(format_utc_millis(far), "9999-12-31T23:59:59.999Z");
    }

    #[test]
    fn signed_millis_keep_times_before_1970_and_saturate_at_the_ends() {
        use std::time::UNIX_EPOCH;
        let day = Duration::from_secs(86_400);
        for (time, millis) in [
            (UNIX_EPOCH, 0),
            (
                UNIX_EPOCH + Duration::from_millis(1_700_000_000_123),
                1_700_000_000_123,
            ),
            (UNIX_EPOCH - day, -86_400_000),
            (UNIX_EPOCH - Duration::from_millis(1), -1),
        ] {
            assert_eq!(signed_unix_millis(time), millis, "{time:?}");
            assert_eq!(from_signed_unix_millis(millis), time, "{millis}");
        }
        let far = UNIX_EPOCH + Duration::from_secs(u64::MAX / 1_000);
        assert_eq!(signed_unix_millis(far), i64::MAX);
        // Past what the clock holds: the epoch rather than a panic.
        let _ = from_signed_unix_millis(i64::MIN);
        let _ = from_signed_unix_millis(i64::MAX);
    }

    #[test]
    fn a_revisions_stored_time_reads_back_as_itself_before_1970_too() {
        use std::time::UNIX_EPOCH;
        #[derive(Serialize, Deserialize, PartialEq, Debug)]
        struct Stored {
            #[serde(with = "unix_millis_required")]
            time: SystemTime,
        }
        let before_1970 = Stored {
            time: UNIX_EPOCH - Duration::from_secs(86_400),
        };
        let json = serde_json::to_string(&before_1970).unwrap();
        assert_eq!(json, r#"{"time":-86400000}"#);
        assert_eq!(serde_json::from_str::<Stored>(&json).unwrap(), before_1970);
        // Written before times were signed: a count past i64 (a clock far ahead) still reads.
        let old: Stored = serde_json::from_str(r#"{"time":18446744073709551615}"#).unwrap();
        assert_eq!(signed_unix_millis(old.time), i64::MAX);
        let wrong = serde_json::from_str::<Stored>(r#"{"time":"soon"}"#).unwrap_err();
        assert!(
            wrong
                .to_string()
                .contains("expected a time in milliseconds since the Unix epoch"),
            "{wrong}"
        );
    }
}
