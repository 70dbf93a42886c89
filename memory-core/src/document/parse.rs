//! A layout path read back as the document it names (the inverse of
//! [`DocumentId::relative_path`]), saying why when it names none.

use crate::document::{DocumentId, NoteScope};
use crate::error::MemoryError;
use crate::id::{PersonalityId, UserId};
use crate::note::path::NotePath;

impl DocumentId {
    /// The document at `path` in the layout (the inverse of [`DocumentId::relative_path`]), or
    /// `None` for anything else, including paths with invalid ids.
    pub fn from_relative_path(path: &str) -> Option<Self> {
        DocumentId::parse_relative_path(path).ok().flatten()
    }

    /// [`DocumentId::from_relative_path`] with the reason: `Ok(None)` for a path of no
    /// document's shape.
    ///
    /// # Errors
    /// A path of a document's shape whose id ([`MemoryError::InvalidId`]) or note path
    /// ([`MemoryError::InvalidNotePath`]) is refused.
    pub fn parse_relative_path(path: &str) -> Result<Option<Self>, MemoryError> {
        let note =
            |scope: NoteScope, rest: &[&str]| Ok(Some(scope.note(NotePath::new(rest.join("/"))?)));
        match path.split('/').collect::<Vec<_>>().as_slice() {
            ["notes", rest @ ..] => note(NoteScope::GlobalMemory, rest),
            ["personalities", personality, "notes", rest @ ..] => note(
                NoteScope::PersonalityMemory {
                    personality: PersonalityId::new(*personality)?,
                },
                rest,
            ),
            ["users", user, "notes", rest @ ..] => note(
                NoteScope::UserProfile {
                    user: UserId::new(*user)?,
                },
                rest,
            ),
            ["MEMORY.md"] => Ok(Some(DocumentId::GlobalMemory)),
            ["personalities", personality, "MEMORY.md"] => {
                Ok(Some(DocumentId::PersonalityMemory {
                    personality: PersonalityId::new(*personality)?,
                }))
            }
            ["users", user, "USER.md"] => Ok(Some(DocumentId::UserProfile {
                user: UserId::new(*user)?,
            })),
            _ => Ok(None),
        }
    }
}
