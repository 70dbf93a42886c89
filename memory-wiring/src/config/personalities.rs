//! Reading the personality tables: each one's provider, scope, caps and prefetch budget.

use std::collections::BTreeMap;

use memory_core::{Budgets, DEFAULT_MAX_CHARS, MemoryError, MemoryScope, PersonalityId};
use serde::Deserialize;
use toml::Spanned;

use super::homes::storage;
use super::locator::Locator;
use super::{PersonalityConfig, ProviderConfig};
use crate::backends::RawProvider;

/// The personalities the file configures, each checked: the provider it names exists, its
/// soft caps are not over its hard caps, and a global scope goes with the users provider.
pub(super) fn read(
    at: &Locator<'_>,
    raw: BTreeMap<PersonalityId, RawPersonality>,
    raw_providers: &BTreeMap<String, Spanned<RawProvider>>,
    providers: &BTreeMap<String, ProviderConfig>,
    users_provider: &str,
) -> Result<BTreeMap<PersonalityId, PersonalityConfig>, MemoryError> {
    let mut personalities = BTreeMap::new();
    for (id, personality) in raw {
        if let Some(name) = &personality.provider {
            at.known(raw_providers, name, &format!("personalities.{id}.provider"))?;
        }
        let caps_span = personality.caps.as_ref().map(Spanned::span);
        let caps = personality
            .caps
            .map(Spanned::into_inner)
            .unwrap_or_default();
        if let Some((store, soft, hard)) = caps.soft_over_hard() {
            return Err(at.error(
                caps_span,
                &format!(
                    "personalities.{id}.caps.{store}: soft cap {soft} is over hard cap {hard}"
                ),
            ));
        }
        // The global MEMORY.md has one home, shared by every global-scope personality: a
        // personality that names a provider storing documents elsewhere would silently
        // read and write another file than the one its provider suggests.
        if personality.memory_scope == MemoryScope::Global
            && let Some(name) = &personality.provider
            && storage(providers, name.get_ref()) != storage(providers, users_provider)
        {
            return Err(at.error(
                Some(name.span()),
                &format!(
                    "personalities.{id} has memory_scope = \"global\", but the global MEMORY.md lives with users_provider {users_provider:?}, not with provider {:?}; drop its provider, give it {users_provider:?} (or a vector provider over it), or set users_provider",
                    name.get_ref()
                ),
            ));
        }
        let config = PersonalityConfig {
            provider: personality.provider.map(Spanned::into_inner),
            memory_scope: personality.memory_scope,
            budgets: caps,
            max_chars: personality.max_chars.unwrap_or(DEFAULT_MAX_CHARS),
        };
        personalities.insert(id, config);
    }
    Ok(personalities)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawPersonality {
    provider: Option<Spanned<String>>,
    #[serde(default)]
    memory_scope: MemoryScope,
    caps: Option<Spanned<Budgets>>,
    max_chars: Option<usize>,
}
