//! Updates as agents emit them, and the pure text rules every backend shares.
//!
//! [`apply_batch`](crate::raw::apply_batch) is the only place the contract's update table is
//! implemented; backends read, call it, and write what it returns.

use serde::{Deserialize, Serialize};

use crate::document::Store;
#[cfg(doc)]
use crate::error::MemoryError;
use crate::note::NoteCaps;
use crate::note::path::NotePath;

/// One change to one document, in exactly the JSON forms of the contract:
///
/// ```
/// # use memory_core::{MemoryUpdate, Store};
/// let updates: Vec<MemoryUpdate> = serde_json::from_str(r#"[
///   {"action":"add","store":"memory","content":"Prefers metric units."},
///   {"action":"replace","store":"user","content":"Name: Ada"},
///   {"action":"remove","store":"memory","substringMatch":"obsolete"},
///   {"action":"edit","store":"memory","old":"metric","new":"SI"}
/// ]"#).unwrap();
/// assert_eq!(updates[0], MemoryUpdate::add(Store::Memory, "Prefers metric units."));
/// ```
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "lowercase", deny_unknown_fields)]
pub enum MemoryUpdate {
    /// Append `content` as a new paragraph.
    Add {
        /// Target document.
        store: Store,
        /// The note of `store`'s scope to change instead of its document (`CONTRACT.md`,
        /// Notes): it must exist.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        note: Option<NotePath>,
        /// The entry; refused when blank (nothing but Unicode white space) or holding NUL.
        #[cfg_attr(
            feature = "openapi",
            schema(
                pattern = r"^[^\x00]*[^\x00\x09-\x0d\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000][^\x00]*$"
            )
        )]
        content: String,
    },
    /// Replace the whole document with `content` (blank clears it).
    Replace {
        /// Target document.
        store: Store,
        /// The note of `store`'s scope to change instead of its document (`CONTRACT.md`,
        /// Notes): created when it does not exist.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        note: Option<NotePath>,
        /// The new text; refused when it holds NUL.
        #[cfg_attr(feature = "openapi", schema(pattern = r"^[^\x00]*$"))]
        content: String,
    },
    /// Drop every line that contains `substring_match`, literally and case-sensitively.
    Remove {
        /// Target document.
        store: Store,
        /// The note of `store`'s scope to change instead of its document (`CONTRACT.md`,
        /// Notes): it must exist.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        note: Option<NotePath>,
        /// The literal to look for; refused when empty.
        #[serde(rename = "substringMatch")]
        #[cfg_attr(feature = "openapi", schema(min_length = 1))]
        substring_match: String,
    },
    /// Replace the single occurrence of `old` with `new`, literally.
    Edit {
        /// Target document.
        store: Store,
        /// The note of `store`'s scope to change instead of its document (`CONTRACT.md`,
        /// Notes): it must exist.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        note: Option<NotePath>,
        /// Text that must occur exactly once; refused when empty.
        #[cfg_attr(feature = "openapi", schema(min_length = 1))]
        old: String,
        /// Its replacement; refused when it holds NUL.
        #[cfg_attr(feature = "openapi", schema(pattern = r"^[^\x00]*$"))]
        new: String,
    },
    /// Create a note with `content`: refused when it exists ([`MemoryError::NoteExists`]).
    Create {
        /// The note's scope.
        store: Store,
        /// The note to create.
        note: NotePath,
        /// Its text; refused when blank or holding NUL.
        #[cfg_attr(
            feature = "openapi",
            schema(
                pattern = r"^[^\x00]*[^\x00\x09-\x0d\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000][^\x00]*$"
            )
        )]
        content: String,
    },
    /// Delete a note: its text becomes empty, its history keeps it ([`MemoryError::NoteNotFound`]
    /// when it does not exist).
    Delete {
        /// The note's scope.
        store: Store,
        /// The note to delete.
        note: NotePath,
    },
    /// Move a note to `to` within its scope, atomically: a call of its own.
    Rename {
        /// The note's scope.
        store: Store,
        /// The note to move: it must exist.
        note: NotePath,
        /// Where it goes: it must not exist.
        to: NotePath,
    },
}

