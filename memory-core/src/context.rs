//! Who is asking: the per-call context every provider method receives.

use serde::{Deserialize, Serialize};

use crate::document::{DocumentId, MemoryScope, Store};
use crate::history::revision::Surface;
use crate::id::{PersonalityId, UserId};
use crate::idempotency::key::IdempotencyKey;
use crate::update::Budgets;

/// The prefetch budget used when none is set, in chars of the rendered text.
pub const DEFAULT_MAX_CHARS: usize = 20_000;

fn default_max_chars() -> usize {
    DEFAULT_MAX_CHARS
}

/// The id [`MemoryContext::writing`] gives the personality or user it does not need; revisions
/// do not record it as who wrote.
pub(crate) const PLACEHOLDER: &str = "_";

/// The personality and user a call is made for, with that personality's settings.
///
/// ```
/// # use memory_core::*;
/// let ctx = MemoryContext::new(PersonalityId::new("ada")?, UserId::new("u-42")?)
///     .with_scope(MemoryScope::Global)
///     .with_budgets(Budgets::BOUNDED)
///     .with_query("what did I say about trains?");
/// assert_eq!(ctx.document(Store::Memory), DocumentId::GlobalMemory);
/// # Ok::<(), MemoryError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryContext {
    /// The personality speaking.
    pub personality: PersonalityId,
    /// Whether it uses its own `MEMORY.md` or the global one.
    #[serde(default)]
    pub scope: MemoryScope,
    /// The user spoken to (already resolved through the identity map).
    pub user: UserId,
    /// The current user message, for recall providers; others ignore it.
    #[serde(default)]
    pub query: Option<String>,
    /// Byte caps applied by `sync`.
    #[serde(default)]
    pub budgets: Budgets,
    /// Prefetch budget in chars of the whole rendered text, headings included.
    #[serde(default = "default_max_chars")]
    pub max_chars: usize,
    /// The name of this `sync` call, the same on every retry of it: a document that a call
    /// with this key already wrote is not written again, and the call reports what the first
    /// one did. `None`: every call applies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<IdempotencyKey>,
    /// Where the call comes from, as the revisions it makes record it (default `api`).
    #[serde(default)]
    pub surface: Surface,
    /// The caller's session (a conversation, a request id), recorded in the revisions the
    /// call makes so a log can be read per session. `None`: not recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
}

impl MemoryContext {
    /// A per-personality context with no query, no caps and the default prefetch budget.
    pub fn new(personality: PersonalityId, user: UserId) -> Self {
        MemoryContext {
            personality,
            scope: MemoryScope::default(),
            user,
            query: None,
            budgets: Budgets::default(),
            max_chars: DEFAULT_MAX_CHARS,
            idempotency_key: None,
            surface: Surface::default(),
            session: None,
        }
    }

    /// A context whose `store` document is `document` (for a note, the document its scope sits
    /// beside), for writing one document named by its path (the command line, the Memory page, `migrate`). The ids it does not need are
    /// placeholders: `sync` reads only the document of the store an update names.
    pub fn writing(document: &DocumentId) -> (MemoryContext, Store) {
        let placeholder_personality = || PersonalityId::new(PLACEHOLDER).expect("a valid id");
        let placeholder_user = || UserId::new(PLACEHOLDER).expect("a valid id");
        let ctx = match document {
            DocumentId::GlobalMemory => {
                MemoryContext::new(placeholder_personality(), placeholder_user())
                    .with_scope(MemoryScope::Global)
            }
            DocumentId::PersonalityMemory { personality } => {
                MemoryContext::new(personality.clone(), placeholder_user())
            }
            DocumentId::UserProfile { user } => {
                MemoryContext::new(placeholder_personality(), user.clone())
            }
            // A note is written through the context of the document its scope sits beside.
            DocumentId::Note(note) => return MemoryContext::writing(&note.scope.document()),
        };
        (ctx, document.store())
    }

    /// Records `surface` as where this context's writes come from.
    pub fn with_surface(mut self, surface: Surface) -> Self {
        self.surface = surface;
        self
    }

    /// Records `session` in the revisions this context's writes make.
    pub fn with_session(mut self, session: impl Into<String>) -> Self {
        self.session = Some(session.into());
        self
    }

    /// Names the next `sync` call made with this context: repeating it with the same key
    /// never applies it twice. Use a fresh key per logical call
    /// ([`IdempotencyKey::generate`]) and keep it across that call's retries.
    pub fn with_idempotency_key(mut self, key: IdempotencyKey) -> Self {
        self.idempotency_key = Some(key);
        self
    }

    /// Sets the memory scope.
    pub fn with_scope(mut self, scope: MemoryScope) -> Self {
        self.scope = scope;
        self
    }

    /// Sets the query (the current user message).
    pub fn with_query(mut self, query: impl Into<String>) -> Self {
        self.query = Some(query.into());
        self
    }

    /// Sets the byte caps.
    pub fn with_budgets(mut self, budgets: Budgets) -> Self {
        self.budgets = budgets;
        self
    }

    /// Sets the prefetch budget in chars.
    pub fn with_max_chars(mut self, max_chars: usize) -> Self {
        self.max_chars = max_chars;
        self
    }

    /// The document `store` resolves to for this personality and user.
    pub fn document(&self, store: Store) -> DocumentId {
        match store {
            Store::Memory => DocumentId::memory(&self.personality, self.scope),
            Store::User => DocumentId::user(&self.user),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_ids_are_required_on_the_wire() {
        let ctx: MemoryContext =
            serde_json::from_str(r#"{"personality":"ada","user":"u1"}"#).unwrap();
        let expected = MemoryContext::new(
            PersonalityId::new("ada").unwrap(),
            UserId::new("u1").unwrap(),
        );
        assert_eq!(ctx, expected);
        let err = serde_json::from_str::<MemoryContext>(r#"{"personality":"../x","user":"u1"}"#)
            .unwrap_err();
        assert!(err.to_string().contains("invalid personality id"), "{err}");
    }
}
