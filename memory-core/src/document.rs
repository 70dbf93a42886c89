//! What a memory is made of: stores, scopes, documents and their versions.

use std::fmt;
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use crate::id::{PersonalityId, UserId};
use crate::note::path::NotePath;

/// Which of the two documents of a conversation an update targets.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Store {
    /// The agent's notes: `MEMORY.md`, global or per personality.
    Memory,
    /// What the agent knows about the user: `USER.md`, always per user.
    User,
}

impl fmt::Display for Store {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Store::Memory => "memory",
            Store::User => "user",
        })
    }
}

/// Whose `MEMORY.md` a personality reads and writes.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MemoryScope {
    /// Its own `personalities/<id>/MEMORY.md` (the default).
    #[default]
    PerPersonality,
    /// The deployment-wide `MEMORY.md`, shared by every global-scope personality.
    Global,
}

/// One document, named independently of the backend that stores it.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum DocumentId {
    /// `MEMORY.md`, shared by global-scope personalities.
    GlobalMemory,
    /// `personalities/<personality>/MEMORY.md`.
    PersonalityMemory {
        /// Whose memory.
        personality: PersonalityId,
    },
    /// `users/<user>/USER.md`.
    UserProfile {
        /// Whose profile.
        user: UserId,
    },
    /// A note (`CONTRACT.md`, Notes): `notes/<path>` beside the global `MEMORY.md`,
    /// `personalities/<personality>/notes/<path>`, `users/<user>/notes/<path>`.
    // Boxed, so an id of the pair stays as small as it was (ids are cloned on every call).
    Note(Box<NoteId>),
}

/// Which note: its scope and its path within it.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct NoteId {
    /// Whose note: named as the document it sits beside.
    pub scope: NoteScope,
    /// Its path within the scope.
    pub path: NotePath,
}

/// The scope a note belongs to, named as the always-loaded document it sits beside: the
/// memory the personality reads (its own, or the global one under global scope) or a user's
/// profile.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum NoteScope {
    /// Beside the global `MEMORY.md`, shared by global-scope personalities.
    GlobalMemory,
    /// Beside a personality's own `MEMORY.md`.
    PersonalityMemory {
        /// Whose memory.
        personality: PersonalityId,
    },
    /// Beside a user's `USER.md`.
    UserProfile {
        /// Whose profile.
        user: UserId,
    },
}

impl NoteScope {
    /// The always-loaded document the scope's notes sit beside.
    pub fn document(&self) -> DocumentId {
        match self {
            NoteScope::GlobalMemory => DocumentId::GlobalMemory,
            NoteScope::PersonalityMemory { personality } => DocumentId::PersonalityMemory {
                personality: personality.clone(),
            },
            NoteScope::UserProfile { user } => DocumentId::user(user),
        }
    }

    /// The note at `path` in this scope.
    pub fn note(&self, path: NotePath) -> DocumentId {
        DocumentId::Note(Box::new(NoteId {
            scope: self.clone(),
            path,
        }))
    }

    /// The document a versioned store keeps the scope's index in: each note's path and bytes,
    /// written in the same compare-and-swap as the notes. Hidden from every listing; public
    /// for the stores of the kit (`memory_core::raw`), which keep it like a document.
    pub fn index(&self) -> DocumentId {
        self.note(NotePath::scope_index())
    }

    /// The folder the scope's notes are in, relative to the root, with `/` separators.
    pub fn folder(&self) -> String {
        match self {
            NoteScope::GlobalMemory => "notes".to_owned(),
            NoteScope::PersonalityMemory { personality } => {
                format!("personalities/{personality}/notes")
            }
            NoteScope::UserProfile { user } => format!("users/{user}/notes"),
        }
    }
}

impl DocumentId {
    /// The memory document a personality uses under `scope`.
    pub fn memory(personality: &PersonalityId, scope: MemoryScope) -> Self {
        match scope {
            MemoryScope::Global => DocumentId::GlobalMemory,
            MemoryScope::PerPersonality => DocumentId::PersonalityMemory {
                personality: personality.clone(),
            },
        }
    }

    /// The profile document of `user`.
    pub fn user(user: &UserId) -> Self {
        DocumentId::UserProfile { user: user.clone() }
    }

    /// The note at `path` beside `document`, or in `document`'s scope when it is a note.
    pub fn note(document: &DocumentId, path: NotePath) -> Self {
        document.scope().note(path)
    }

    /// Which store the document belongs to (a note: the store of its scope).
    pub fn store(&self) -> Store {
        match self {
            DocumentId::GlobalMemory | DocumentId::PersonalityMemory { .. } => Store::Memory,
            DocumentId::UserProfile { .. } => Store::User,
            DocumentId::Note(note) => note.scope.document().store(),
        }
    }