impl MemoryUpdate {
    /// Its action as the JSON form names it: `add`, `replace`, `remove`, `edit`, `create`,
    /// `delete` or `rename`.
    pub fn action(&self) -> &'static str {
        match self {
            MemoryUpdate::Add { .. } => "add",
            MemoryUpdate::Replace { .. } => "replace",
            MemoryUpdate::Remove { .. } => "remove",
            MemoryUpdate::Edit { .. } => "edit",
            MemoryUpdate::Create { .. } => "create",
            MemoryUpdate::Delete { .. } => "delete",
            MemoryUpdate::Rename { .. } => "rename",
        }
    }

    /// An `add` of `content` to `store`.
    pub fn add(store: Store, content: impl Into<String>) -> Self {
        MemoryUpdate::Add {
            store,
            note: None,
            content: content.into(),
        }
    }

    /// A `replace` of `store` with `content`.
    pub fn replace(store: Store, content: impl Into<String>) -> Self {
        MemoryUpdate::Replace {
            store,
            note: None,
            content: content.into(),
        }
    }

    /// A `remove` of the lines of `store` containing `substring`.
    pub fn remove(store: Store, substring: impl Into<String>) -> Self {
        MemoryUpdate::Remove {
            store,
            note: None,
            substring_match: substring.into(),
        }
    }

    /// An `edit` of `store` replacing `old` by `new`.
    pub fn edit(store: Store, old: impl Into<String>, new: impl Into<String>) -> Self {
        MemoryUpdate::Edit {
            store,
            note: None,
            old: old.into(),
            new: new.into(),
        }
    }

    /// A `create` of the note `note` of `store`'s scope with `content`.
    pub fn create(store: Store, note: NotePath, content: impl Into<String>) -> Self {
        MemoryUpdate::Create {
            store,
            note,
            content: content.into(),
        }
    }

    /// A `delete` of the note `note` of `store`'s scope.
    pub fn delete(store: Store, note: NotePath) -> Self {
        MemoryUpdate::Delete { store, note }
    }

    /// A `rename` of the note `note` of `store`'s scope to `to`.
    pub fn rename(store: Store, note: NotePath, to: NotePath) -> Self {
        MemoryUpdate::Rename { store, note, to }
    }

    /// The same `add`, `replace`, `remove` or `edit` applied to the note `path` of its store's
    /// scope instead of the document; the notes' own actions are returned as they are.
    pub fn in_note(mut self, path: NotePath) -> Self {
        match &mut self {
            MemoryUpdate::Add { note, .. }
            | MemoryUpdate::Replace { note, .. }
            | MemoryUpdate::Remove { note, .. }
            | MemoryUpdate::Edit { note, .. } => *note = Some(path),
            MemoryUpdate::Create { .. }
            | MemoryUpdate::Delete { .. }
            | MemoryUpdate::Rename { .. } => {}
        }
        self
    }

    /// The store this update targets: the document's, or the scope of the note.
    pub fn store(&self) -> Store {
        match self {
            MemoryUpdate::Add { store, .. }
            | MemoryUpdate::Replace { store, .. }
            | MemoryUpdate::Remove { store, .. }
            | MemoryUpdate::Edit { store, .. }
            | MemoryUpdate::Create { store, .. }
            | MemoryUpdate::Delete { store, .. }
            | MemoryUpdate::Rename { store, .. } => *store,
        }
    }

    /// The note this update targets (for a `rename`, the one it moves), or `None` for the
    /// store's document.
    pub fn note(&self) -> Option<&NotePath> {
        match self {
            MemoryUpdate::Add { note, .. }
            | MemoryUpdate::Replace { note, .. }
            | MemoryUpdate::Remove { note, .. }
            | MemoryUpdate::Edit { note, .. } => note.as_ref(),
            MemoryUpdate::Create { note, .. }
            | MemoryUpdate::Delete { note, .. }
            | MemoryUpdate::Rename { note, .. } => Some(note),
        }
    }

    /// Why this update is refused whatever the document holds, if it is.
    pub(crate) fn malformed(&self) -> Option<&'static str> {
        match self {
            MemoryUpdate::Add { content, .. } if is_blank(content) => {
                Some("`add` needs non-blank content")
            }
            MemoryUpdate::Create { content, .. } if is_blank(content) => {
                Some("`create` needs non-blank content")
            }
            MemoryUpdate::Remove {
                substring_match, ..
            } if substring_match.is_empty() => Some("`remove` needs a non-empty substringMatch"),
            MemoryUpdate::Edit { old, .. } if old.is_empty() => {
                Some("`edit` needs a non-empty `old` text")
            }
            // Markdown documents never need one, and PostgreSQL cannot store one in text.
            MemoryUpdate::Add { content: text, .. }
            | MemoryUpdate::Create { content: text, .. }
            | MemoryUpdate::Replace { content: text, .. }
            | MemoryUpdate::Edit { new: text, .. }
                if text.contains('\0') =>
            {
                Some(
                    "the text to write contains a NUL character (U+0000), which documents may not hold",
                )
            }
            _ => None,
        }
    }
}

/// Soft and hard limits on a document's size, in UTF-8 bytes after a batch.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Caps {
    /// Over this the write lands, and the report and a `memory.eviction` event say so.
    pub soft: Option<usize>,
    /// A batch that would leave the document larger than this, and larger than it was, is
    /// refused with [`MemoryError::HardCapExceeded`].
    pub hard: Option<usize>,
}

impl Caps {
    /// Each limit the smaller of the two, where either sets it.
    pub fn tightest(self, other: Caps) -> Caps {
        let least = |a: Option<usize>, b: Option<usize>| match (a, b) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        Caps {
            soft: least(self.soft, other.soft),
            hard: least(self.hard, other.hard),
        }
    }
}

/// Caps for both stores. No cap is on by default.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Budgets {
    /// Caps on `MEMORY.md`.
    pub memory: Caps,
    /// Caps on `USER.md`.
    pub user: Caps,
    /// Caps on the notes of each scope.
    pub notes: NoteCaps,
}

