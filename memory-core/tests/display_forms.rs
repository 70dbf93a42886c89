//! The text forms of stores, documents, versions and times, as messages and listings show them.

use std::time::{Duration, UNIX_EPOCH};

use memory_core::raw::unix_millis;
use memory_core::{DocumentId, PersonalityId, Store, UserId, Version, format_utc};

#[test]
fn stores_and_documents_read_as_named() {
    assert_eq!(Store::Memory.to_string(), "memory");
    assert_eq!(Store::User.to_string(), "user");
    assert_eq!(DocumentId::GlobalMemory.to_string(), "the global MEMORY.md");
    let ada = DocumentId::PersonalityMemory {
        personality: PersonalityId::new("ada").unwrap(),
    };
    assert_eq!(ada.to_string(), "MEMORY.md of personality 'ada'");
    let u1 = DocumentId::UserProfile {
        user: UserId::new("u1").unwrap(),
    };
    assert_eq!(u1.to_string(), "USER.md of user 'u1'");
}

#[test]
fn a_version_reads_as_its_token() {
    let version = Version::new("7-abc");
    assert_eq!(version.as_str(), "7-abc");
    assert_eq!(version.to_string(), "7-abc");
}

#[test]
fn times_read_in_rfc_3339_up_to_year_9999() {
    let at = |secs: u64| UNIX_EPOCH + Duration::from_secs(secs);
    assert_eq!(format_utc(at(1_748_772_002)), "2025-06-01T10:00:02Z");
    assert_eq!(format_utc(UNIX_EPOCH), "1970-01-01T00:00:00Z");
    // 10000-01-01T00:00:00Z is 253 402 300 800 s after the epoch.
    assert_eq!(format_utc(at(253_402_300_799)), "9999-12-31T23:59:59Z");
    assert_eq!(format_utc(at(253_402_300_800)), "unknown (out of range)");
    assert_eq!(format_utc(at(253_402_300_801)), "unknown (out of range)");
    let before_1970 = UNIX_EPOCH - Duration::from_secs(1);
    assert_eq!(format_utc(before_1970), "unknown (out of range)");
}

#[test]
fn times_are_milliseconds_since_the_epoch_on_the_wire() {
    assert_eq!(
        unix_millis(UNIX_EPOCH + Duration::from_millis(1_234)),
        1_234
    );
    assert_eq!(unix_millis(UNIX_EPOCH), 0);
    assert_eq!(
        unix_millis(UNIX_EPOCH - Duration::from_secs(1)),
        0,
        "before 1970"
    );
    if let Some(far) = UNIX_EPOCH.checked_add(Duration::from_secs(20_000_000_000_000_000)) {
        assert_eq!(
            unix_millis(far),
            u64::MAX,
            "past what u64 milliseconds hold"
        );
    }
}
