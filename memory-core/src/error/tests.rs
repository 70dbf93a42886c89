//! Every error's kind, message and form on the wire.

use super::*;
use crate::document::Store;
use crate::note::path::NotePath;

#[test]
fn every_surface_reads_one_classification() {
    let document = DocumentId::GlobalMemory;
    let cases = [
        (
            MemoryError::InvalidId {
                kind: IdKind::User,
                value: "a/b".into(),
                reason: "x".into(),
            },
            ErrorKind::InvalidInput,
            2,
            400,
        ),
        (
            MemoryError::InvalidUpdate {
                index: 0,
                document: document.clone(),
                reason: "x".into(),
            },
            ErrorKind::InvalidInput,
            2,
            400,
        ),
        (
            MemoryError::AmbiguousMatch {
                index: 0,
                document: document.clone(),
                old: "x".into(),
                count: 2,
            },
            ErrorKind::Refused,
            4,
            422,
        ),
        (
            MemoryError::HardCapExceeded {
                document: document.clone(),
                bytes: 2,
                hard_cap: 1,
            },
            ErrorKind::Refused,
            4,
            422,
        ),
        (
            MemoryError::unavailable("the server", "connection refused"),
            ErrorKind::Unavailable,
            5,
            503,
        ),
        (
            MemoryError::PartiallyApplied {
                landed: Vec::new(),
                source: Box::new(MemoryError::unavailable("the server", "reset")),
            },
            ErrorKind::PartiallyApplied,
            7,
            500,
        ),
        (
            MemoryError::RevisionNotFound {
                document: document.clone(),
                number: 3,
                reason: "pruned".into(),
            },
            ErrorKind::InvalidInput,
            2,
            400,
        ),
        (
            MemoryError::RevisionInUse {
                document: document.clone(),
                number: 3,
            },
            ErrorKind::Refused,
            4,
            422,
        ),
        (
            MemoryError::InvalidNotePath {
                path: "../x".into(),
                reason: "x".into(),
            },
            ErrorKind::InvalidInput,
            2,
            400,
        ),
        (
            MemoryError::NoteCollision {
                scope: document.clone(),
                path: NotePath::new("Kyoto.md").unwrap(),
                existing: NotePath::new("kyoto.md").unwrap(),
            },
            ErrorKind::Conflict,
            3,
            409,
        ),
        (
            MemoryError::NoteNotFound {
                index: 0,
                action: "edit",
                scope: document.clone(),
                path: NotePath::new("kyoto.md").unwrap(),
            },
            ErrorKind::InvalidInput,
            2,
            400,
        ),
        (
            MemoryError::NoteExists {
                index: 0,
                action: "create",
                scope: document.clone(),
                path: NotePath::new("kyoto.md").unwrap(),
            },
            ErrorKind::Conflict,
            3,
            409,
        ),
        (
            MemoryError::NotesCapExceeded {
                scope: document.clone(),
                cap: "max_notes",
                limit: 10,
                would_be: 11,
            },
            ErrorKind::Refused,
            4,
            422,
        ),
        (
            MemoryError::Config {
                message: "x".into(),
            },
            ErrorKind::Config,
            2,
            500,
        ),
        (
            MemoryError::NoMatch {
                index: 0,
                document: document.clone(),
                old: "x".into(),
            },
            ErrorKind::Refused,
            4,
            422,
        ),
        (
            MemoryError::Contention {
                document: document.clone(),
                attempts: 3,
            },
            ErrorKind::Busy,
            5,
            503,
        ),
        (
            MemoryError::Conflict {
                document: document.clone(),
                expected: Version::new("1"),
                current: Version::new("2"),
            },
            ErrorKind::PreconditionFailed,
            3,
            412,
        ),
        (
            MemoryError::IdentityTaken {
                identity: "slack:U1".into(),
                linked_to: UserId::new("ada").unwrap(),
                requested: UserId::new("bob").unwrap(),
            },
            ErrorKind::Conflict,
            3,
            409,
        ),
        (
            MemoryError::KeyReused {
                document: document.clone(),
                key: "k".into(),
            },
            ErrorKind::Refused,
            4,
            422,
        ),
        (
            MemoryError::Misrouted {
                document: document.clone(),
                routed: DocumentId::GlobalMemory,
                personality: PersonalityId::new("bob").unwrap(),
            },
            ErrorKind::InvalidInput,
            2,
            400,
        ),
        (
            MemoryError::NotInLayout {
                document: document.clone(),
                location: "/work/app".into(),
                holds: "x".into(),
            },
            ErrorKind::InvalidInput,
            2,
            400,
        ),
        (
            MemoryError::OutcomeUnknown {
                document: document.clone(),
                message: "reset".into(),
                source: None,
            },
            ErrorKind::OutcomeUnknown,
            6,
            504,
        ),
        (
            MemoryError::Corrupt {
                location: "here".into(),
                reason: "x".into(),
            },
            ErrorKind::Corrupt,
            8,
            500,
        ),
    ];
    // Every error has a code of its own (the cases hold each variant once).
    let codes: std::collections::HashSet<&str> = cases.iter().map(|(err, ..)| err.code()).collect();
    assert_eq!(codes.len(), cases.len(), "{codes:?}");
    assert_eq!(
        cases.len(),
        23,
        "a new MemoryError variant needs a case here"
    );
    for (err, kind, exit, status) in cases {
        assert_eq!(err.kind(), kind, "{err}");
        assert_eq!(
            (kind.exit_code(), kind.http_status()),
            (exit, status),
            "{kind}"
        );
        // A retry-later is a 503 everywhere, and only a retry-later is.
        assert_eq!(kind.retry_can_help(), kind.http_status() == 503, "{kind}");
    }
    // Every kind has one name, and ALL holds each once.
    let names: std::collections::HashSet<&str> =
        ErrorKind::ALL.iter().map(|kind| kind.name()).collect();
    assert_eq!(names.len(), ErrorKind::ALL.len());
    let lost = MemoryError::OutcomeUnknown {
        document,
        message: "connection reset".into(),
        source: None,
    };
    let text = lost.to_string();
    assert!(text.contains("may or may not have landed"), "{text}");
    assert!(text.contains("same idempotency key"), "{text}");
}

#[test]
fn a_partial_write_names_what_landed() {
    let landed = |document: DocumentId, version: &str| DocumentReport {
        store: Store::Memory,
        document,
        location: String::new(),
        written: true,
        version_before: Version::new("0"),
        version_after: Version::new(version),
        sha256_before: String::new(),
        sha256_after: String::new(),
        bytes_before: 0,
        bytes_after: 1,
        lines_removed: 0,
        over_soft_cap: false,
        replayed: false,
        scope: None,
    };
    let err = MemoryError::PartiallyApplied {
        landed: vec![
            landed(DocumentId::GlobalMemory, "3"),
            landed(
                DocumentId::UserProfile {
                    user: UserId::new("u1").unwrap(),
                },
                "v9",
            ),
        ],
        source: Box::new(MemoryError::unavailable("disk", "full")),
    };
    let text = err.to_string();
    assert!(
        text.ends_with(
            "; but this call had already written the global MEMORY.md (now at version 3), USER.md of user 'u1' (now at version v9)"
        ),
        "{text}"
    );
}

#[test]
fn kinds_display_as_their_names() {
    let names: Vec<String> = ErrorKind::ALL.iter().map(ToString::to_string).collect();
    assert_eq!(
        names,
        [
            "invalid-input",
            "precondition-failed",
            "conflict",
            "refused",
            "busy",
            "unavailable",
            "outcome-unknown",
            "partially-applied",
            "corrupt",
            "config",
        ]
    );
}
