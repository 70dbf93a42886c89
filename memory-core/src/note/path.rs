//! A note's path: the type, valid by construction, and the collisions between two paths.
//! The rule, and the constructors that check it, are in `rule.rs` beside this file.

use std::fmt;

use serde::{Deserialize, Serialize};
use unicode_normalization::UnicodeNormalization;

/// The longest note path, in UTF-8 bytes.
pub const MAX_NOTE_PATH_BYTES: usize = 255;
/// The most segments (folders and the file) a note path has.
pub const MAX_NOTE_PATH_SEGMENTS: usize = 8;
/// The longest segment of a note path, in UTF-8 bytes: a file system allows 255 per name,
/// and a note's sidecar files add to its name.
pub const MAX_NOTE_SEGMENT_BYTES: usize = 100;
/// The name a store that keeps an index of each scope's notes keeps it under, beside the
/// notes: hidden, so no note path can take it.
const SCOPE_INDEX: &str = ".index";

/// Where the whole rule is written, for messages that refuse a path.
pub(crate) const NOTE_PATH_RULE: &str = "CONTRACT.md, Notes";

/// A note's path within its scope (`projects/kyoto.md`), valid by construction
/// ([`NotePath::new`]).
///
/// ```
/// # use memory_core::NotePath;
/// let path = NotePath::new("projects/kyoto.md")?;
/// assert_eq!(path.as_str(), "projects/kyoto.md");
/// assert!(NotePath::new("../USER.md").is_err());
/// assert!(path.collides_with(&NotePath::new("Projects/Kyoto.md")?));
/// # Ok::<(), memory_core::MemoryError>(())
/// ```
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct NotePath(pub(super) String);

impl NotePath {
    /// The path as given, with `/` separators.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Its folders then its file name.
    pub fn segments(&self) -> impl Iterator<Item = &str> {
        self.0.split('/')
    }

    /// What two paths that may not both be notes of one scope have in common: the lower case
    /// of the NFKC form, so `Kyoto.md`, `kyoto.md` and a compatibility spelling of either
    /// share one key.
    pub fn fold_key(&self) -> String {
        self.0.nfkc().flat_map(char::to_lowercase).collect()
    }

    /// Whether `self` and `other` cannot both be notes of one scope: they differ but share a
    /// [`NotePath::fold_key`], or one would be a folder of the other (`a.md` and `a.md/b.md`,
    /// compared by fold key). A path never collides with itself.
    pub fn collides_with(&self, other: &NotePath) -> bool {
        if self == other {
            return false;
        }
        let (mine, theirs) = (self.fold_key(), other.fold_key());
        let (short, long) = if mine.len() <= theirs.len() {
            (&mine, &theirs)
        } else {
            (&theirs, &mine)
        };
        mine == theirs
            || long
                .strip_prefix(short.as_str())
                .is_some_and(|rest| rest.starts_with('/'))
    }
}

impl NotePath {
    /// The path of a scope's index (see [`crate::raw::check_scopes`]): one no note can have.
    pub(crate) fn scope_index() -> NotePath {
        NotePath(SCOPE_INDEX.to_owned())
    }

    /// Whether this is the path of a scope's index rather than a note's.
    pub(crate) fn is_scope_index(&self) -> bool {
        self.0 == SCOPE_INDEX
    }
}

impl fmt::Display for NotePath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<NotePath> for String {
    fn from(path: NotePath) -> String {
        path.0
    }
}
