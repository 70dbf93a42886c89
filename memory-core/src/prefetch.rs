//! What the agent sees: the rendered memory context and the versions behind it.

use serde::{Deserialize, Serialize};

use crate::context::MemoryContext;
use crate::document::Document;
use crate::prompt::{NewestNotes, render_with_notes};

/// The result of [`crate::MemoryProvider::prefetch`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Prefetch {
    /// The text for the top of the prompt, or `None` when both documents are blank.
    pub context: Option<String>,
    /// The memory document behind the `## Memory` section, whole, as read for this prefetch:
    /// pass its version as `if_match`. (With a query, a recall provider renders only some of
    /// its entries; the text here is still all of it.)
    pub memory: Document,
    /// The user document behind the `## About You` section, whole.
    pub user: Document,
    /// What kept the rendering from being what it should be, for logs and people: a recall
    /// index still catching up with its source (its entries are then shown anyway), say.
    /// Empty when all went well.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

impl Prefetch {
    /// Renders both documents read in full, and the index of the context's `notes` (see
    /// [`crate::MemoryProvider::newest_notes`]), for providers without recall.
    pub fn from_documents(
        ctx: &MemoryContext,
        memory: &Document,
        user: &Document,
        notes: &NewestNotes,
    ) -> Self {
        Prefetch {
            context: render_with_notes(&user.text, &memory.text, notes, ctx.max_chars),
            memory: memory.clone(),
            user: user.clone(),
            warnings: Vec::new(),
        }
    }
}
