//! Reading the provider tables: each one's kind and fields, `${VAR}`s and paths resolved, a
//! vector provider checked against its source.

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};

use memory_core::MemoryError;
use memory_core::raw::ResolveFields;
#[cfg(feature = "recall")]
use memory_vector::ModelConfig;
use serde::Deserialize;
use toml::Spanned;

use super::locator::Locator;
#[cfg(feature = "recall")]
use super::locator::{names, shown_name};
use super::{ProviderConfig, home, is_name};
use crate::backends::RawProvider;
#[cfg(feature = "recall")]
use crate::backends::STORAGE_KINDS;

/// The providers the file configures, by name: each table read as its kind, its fields
/// resolved (a mistake named at the field's line).
pub(super) fn read(
    at: &Locator<'_>,
    raw: &BTreeMap<String, Spanned<RawProvider>>,
    spans: &FieldSpans,
    base: &Path,
) -> Result<BTreeMap<String, ProviderConfig>, MemoryError> {
    let mut providers = BTreeMap::new();
    for (name, spanned) in raw {
        let span = spanned.span();
        let field = |key: &str| format!("providers.{name}.{key}");
        // The line of `key = ...` in this provider, else its table's.
        let at_field = |key: &str| Some(spans.field(name, key).unwrap_or_else(|| span.clone()));
        if !is_name(name) {
            return Err(at.error(
                Some(span.clone()),
                &format!(
                    "provider name {name:?} may use only A-Z, a-z, 0-9, '_' and '-', 1 to 64 of them"
                ),
            ));
        }
        let expand = |key: &str, value: &str| {
            expand_env(value)
                .map_err(|msg| at.error(at_field(key), &format!("{}: {msg}", field(key))))
        };
        let provider = match spanned.get_ref() {
            #[cfg(feature = "recall")]
            RawProvider::Vector(vector) => {
                let path =
                    |key: &str, value: &str| expand(key, value).map(|v| resolve_path(base, &v));
                let source = match raw.get(&vector.source).map(Spanned::get_ref) {
                    None => {
                        return Err(at.error(
                            at_field("source"),
                            &format!(
                                "{} names {}, which is not a configured provider ({})",
                                field("source"),
                                shown_name(&vector.source),
                                names(raw)
                            ),
                        ));
                    }
                    Some(RawProvider::Vector(_)) => {
                        return Err(at.error(
                            at_field("source"),
                            &format!(
                                "{} names {:?}, another vector provider; a source must store documents ({})",
                                field("source"),
                                vector.source,
                                STORAGE_KINDS.join(", ")
                            ),
                        ));
                    }
                    Some(source) => source,
                };
                // Where the source keeps a recall index by default, its fields resolved
                // as this provider's.
                let default_dir = match source.storage() {
                    Some(mut source) => {
                        let mut fields = Fields {
                            expand: &expand,
                            base,
                        };
                        source
                            .backend_mut()
                            .map(|backend| backend.resolve(&mut fields))
                            .transpose()?;
                        source
                            .backend()
                            .and_then(|backend| backend.default_index_dir())
                    }
                    None => None,
                };
                let index_dir = match (&vector.index_dir, default_dir) {
                    (Some(dir), _) => path("index_dir", dir)?,
                    (None, Some(dir)) => dir,
                    (None, None) => {
                        return Err(at.error(
                            Some(span.clone()),
                            &format!(
                                "{} is required when the source is not a markdown provider",
                                field("index_dir")
                            ),
                        ));
                    }
                };
                let mut model = ModelConfig::of(vector.model);
                if let Some(dir) = &vector.model_dir {
                    model.model_dir = path("model_dir", dir)?;
                }
                if let Some(lib) = &vector.ort_library {
                    model.ort_library = Some(path("ort_library", lib)?);
                }
                ProviderConfig::Vector {
                    source: vector.source.clone(),
                    index_dir,
                    model,
                    recall: vector.recall,
                }
            }
            storage => {
                let mut provider = storage
                    .storage()
                    .ok_or_else(|| at.error(Some(span.clone()), "not a storage backend"))?;
                let mut fields = Fields {
                    expand: &expand,
                    base,
                };
                if let Some(backend) = provider.backend_mut() {
                    backend.resolve(&mut fields)?;
                }
                provider
            }
        };
        providers.insert(name.clone(), provider);
    }
    Ok(providers)
}

