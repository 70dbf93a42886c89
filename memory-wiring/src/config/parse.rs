//! Reading `memory.toml`: the file's form, and the order its parts are checked in.

use std::collections::BTreeMap;
use std::path::Path;

use memory_core::{MemoryError, PersonalityId};
use serde::Deserialize;
use toml::Spanned;

use memory_core::raw::redact_urls_in;

use super::locator::{Locator, names};
use super::providers::{FieldSpans, in_provider_field};
use super::{Config, McpConfig, ServeTable, default_root, personalities, providers};
use crate::backends::RawProvider;

impl Config {
    /// Parses `text`, read from `origin` (named in messages; relative paths are resolved
    /// against its directory).
    ///
    /// `${VAR}` in a URL or path is replaced by that environment variable, so secrets stay out
    /// of the file; `~/` at the start of a path is the home directory. The `[serve]` table is
    /// kept as written ([`ServeTable`]): the service reads and checks it
    /// (`ServeTable::settings`, which the `memory` command runs for every command).
    ///
    /// # Errors
    /// [`MemoryError::Config`] whose message starts `<file>:<line>:` for unknown keys, wrong
    /// types, provider names that name nothing, unset variables and caps out of order.
    pub fn parse(text: &str, origin: &Path) -> Result<Config, MemoryError> {
        let at = Locator { text, origin };
        at.kinds_built()?;
        let raw: RawConfig = toml::from_str(text).map_err(|err| {
            let (span, message) = match in_provider_field(text, &err) {
                Some((span, field)) => (Some(span), format!("{field}: {}", err.message())),
                None => (err.span(), err.message().to_owned()),
            };
            at.error(span, &redact_urls_in(&message))
        })?;
        // Where each provider's fields are written, so that a mistake in one names its line
        // rather than the provider table's.
        let spans: FieldSpans = toml::from_str(text)
            .map_err(|err| at.error(err.span(), &redact_urls_in(err.message())))?;
        let base = origin.parent().unwrap_or(Path::new("."));

        let mut providers = providers::read(&at, &raw.providers, &spans, base)?;

        let default_provider = match (&raw.default_provider, providers.len()) {
            (Some(name), _) => {
                at.known(&raw.providers, name, "default_provider")?;
                name.get_ref().clone()
            }
            (None, 0) => {
                let default = Config::markdown(default_root());
                providers = default.providers;
                default.default_provider
            }
            (None, 1) => providers.keys().next().cloned().unwrap_or_default(),
            (None, _) => {
                return Err(at.error(
                    None,
                    &format!(
                        "default_provider is required when there are several providers ({})",
                        names(&raw.providers)
                    ),
                ));
            }
        };

        let users_provider = match &raw.users_provider {
            Some(name) => {
                at.known(&raw.providers, name, "users_provider")?;
                name.get_ref().clone()
            }
            None => default_provider.clone(),
        };

        let personalities = personalities::read(
            &at,
            raw.personalities,
            &raw.providers,
            &providers,
            &users_provider,
        )?;

        let serve = match raw.serve {
            Some(_) => ServeTable::in_file(text, origin),
            None => ServeTable::default(),
        };

        Ok(Config {
            origin: Some(origin.to_path_buf()),
            providers,
            default_provider,
            users_provider,
            personalities,
            mcp: raw.mcp,
            serve,
        })
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    default_provider: Option<Spanned<String>>,
    users_provider: Option<Spanned<String>>,
    #[serde(default)]
    providers: BTreeMap<String, Spanned<RawProvider>>,
    #[serde(default)]
    personalities: BTreeMap<PersonalityId, personalities::RawPersonality>,
    #[serde(default)]
    mcp: McpConfig,
    serve: Option<Spanned<toml::Table>>,
}
