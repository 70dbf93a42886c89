//! How every tool names a file, a size, a count and a time.

use std::time::SystemTime;

use memory_core::{Caps, Store};

/// `store`'s file, as the tools name it.
pub(crate) fn file_name(store: Store) -> &'static str {
    match store {
        Store::Memory => "MEMORY.md",
        Store::User => "USER.md",
    }
}

/// A file's size with its caps.
pub(crate) fn size(bytes: usize, caps: Caps) -> String {
    match (caps.soft, caps.hard) {
        (None, None) => format!("{bytes} bytes"),
        (Some(soft), None) => format!("{bytes} bytes (soft cap {soft})"),
        (None, Some(hard)) => format!("{bytes} bytes (hard cap {hard})"),
        (Some(soft), Some(hard)) => format!("{bytes} bytes (soft cap {soft}, hard cap {hard})"),
    }
}

/// "1 entry", "3 entries".
pub(crate) fn entries(count: usize) -> String {
    match count {
        1 => "1 entry".to_owned(),
        n => format!("{n} entries"),
    }
}

/// `2025-06-01 10:00:02 UTC`, or "unknown time" for a stored time that cannot be shown
/// (before 1970, past year 9999).
pub(crate) fn utc(time: SystemTime) -> String {
    memory_core::format_utc_seconds(time)
        .map_or_else(|| "unknown time".to_owned(), |at| format!("{at} UTC"))
}

/// A file's size after a write, and what to do when it is over a cap.
pub(crate) fn size_after(store: Store, bytes: usize, caps: Caps) -> String {
    let name = file_name(store);
    let mut text = format!(" {name} is now {}.", size(bytes, caps));
    if caps.hard.is_some_and(|hard| bytes > hard) {
        text.push_str(&format!(
            " It is over its hard cap, so additions will be refused: consolidate it now \
             (memory_view, then memory_consolidate with a version under {} bytes).",
            caps.hard.unwrap_or_default()
        ));
    } else if caps.soft.is_some_and(|soft| bytes > soft) {
        text.push_str(
            " It is over its soft cap: consolidate it (memory_view, then memory_consolidate \
             with a shorter version that keeps what matters).",
        );
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_shown_in_utc_or_said_unknown() {
        use std::time::{Duration, UNIX_EPOCH};
        let at = UNIX_EPOCH + Duration::from_secs(1_748_772_002);
        assert_eq!(utc(at), "2025-06-01 10:00:02 UTC");
        assert_eq!(utc(UNIX_EPOCH - Duration::from_secs(1)), "unknown time");
    }
}