impl Budgets {
    /// The preset for bounded agents: MEMORY 2048 soft / 4096 hard, USER 1536 / 3072 bytes.
    pub const BOUNDED: Budgets = Budgets {
        memory: Caps {
            soft: Some(2048),
            hard: Some(4096),
        },
        user: Caps {
            soft: Some(1536),
            hard: Some(3072),
        },
        notes: NoteCaps::DEFAULT,
    };

    /// Each cap the smaller of the two, where either sets it: a caller's caps on top of a
    /// personality's can tighten them, never loosen them.
    pub fn tightest(self, other: Budgets) -> Budgets {
        Budgets {
            memory: self.memory.tightest(other.memory),
            user: self.user.tightest(other.user),
            notes: self.notes.tightest(other.notes),
        }
    }

    /// The first store whose soft cap is over its hard cap, with the two: a soft cap warns
    /// before the hard cap refuses, so such caps are a mistake wherever they are set (a
    /// personality's in `memory.toml`, a sync's own).
    pub fn soft_over_hard(&self) -> Option<(Store, usize, usize)> {
        [Store::Memory, Store::User].into_iter().find_map(|store| {
            let caps = self.for_store(store);
            match (caps.soft, caps.hard) {
                (Some(soft), Some(hard)) if soft > hard => Some((store, soft, hard)),
                _ => None,
            }
        })
    }

    /// The caps of `store`'s document.
    pub fn for_store(&self, store: Store) -> Caps {
        match store {
            Store::Memory => self.memory,
            Store::User => self.user,
        }
    }

    /// The caps of a note: its hard cap is the scope's `max_note_bytes`, and it has no soft
    /// cap.
    pub fn for_note(&self) -> Caps {
        Caps {
            soft: None,
            hard: Some(self.notes.max_note_bytes),
        }
    }
}

/// Empty or whitespace only.
pub fn is_blank(text: &str) -> bool {
    text.trim().is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounded_preset_is_the_contracts() {
        let b = Budgets::BOUNDED;
        assert_eq!((b.memory.soft, b.memory.hard), (Some(2048), Some(4096)));
        assert_eq!((b.user.soft, b.user.hard), (Some(1536), Some(3072)));
        assert_eq!(Budgets::default().memory.hard, None, "no cap by default");
    }

    #[test]
    fn a_callers_caps_only_tighten() {
        let callers = Budgets {
            memory: Caps {
                soft: Some(100),
                hard: Some(9000),
            },
            user: Caps::default(),
            notes: NoteCaps::default(),
        };
        let tightest = Budgets::BOUNDED.tightest(callers);
        assert_eq!(
            tightest.memory,
            Caps {
                soft: Some(100),
                hard: Some(4096)
            }
        );
        assert_eq!(
            tightest.user,
            Budgets::BOUNDED.user,
            "unset caps keep the personality's"
        );
        assert_eq!(
            Budgets::default().tightest(callers),
            callers,
            "set where only one sets it"
        );
    }

    #[test]
    fn a_soft_cap_over_its_hard_cap_is_found_in_either_store() {
        assert_eq!(Budgets::BOUNDED.soft_over_hard(), None);
        let mut budgets = Budgets::BOUNDED;
        budgets.user.soft = Some(5000);
        assert_eq!(budgets.soft_over_hard(), Some((Store::User, 5000, 3072)));
        budgets.memory = Caps {
            soft: Some(10),
            hard: None,
        };
        assert_eq!(
            budgets.soft_over_hard(),
            Some((Store::User, 5000, 3072)),
            "no hard cap, no bound"
        );
    }

    const M: Store = Store::Memory;

    #[test]
    fn actions_are_named_as_the_json_names_them() {
        let updates = [
            (MemoryUpdate::add(M, "a"), "add"),
            (MemoryUpdate::replace(M, "a"), "replace"),
            (MemoryUpdate::remove(M, "a"), "remove"),
            (MemoryUpdate::edit(M, "a", "b"), "edit"),
        ];
        for (update, name) in updates {
            assert_eq!(update.action(), name);
            let json = serde_json::to_value(&update).unwrap();
            assert_eq!(json["action"], name, "{json}");
        }
    }

    #[test]
    fn update_json_is_exactly_the_contracts() {
        let json = r#"{"action":"remove","store":"memory","substringMatch":"x"}"#;
        let update: MemoryUpdate = serde_json::from_str(json).unwrap();
        assert_eq!(update, MemoryUpdate::remove(M, "x"));
        assert_eq!(serde_json::to_string(&update).unwrap(), json);
        assert!(
            serde_json::from_str::<MemoryUpdate>(
                r#"{"action":"remove","store":"memory","substring":"x"}"#
            )
            .is_err()
        );
        assert!(
            serde_json::from_str::<MemoryUpdate>(
                r#"{"action":"add","store":"memory","content":"x","extra":1}"#
            )
            .is_err()
        );
        assert!(
            serde_json::from_str::<MemoryUpdate>(
                r#"{"action":"add","store":"notes","content":"x"}"#
            )
            .is_err()
        );
    }
}