/// `~/x` under the home directory; a relative path under `base`.
fn resolve_path(base: &Path, value: &str) -> PathBuf {
    match value.strip_prefix("~/") {
        Some(rest) => home().join(rest),
        None => base.join(value),
    }
}

/// Replaces every `${VAR}` with the variable's value. Errors never quote the value: it is often
/// a URL with a password in it.
fn expand_env(value: &str) -> Result<String, String> {
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let Some(len) = rest[start + 2..].find('}') else {
            let at = value.len() - rest.len() + start;
            return Err(format!(
                "\"${{\" at character {} has no closing \"}}\"",
                value[..at].chars().count() + 1
            ));
        };
        let name = &rest[start + 2..start + 2 + len];
        match std::env::var(name) {
            Ok(found) => out.push_str(&found),
            Err(_) => return Err(format!("environment variable {name} is not set")),
        }
        rest = &rest[start + 3 + len..];
    }
    out.push_str(rest);
    Ok(out)
}

/// A provider's fields resolved as the file asks: `${VAR}`s expanded (errors at the field's
/// line), paths made absolute against the file's folder.
struct Fields<'a, E> {
    expand: &'a E,
    base: &'a Path,
}

impl<E> ResolveFields for Fields<'_, E>
where
    E: Fn(&str, &str) -> Result<String, MemoryError>,
{
    fn text(&mut self, key: &str, value: &mut String) -> Result<(), MemoryError> {
        *value = (self.expand)(key, value)?;
        Ok(())
    }

    fn path(&mut self, key: &str, value: &mut PathBuf) -> Result<(), MemoryError> {
        let expanded = (self.expand)(key, &value.to_string_lossy())?;
        *value = resolve_path(self.base, &expanded);
        Ok(())
    }
}

/// The provider field a parse error is about, as its span and `providers.<name>.<key>`: serde
/// reports a mistake inside a provider table (a wrong type, an unknown key, a value not among
/// those allowed) at the whole table, a kind's fields being read through its `kind` tag. The
/// table is read again without each field in turn: the field whose absence ends the error,
/// or changes it, is the one. `None` when the error is not inside one field of a provider.
pub(super) fn in_provider_field(
    text: &str,
    err: &toml::de::Error,
) -> Option<(Range<usize>, String)> {
    #[derive(Deserialize)]
    struct Tables {
        #[serde(default)]
        providers: BTreeMap<String, Spanned<toml::Table>>,
    }
    let at = err.span()?;
    let tables: Tables = toml::from_str(text).ok()?;
    let spans: FieldSpans = toml::from_str(text).ok()?;
    let (name, table) = tables.providers.iter().find(|(_, table)| {
        let span = table.span();
        span.start <= at.start && at.end <= span.end
    })?;
    let table = table.get_ref();
    table.keys().filter(|key| *key != "kind").find_map(|key| {
        let mut without = table.clone();
        without.remove(key);
        let read = toml::Value::Table(without).try_into::<RawProvider>();
        if read.is_err_and(|other| other.message() == err.message()) {
            // The same mistake without it: not this field's.
            return None;
        }
        Some((spans.field(name, key)?, format!("providers.{name}.{key}")))
    })
}

/// Where the fields of each provider table are written in the file (what else it holds is
/// [`RawConfig`]'s to check).
#[derive(Deserialize)]
pub(super) struct FieldSpans {
    #[serde(default)]
    providers: BTreeMap<String, BTreeMap<String, Spanned<serde::de::IgnoredAny>>>,
}

impl FieldSpans {
    /// The span of `key`'s value in provider `name`, if the file writes it.
    fn field(&self, name: &str, key: &str) -> Option<Range<usize>> {
        self.providers.get(name)?.get(key).map(Spanned::span)
    }
}
