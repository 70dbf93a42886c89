//! Where each document lives: one home per document, whatever the personality, and the
//! provider each personality reads and writes it through.

use std::collections::BTreeMap;

use memory_core::{DocumentId, PersonalityId};

use super::{Config, ProviderConfig};

impl Config {
    /// The name of the provider `personality` uses.
    pub fn provider_of(&self, personality: &PersonalityId) -> &str {
        self.personalities
            .get(personality)
            .and_then(|p| p.provider.as_deref())
            .unwrap_or(&self.default_provider)
    }

    /// The provider `document` lives in, for the whole wiring: a personality's `MEMORY.md` in
    /// that personality's provider; every `USER.md` and the global `MEMORY.md` in the users
    /// provider.
    pub fn home_of(&self, document: &DocumentId) -> &str {
        match document {
            DocumentId::PersonalityMemory { personality } => self.provider_of(personality),
            DocumentId::GlobalMemory | DocumentId::UserProfile { .. } => &self.users_provider,
            // A note lives with the document its scope sits beside.
            DocumentId::Note(note) => self.home_of(&note.scope.document()),
        }
    }

    /// The provider `personality` reads and writes `document` through: its own provider when
    /// that stores the document's home (a vector provider over the home, say, so recall
    /// applies), else the home itself. Either way the same bytes: one home per document.
    pub fn provider_for(&self, personality: &PersonalityId, document: &DocumentId) -> &str {
        let (own, home) = (self.provider_of(personality), self.home_of(document));
        if self.storage_of(own) == self.storage_of(home) {
            own
        } else {
            home
        }
    }

    /// The provider `personality` reads and writes its `MEMORY.md` through: its own, or the
    /// global one's under a global scope ([`Config::provider_for`] of that document).
    pub fn memory_provider_of(&self, personality: &PersonalityId) -> &str {
        let scope = self.personality(personality).memory_scope;
        self.provider_for(personality, &DocumentId::memory(personality, scope))
    }

    /// The provider that stores the bytes of `name`'s documents: `name` itself, or the source
    /// of a vector provider.
    pub fn storage_of<'a>(&'a self, name: &'a str) -> &'a str {
        storage(&self.providers, name)
    }
}

/// The provider that stores the bytes of `name`'s documents (see [`Config::storage_of`]).
pub(super) fn storage<'a>(
    providers: &'a BTreeMap<String, ProviderConfig>,
    name: &'a str,
) -> &'a str {
    match providers.get(name) {
        #[cfg(feature = "recall")]
        Some(ProviderConfig::Vector { source, .. }) => source,
        _ => name,
    }
}
