//! Naming a mistake's place in the file: byte spans as `<file>:<line>:`, the passwords of URLs
//! a message quotes hidden, and the checks that name a provider the file may not have.

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::Path;

use memory_core::MemoryError;
use serde::Deserialize;
use toml::Spanned;

use super::is_name;
use crate::backends::{RawProvider, feature_lacking};

/// Turns byte spans of the file into `<file>:<line>:` messages.
pub(crate) struct Locator<'a> {
    /// The whole file.
    pub(crate) text: &'a str,
    /// The file's path, as messages name it.
    pub(crate) origin: &'a Path,
}

impl Locator<'_> {
    /// `message` about the value at `span` of the file (or the file as a whole, when `None`),
    /// as a [`MemoryError::Config`] starting `<file>:<line>:`.
    pub(crate) fn error(&self, span: Option<Range<usize>>, message: &str) -> MemoryError {
        let file = self.origin.display();
        let message = match span {
            Some(span) => {
                let line = self.text[..span.start.min(self.text.len())]
                    .matches('\n')
                    .count()
                    + 1;
                format!("{file}:{line}: {message}")
            }
            None => format!("{file}: {message}"),
        };
        MemoryError::Config { message }
    }

    /// Refuses a provider whose `kind` this build lacks, naming the cargo feature that builds
    /// it, before the parse reads the table as one of the kinds it has (which would call the
    /// kind unknown). A file that is not TOML is left to the parse to report.
    pub(super) fn kinds_built(&self) -> Result<(), MemoryError> {
        #[derive(Deserialize)]
        struct Kinds {
            #[serde(default)]
            providers: BTreeMap<String, RawKind>,
        }
        #[derive(Deserialize)]
        struct RawKind {
            kind: Option<Spanned<String>>,
        }
        let Ok(kinds) = toml::from_str::<Kinds>(self.text) else {
            return Ok(());
        };
        for (name, provider) in &kinds.providers {
            let Some(kind) = &provider.kind else { continue };
            if let Some(feature) = feature_lacking(kind.get_ref()) {
                return Err(self.error(
                    Some(kind.span()),
                    &format!(
                        "providers.{name}.kind = {:?}: this build has no {} provider; {}",
                        kind.get_ref(),
                        kind.get_ref(),
                        crate::rebuild_with(feature)
                    ),
                ));
            }
        }
        Ok(())
    }

    pub(super) fn known(
        &self,
        providers: &BTreeMap<String, Spanned<RawProvider>>,
        name: &Spanned<String>,
        key: &str,
    ) -> Result<(), MemoryError> {
        if providers.contains_key(name.get_ref()) {
            return Ok(());
        }
        Err(self.error(
            Some(name.span()),
            &format!(
                "{key} names {}, which is not a configured provider ({})",
                shown_name(name.get_ref()),
                names(providers)
            ),
        ))
    }
}

/// A value given where a provider name belongs, fit for an error: quoted when it could be a
/// name, not at all when it could not (a URL pasted there may carry its password).
pub(super) fn shown_name(value: &str) -> String {
    if is_name(value) {
        format!("{value:?}")
    } else {
        "a value that is not a provider name (names use only A-Z, a-z, 0-9, '_' and '-')".to_owned()
    }
}

pub(super) fn names(providers: &BTreeMap<String, Spanned<RawProvider>>) -> String {
    if providers.is_empty() {
        return "none is configured".to_owned();
    }
    let names: Vec<&str> = providers.keys().map(String::as_str).collect();
    format!("configured: {}", names.join(", "))
}