    /// The scope of notes this document is in: its own for one of the pair, its scope for a
    /// note.
    pub fn scope(&self) -> NoteScope {
        match self {
            DocumentId::GlobalMemory => NoteScope::GlobalMemory,
            DocumentId::PersonalityMemory { personality } => NoteScope::PersonalityMemory {
                personality: personality.clone(),
            },
            DocumentId::UserProfile { user } => NoteScope::UserProfile { user: user.clone() },
            DocumentId::Note(note) => note.scope.clone(),
        }
    }

    /// Whether this is a scope's index ([`NoteScope::index`]) rather than a document.
    pub(crate) fn is_scope_index(&self) -> bool {
        self.note_path().is_some_and(NotePath::is_scope_index)
    }

    /// Its path within its scope when it is a note.
    pub fn note_path(&self) -> Option<&NotePath> {
        match self {
            DocumentId::Note(note) => Some(&note.path),
            _ => None,
        }
    }

    /// Its path in the Ethos markdown layout, relative to the root, with `/` separators.
    /// Other backends use it as a readable key.
    pub fn relative_path(&self) -> String {
        match self {
            DocumentId::GlobalMemory => "MEMORY.md".to_owned(),
            DocumentId::PersonalityMemory { personality } => {
                format!("personalities/{personality}/MEMORY.md")
            }
            DocumentId::UserProfile { user } => format!("users/{user}/USER.md"),
            DocumentId::Note(note) => format!("{}/{}", note.scope.folder(), note.path),
        }
    }
}

impl fmt::Display for DocumentId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DocumentId::GlobalMemory => f.write_str("the global MEMORY.md"),
            DocumentId::PersonalityMemory { personality } => {
                write!(f, "MEMORY.md of personality '{personality}'")
            }
            DocumentId::UserProfile { user } => write!(f, "USER.md of user '{user}'"),
            DocumentId::Note(note) => {
                write!(f, "note '{}' beside {}", note.path, note.scope.document())
            }
        }
    }
}

/// An opaque token that changes whenever a document's content changes.
///
/// Compare versions for equality only: backends choose the form (a content hash, a counter).
/// A document that was never written has a version too, so a first write can be guarded.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Version(String);

impl Version {
    /// Wraps a backend's version token.
    pub fn new(token: impl Into<String>) -> Self {
        Version(token.into())
    }

    /// The token as a string slice.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Where a document lives and which version it is at, without its text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DocumentMeta {
    /// Which document.
    pub id: DocumentId,
    /// Its current version.
    pub version: Version,
    /// Where the backend keeps it: a path or a key.
    pub location: String,
    /// When its content was last written, if it ever was (milliseconds since the Unix epoch on
    /// the wire).
    #[serde(default, with = "crate::time::unix_millis")]
    pub modified: Option<SystemTime>,
}

/// A document's full text with its version and location, as read in one step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Document {
    /// Which document.
    pub id: DocumentId,
    /// Its text; empty when it was never written.
    pub text: String,
    /// The version of exactly this text.
    pub version: Version,
    /// Where the backend keeps it: a path or a key.
    pub location: String,
    /// When its content was last written, by the backend's clock (a file's mtime, Postgres's
    /// `now()`, the writing Redis client's clock); `None` for a document never written. Compare it only between documents of one
    /// backend or hosts with synchronised clocks.
    #[serde(default, with = "crate::time::unix_millis")]
    pub modified: Option<SystemTime>,
}

impl Document {
    /// The document without its text.
    pub fn meta(&self) -> DocumentMeta {
        DocumentMeta {
            id: self.id.clone(),
            version: self.version.clone(),
            location: self.location.clone(),
            modified: self.modified,
        }
    }
}

/// `time` in RFC 3339 in UTC to the second (`2025-06-01T10:00:02Z`), or `unknown (out of
/// range)` for a stored time RFC 3339 cannot show (before 1970, past year 9999): a hand-set
/// clock must not crash whoever prints it.
pub fn format_utc(time: SystemTime) -> String {
    /// 10000-01-01T00:00:00Z.
    const YEAR_10000: u64 = 253_402_300_800;
    match time.duration_since(std::time::UNIX_EPOCH) {
        Ok(since) if since.as_secs() < YEAR_10000 => {
            humantime::format_rfc3339_seconds(time).to_string()
        }
        _ => "unknown (out of range)".to_owned(),
    }
}

/// `time` in UTC to the second as the history's lines show it, `2025-06-01 10:00:02`; `None`
/// for a time RFC 3339 cannot show (see [`format_utc`]), which each surface words its own way.
pub fn format_utc_seconds(time: SystemTime) -> Option<String> {
    format_utc(time)
        .strip_suffix('Z')
        .map(|seconds| seconds.replacen('T', " ", 1))
}

pub(crate) mod parse;

#[cfg(test)]
mod tests;
