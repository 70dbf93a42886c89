//! `memory.toml`: the named providers, the default one, and each personality's settings.

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use memory_core::raw::ResolveFields;
use memory_core::{
    Budgets, DEFAULT_MAX_CHARS, DocumentId, MemoryError, MemoryScope, PersonalityId, Retention,
    UserId,
};
use memory_markdown::{LayoutName, MarkdownConfig};
#[cfg(feature = "recall")]
use memory_vector::ModelConfig;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use toml::Spanned;

pub use crate::backends::ProviderConfig;
#[cfg(feature = "recall")]
use crate::backends::STORAGE_KINDS;
use crate::backends::{RawProvider, feature_lacking};

/// The environment variable naming the config file when no `--config` is given.
pub const CONFIG_ENV: &str = "MEMORY_CONFIG";
/// The environment variable naming the markdown root of the default config.
pub const ROOT_ENV: &str = "MEMORY_ROOT";
/// The name of the provider in the default config, and of a config file's provider when it
/// names no `default_provider` and has exactly one.
pub const DEFAULT_PROVIDER: &str = "markdown";

/// A whole wiring: which providers exist, which one is the default, and what each personality
/// uses. Build one with [`Config::load`], [`Config::parse`] or [`Config::markdown`].
#[derive(Debug, Clone)]
pub struct Config {
    /// Where it was read from, for messages; `None` for the built-in default.
    pub origin: Option<PathBuf>,
    /// The providers by name.
    pub providers: BTreeMap<String, ProviderConfig>,
    /// The provider of personalities without one.
    pub default_provider: String,
    /// The home of every user's `USER.md`, of the global `MEMORY.md` and of the identity map,
    /// whatever the personality: `users_provider` in the file, else the default provider.
    pub users_provider: String,
    /// The personalities configured by name; any other personality gets the defaults.
    pub personalities: BTreeMap<PersonalityId, PersonalityConfig>,
    /// Who `memory mcp` serves when its command line does not say.
    pub mcp: McpConfig,
    /// How `memory serve` runs the HTTP service (its API keys and limits), as the file writes
    /// it: memory-web reads it.
    pub serve: ServeTable,
}

/// The `[mcp]` table: the conversation `memory mcp` serves by default.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpConfig {
    /// The personality whose memory the tools edit.
    pub personality: Option<PersonalityId>,
    /// The user whose profile the tools edit.
    pub user: Option<UserId>,
}

/// What one personality uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PersonalityConfig {
    /// Its provider's name; `None` for the default provider.
    pub provider: Option<String>,
    /// Its own `MEMORY.md` or the global one.
    pub memory_scope: MemoryScope,
    /// Byte caps on its writes.
    pub budgets: Budgets,
    /// The most chars its prefetch renders.
    pub max_chars: usize,
}

impl Default for PersonalityConfig {
    fn default() -> Self {
        PersonalityConfig {
            provider: None,
            memory_scope: MemoryScope::default(),
            budgets: Budgets::default(),
            max_chars: DEFAULT_MAX_CHARS,
        }
    }
}

impl Config {
    /// The config at `explicit`, else at `$MEMORY_CONFIG`, else [`Config::markdown`] at
    /// `$MEMORY_ROOT` or `~/.agent-memory`.
    ///
    /// # Errors
    /// [`MemoryError::Config`] naming the file (and line) when it cannot be read or is wrong.
    pub fn load(explicit: Option<&Path>) -> Result<Config, MemoryError> {
        let from_env = std::env::var_os(CONFIG_ENV).map(PathBuf::from);
        match explicit.map(Path::to_path_buf).or(from_env) {
            Some(path) => Config::from_file(&path),
            None => Ok(Config::markdown(default_root())),
        }
    }

    /// Reads and parses the file at `path`; relative paths in it are relative to its directory.
    ///
    /// # Errors
    /// [`MemoryError::Config`] naming the file when it cannot be read, and the line when it is
    /// wrong.
    pub fn from_file(path: &Path) -> Result<Config, MemoryError> {
        let text = std::fs::read_to_string(path).map_err(|err| MemoryError::Config {
            message: format!("cannot read {}: {err}", path.display()),
        })?;
        Config::parse(&text, path)
    }

