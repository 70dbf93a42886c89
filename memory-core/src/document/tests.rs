//! Layout paths, wire forms and the times shown of documents and notes.

use std::time::Duration;

use super::*;
use crate::time::shown_unix_millis;

#[test]
fn relative_paths_round_trip_and_nothing_else_parses() {
    let ada = PersonalityId::new("ada").unwrap();
    let kyoto = NotePath::new("projects/kyoto.md").unwrap();
    for id in [
        DocumentId::GlobalMemory,
        DocumentId::memory(&ada, MemoryScope::PerPersonality),
        DocumentId::user(&UserId::new("u-1").unwrap()),
        DocumentId::note(&DocumentId::GlobalMemory, kyoto.clone()),
        DocumentId::note(
            &DocumentId::memory(&ada, MemoryScope::PerPersonality),
            kyoto.clone(),
        ),
        DocumentId::note(
            &DocumentId::user(&UserId::new("u-1").unwrap()),
            kyoto.clone(),
        ),
    ] {
        assert_eq!(
            DocumentId::from_relative_path(&id.relative_path()),
            Some(id)
        );
    }
    for stray in [
        "",
        "USER.md",
        "personalities/ada/USER.md",
        "personalities/a.b/MEMORY.md",
        "users/u1/USER.md/x",
        "personalities//MEMORY.md",
        "notes",
        "notes/",
        "notes/../USER.md",
        "notes/.hidden.md",
        "personalities/ada/notes/MEMORY.md",
        "personalities/a.b/notes/x.md",
        "users/u1/notes//x.md",
    ] {
        assert_eq!(DocumentId::from_relative_path(stray), None, "{stray:?}");
    }
}

#[test]
fn layout_is_the_ethos_one() {
    let p = PersonalityId::new("ada").unwrap();
    let u = UserId::new("u1").unwrap();
    assert_eq!(
        DocumentId::memory(&p, MemoryScope::Global).relative_path(),
        "MEMORY.md"
    );
    assert_eq!(
        DocumentId::memory(&p, MemoryScope::PerPersonality).relative_path(),
        "personalities/ada/MEMORY.md"
    );
    assert_eq!(DocumentId::user(&u).relative_path(), "users/u1/USER.md");
    let path = NotePath::new("projects/kyoto.md").unwrap();
    let notes = [
        (
            DocumentId::memory(&p, MemoryScope::Global),
            "notes/projects/kyoto.md",
        ),
        (
            DocumentId::memory(&p, MemoryScope::PerPersonality),
            "personalities/ada/notes/projects/kyoto.md",
        ),
        (DocumentId::user(&u), "users/u1/notes/projects/kyoto.md"),
    ];
    for (beside, relative) in notes {
        let note = DocumentId::note(&beside, path.clone());
        assert_eq!(note.relative_path(), relative);
        assert_eq!(
            note.store(),
            beside.store(),
            "a note is of its scope's store"
        );
        assert_eq!(note.scope().document(), beside);
        assert_eq!(note.note_path(), Some(&path));
        assert_eq!(
            DocumentId::note(&note, path.clone()),
            note,
            "a note's scope is its own"
        );
    }
}

#[test]
fn wire_forms() {
    let scope: MemoryScope = serde_json::from_str("\"per-personality\"").unwrap();
    assert_eq!(scope, MemoryScope::PerPersonality);
    assert_eq!(
        serde_json::to_string(&MemoryScope::Global).unwrap(),
        "\"global\""
    );
    assert_eq!(serde_json::to_string(&Store::User).unwrap(), "\"user\"");
    let id = DocumentId::user(&UserId::new("u1").unwrap());
    assert_eq!(
        serde_json::to_string(&id).unwrap(),
        r#"{"kind":"user-profile","user":"u1"}"#
    );
    let note = DocumentId::note(&id, NotePath::new("diet.md").unwrap());
    let json = r#"{"kind":"note","scope":{"kind":"user-profile","user":"u1"},"path":"diet.md"}"#;
    assert_eq!(serde_json::to_string(&note).unwrap(), json);
    assert_eq!(serde_json::from_str::<DocumentId>(json).unwrap(), note);
    assert_eq!(
        note.to_string(),
        "note 'diet.md' beside USER.md of user 'u1'"
    );
    let bad = r#"{"kind":"note","scope":{"kind":"global-memory"},"path":"../x"}"#;
    assert!(
        serde_json::from_str::<DocumentId>(bad).is_err(),
        "the path rule holds on the wire"
    );
}

#[test]
fn modified_is_unix_millis_on_the_wire() {
    let at = std::time::UNIX_EPOCH + std::time::Duration::from_millis(1_700_000_000_123);
    let meta = DocumentMeta {
        id: DocumentId::GlobalMemory,
        version: Version::new("1"),
        location: "MEMORY.md".into(),
        modified: Some(at),
    };
    let json = serde_json::to_value(&meta).unwrap();
    assert_eq!(json["modified"], 1_700_000_000_123u64);
    assert_eq!(serde_json::from_value::<DocumentMeta>(json).unwrap(), meta);
    // A time JSON cannot give as a count from 1970 (before it, or past the year 9999) is
    // null, as the text forms say unknown; never 0 (1970-01-01) or u64::MAX.
    for far in [
        std::time::UNIX_EPOCH - std::time::Duration::from_secs(86_400),
        std::time::UNIX_EPOCH + std::time::Duration::from_millis(253_402_300_800_000),
    ] {
        let json = serde_json::to_value(DocumentMeta {
            modified: Some(far),
            ..meta.clone()
        })
        .unwrap();
        assert_eq!(json["modified"], serde_json::Value::Null, "{far:?}");
        assert_eq!(format_utc(far), "unknown (out of range)");
    }
    let last = std::time::UNIX_EPOCH + std::time::Duration::from_millis(253_402_300_799_999);
    assert_eq!(shown_unix_millis(last), Some(253_402_300_799_999));
    assert_eq!(shown_unix_millis(std::time::UNIX_EPOCH), Some(0));
    let never: DocumentMeta =
        serde_json::from_str(r#"{"id":{"kind":"global-memory"},"version":"0","location":""}"#)
            .unwrap();
    assert_eq!(never.modified, None);
}

#[test]
fn the_history_shows_times_to_the_second_or_not_at_all() {
    use std::time::UNIX_EPOCH;
    let at = UNIX_EPOCH + Duration::from_millis(1_748_772_002_900);
    assert_eq!(
        format_utc_seconds(at).as_deref(),
        Some("2025-06-01 10:00:02")
    );
    assert_eq!(
        format_utc_seconds(UNIX_EPOCH - Duration::from_secs(1)),
        None
    );
    assert_eq!(
        format_utc_seconds(UNIX_EPOCH + Duration::from_secs(253_402_300_800)),
        None
    );
}