    /// The built-in default: one markdown provider at `root`, every personality on it.
    pub fn markdown(root: impl Into<PathBuf>) -> Config {
        let provider = ProviderConfig::Markdown(MarkdownConfig {
            root: root.into(),
            history: Retention::default(),
            layout: LayoutName::Ethos,
            personality: None,
            user: None,
        });
        Config {
            origin: None,
            providers: BTreeMap::from([(DEFAULT_PROVIDER.to_owned(), provider)]),
            default_provider: DEFAULT_PROVIDER.to_owned(),
            users_provider: DEFAULT_PROVIDER.to_owned(),
            personalities: BTreeMap::new(),
            mcp: McpConfig::default(),
            serve: ServeTable::default(),
        }
    }

    /// Parses `text`, read from `origin` (named in messages; relative paths are resolved
    /// against its directory).
    ///
    /// `${VAR}` in a URL or path is replaced by that environment variable, so secrets stay out
    /// of the file; `~/` at the start of a path is the home directory. The `[serve]` table is
    /// kept as written ([`ServeTable`]): the service reads and checks it
    /// (`memory_web::Settings::from_config`, which the `memory` command runs for every command).
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
            at.error(span, &urls_hidden(&message))
        })?;
        // Where each provider's fields are written, so that a mistake in one names its line
        // rather than the provider table's.
        let spans: FieldSpans = toml::from_str(text)
            .map_err(|err| at.error(err.span(), &urls_hidden(err.message())))?;
        let base = origin.parent().unwrap_or(Path::new("."));

        let mut providers = BTreeMap::new();
        for (name, spanned) in &raw.providers {
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
                    let source = match raw.providers.get(&vector.source).map(Spanned::get_ref) {
                        None => {
                            return Err(at.error(
                                at_field("source"),
                                &format!(
                                    "{} names {}, which is not a configured provider ({})",
                                    field("source"),
                                    shown_name(&vector.source),
                                    names(&raw.providers)
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

        let mut personalities = BTreeMap::new();
        for (id, personality) in raw.personalities {
            if let Some(name) = &personality.provider {
                at.known(
                    &raw.providers,
                    name,
                    &format!("personalities.{id}.provider"),
                )?;
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
                && storage(&providers, name.get_ref()) != storage(&providers, &users_provider)
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

        let serve = ServeTable {
            written: raw.serve.map(|table| WrittenTable {
                text: Arc::from(text),
                origin: origin.to_path_buf(),
                span: table.span(),
            }),
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

    /// The settings of `personality`: its own if configured, else the defaults.
    pub fn personality(&self, personality: &PersonalityId) -> PersonalityConfig {
        self.personalities
            .get(personality)
            .cloned()
            .unwrap_or_default()
    }

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
fn storage<'a>(providers: &'a BTreeMap<String, ProviderConfig>, name: &'a str) -> &'a str {
    match providers.get(name) {
        #[cfg(feature = "recall")]
        Some(ProviderConfig::Vector { source, .. }) => source,
        _ => name,
    }
}

/// `$MEMORY_ROOT`, else `~/.agent-memory`.
pub fn default_root() -> PathBuf {
    std::env::var_os(ROOT_ENV)
        .map(PathBuf::from)
        .unwrap_or_else(|| home().join(".agent-memory"))
}

fn home() -> PathBuf {
    std::env::var_os("HOME").map_or_else(|| PathBuf::from("."), PathBuf::from)
}

fn is_name(name: &str) -> bool {
    PersonalityId::new(name).is_ok()
}

/// A parser's message with the password of any URL it quotes (a URL written where a `kind`
/// belongs: "unknown variant `postgres://user:pw@...`") replaced by `***`.
fn urls_hidden(message: &str) -> String {
    message
        .split_inclusive(['`', '"'])
        .map(|part| match part.find("://") {
            Some(_) => {
                let (quoted, end) = part.split_at(part.len() - 1);
                let closed = matches!(end, "`" | "\"");
                let url = if closed { quoted } else { part };
                let shown = memory_core::raw::redact_url(url);
                if closed { shown + end } else { shown }
            }
            None => part.to_owned(),
        })
        .collect()
}

/// A value given where a provider name belongs, fit for an error: quoted when it could be a
/// name, not at all when it could not (a URL pasted there may carry its password).
fn shown_name(value: &str) -> String {
    if is_name(value) {
        format!("{value:?}")
    } else {
        "a value that is not a provider name (names use only A-Z, a-z, 0-9, '_' and '-')".to_owned()
    }
}

fn names(providers: &BTreeMap<String, Spanned<RawProvider>>) -> String {
    if providers.is_empty() {
        return "none is configured".to_owned();
    }
    let names: Vec<&str> = providers.keys().map(String::as_str).collect();
    format!("configured: {}", names.join(", "))
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
fn in_provider_field(text: &str, err: &toml::de::Error) -> Option<(Range<usize>, String)> {
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

/// The `[serve]` table as the file writes it: the HTTP service's settings, which memory-web
/// reads and checks (`memory_web::Settings::from_config`). It keeps the file's text, so a
/// mistake in it is named at its line as every other mistake in the file is.
#[derive(Clone, Default)]
pub struct ServeTable {
    /// `None` when the file has no `[serve]` table (or there is no file).
    written: Option<WrittenTable>,
}

#[derive(Clone)]
struct WrittenTable {
    /// The whole file: spans are byte offsets into it.
    text: Arc<str>,
    origin: PathBuf,
    /// Where the table is.
    span: Range<usize>,
}

impl ServeTable {
    /// The table read as `T`, or `T::default()` when the file has none. The spans of `T`'s
    /// [`Spanned`] fields are byte offsets into the file, for [`ServeTable::error`].
    ///
    /// # Errors
    /// [`MemoryError::Config`] starting `<file>:<line>:` when the table is not a `T`: an
    /// unknown key, a wrong type.
    pub fn parse<T: DeserializeOwned + Default>(&self) -> Result<T, MemoryError> {
        #[derive(Deserialize)]
        #[serde(bound = "T: DeserializeOwned")]
        struct Only<T> {
            serve: T,
        }
        let Some(written) = &self.written else {
            return Ok(T::default());
        };
        toml::from_str::<Only<T>>(&written.text)
            .map(|only| only.serve)
            .map_err(|err| {
                written
                    .locator()
                    .error(err.span(), &urls_hidden(err.message()))
            })
    }

    /// `message` about the value at `span` of the file, or about the table itself when
    /// `None`, as a [`MemoryError::Config`] starting `<file>:<line>:`.
    pub fn error(&self, span: Option<Range<usize>>, message: &str) -> MemoryError {
        match &self.written {
            Some(written) => written
                .locator()
                .error(Some(span.unwrap_or_else(|| written.span.clone())), message),
            None => MemoryError::Config {
                message: message.to_owned(),
            },
        }
    }
}

/// Where the table is, never the file's text: that may hold a password in a URL.
impl std::fmt::Debug for ServeTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut table = f.debug_struct("ServeTable");
        if let Some(written) = &self.written {
            table
                .field("origin", &written.origin)
                .field("span", &written.span);
        }
        table.finish()
    }
}

impl WrittenTable {
    fn locator(&self) -> Locator<'_> {
        Locator {
            text: &self.text,
            origin: &self.origin,
        }
    }
}

/// Turns byte spans of the file into `<file>:<line>:` messages.
struct Locator<'a> {
    text: &'a str,
    origin: &'a Path,
}

impl Locator<'_> {
    fn error(&self, span: Option<Range<usize>>, message: &str) -> MemoryError {
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
    fn kinds_built(&self) -> Result<(), MemoryError> {
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

    fn known(
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

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    default_provider: Option<Spanned<String>>,
    users_provider: Option<Spanned<String>>,
    #[serde(default)]
    providers: BTreeMap<String, Spanned<RawProvider>>,
    #[serde(default)]
    personalities: BTreeMap<PersonalityId, RawPersonality>,
    #[serde(default)]
    mcp: McpConfig,
    serve: Option<Spanned<toml::Table>>,
}

/// Where the fields of each provider table are written in the file (what else it holds is
/// [`RawConfig`]'s to check).
#[derive(Deserialize)]
struct FieldSpans {
    #[serde(default)]
    providers: BTreeMap<String, BTreeMap<String, Spanned<serde::de::IgnoredAny>>>,
}

impl FieldSpans {
    /// The span of `key`'s value in provider `name`, if the file writes it.
    fn field(&self, name: &str, key: &str) -> Option<Range<usize>> {
        self.providers.get(name)?.get(key).map(Spanned::span)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPersonality {
    provider: Option<Spanned<String>>,
    #[serde(default)]
    memory_scope: MemoryScope,
    caps: Option<Spanned<Budgets>>,
    max_chars: Option<usize>,
}
