//! The service's settings: its limits, and who may call it (the `[serve]` table of
//! `memory.toml`, or built in code).

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;
use std::time::Duration;

use memory_core::raw::redact_urls_in;
use memory_core::{MemoryError, PersonalityId, UserId};
use serde::Deserialize;
use toml::Spanned;

/// The HTTP service's API keys and limits: [`Settings::default`] and its fields in code, or
/// the `[serve]` table of a TOML document such as `memory.toml` ([`Settings::from_toml`]).
///
/// ```toml
/// [serve]
/// request_timeout_ms = 30000        # a request past this is answered 503 (or 504 for a write)
/// max_concurrent_requests = 512     # more at once are answered 503 with Retry-After
/// max_body_bytes = 1048576          # larger bodies are answered 413
/// body_timeout_ms = 10000           # a body not all sent by then is answered 408
/// header_timeout_ms = 10000         # a request's headers not all sent by then (or a connection
///                                   # idle that long between requests): the connection is closed
/// max_connections = 1024            # more wait to be accepted until one closes
/// shutdown_timeout_ms = 30000       # how long SIGTERM waits for requests in flight
/// cors_origins = ["https://app.example.com"]   # none: no CORS, browsers keep to this origin
///
/// [serve.keys]                      # by SHA-256, never the key: `memory key new` prints a line
/// agents = { sha256 = "…", scopes = ["read", "write"] }
/// alice-app = { sha256 = "…", scopes = ["read", "write"], users = ["alice"] }
/// ops = { sha256 = "…", scopes = ["admin"] }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// The API keys by name. None: only a loopback server without keys may start.
    pub keys: BTreeMap<String, ApiKey>,
    /// Origins (`https://host[:port]`) whose pages may call the API from a browser.
    pub cors_origins: Vec<String>,
    /// The most one request may take.
    pub request_timeout: Duration,
    /// The most requests served at once.
    pub max_concurrent_requests: usize,
    /// The largest request body accepted, in bytes.
    pub max_body_bytes: usize,
    /// The most a request's body may take to arrive, whole; past it the request is answered 408
    /// before it takes a place among the requests served at once.
    pub body_timeout: Duration,
    /// The most a request's headers may take to arrive, whole, counted from the end of the
    /// request before on the connection (or from its opening): past it the connection is
    /// closed. So a connection idle this long between requests is closed too.
    pub header_timeout: Duration,
    /// The most connections open at once; more wait in the listen queue until one closes.
    pub max_connections: usize,
    /// How long a stop (SIGTERM, Ctrl-C) waits for requests in flight before exiting.
    pub shutdown_timeout: Duration,
}

impl Settings {
    /// The `[serve]` table of the TOML document `document`, checked; the defaults when it has
    /// none. Only that table is read: the document may hold anything else (`memory.toml`'s
    /// providers and personalities).
    ///
    /// # Errors
    /// [`SettingsError`] naming the setting at fault, with the byte span in `document` of the
    /// mistake: a key's at the key's own name or field, a limit's at the table, a value of the
    /// wrong shape at the value.
    pub fn from_toml(document: &str) -> Result<Settings, SettingsError> {
        /// The one table read; serde passes over the others.
        #[derive(Deserialize)]
        struct Only {
            serve: Option<Spanned<RawServe>>,
        }
        // The parser may quote a value; the document may hold a URL with its password.
        let only: Only = toml::from_str(document).map_err(|err| SettingsError {
            message: redact_urls_in(err.message()),
            span: err.span(),
        })?;
        let Some(table) = only.serve else {
            return Ok(Settings::default());
        };
        let span = table.span();
        table.into_inner().check().map_err(|err| SettingsError {
            span: err.span.or(Some(span)),
            ..err
        })
    }
}

/// A mistake in the `[serve]` table: what is wrong, naming the setting, and where in the
/// document ([`Settings::from_toml`]) it is, for the caller to name the line of its file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SettingsError {
    /// What is wrong, naming the setting (`serve.keys.ops.scopes is empty: ...`).
    pub message: String,
    /// The byte span in the document of the value at fault, or of the table; `None` when the
    /// document is not TOML at all and the parser could not say where.
    pub span: Option<Range<usize>>,
}

impl std::fmt::Display for SettingsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for SettingsError {}

/// A [`MemoryError::Config`] with the message alone: a caller with the document's file names
/// the line instead (the wiring of `memory.toml` does).
impl From<SettingsError> for MemoryError {
    fn from(err: SettingsError) -> MemoryError {
        MemoryError::Config {
            message: err.message,
        }
    }
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            keys: BTreeMap::new(),
            cors_origins: Vec::new(),
            request_timeout: Duration::from_secs(30),
            max_concurrent_requests: 512,
            max_body_bytes: 1024 * 1024,
            body_timeout: Duration::from_secs(10),
            header_timeout: Duration::from_secs(10),
            max_connections: 1024,
            shutdown_timeout: Duration::from_secs(30),
        }
    }
}

/// One API key: its hash, what it may do, and whose memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiKey {
    /// SHA-256 of the key, lowercase hex: the key itself is never stored.
    pub sha256: String,
    /// What it may do.
    pub scopes: BTreeSet<Scope>,
    /// The only users whose `USER.md` it may read or write; `None`: every user.
    pub users: Option<BTreeSet<UserId>>,
    /// The only personalities whose memory it may read or write; `None`: every one.
    pub personalities: Option<BTreeSet<PersonalityId>>,
}

/// What a key may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    /// Read documents, prefetch, search, history, the directory, resolve identities.
    Read,
    /// Write documents: sync, replace, update batches, revert.
    Write,
    /// Everything: purge, redacting a revision, identity links and the identity list,
    /// besides read, write and metrics.
    Admin,
    /// Read `/metrics`.
    Metrics,
}

impl Scope {
    /// The scope as written in `memory.toml`.
    pub fn name(self) -> &'static str {
        match self {
            Scope::Read => "read",
            Scope::Write => "write",
            Scope::Admin => "admin",
            Scope::Metrics => "metrics",
        }
    }

    /// Every scope, in order.
    pub const ALL: [Scope; 4] = [Scope::Read, Scope::Write, Scope::Admin, Scope::Metrics];
}

impl std::fmt::Display for Scope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Scope {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Scope::ALL
            .into_iter()
            .find(|scope| scope.name() == text)
            .ok_or_else(|| format!("{text:?} is not a scope: use read, write, admin or metrics"))
    }
}

/// `[serve]` as the file writes it.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawServe {
    /// Spanned, so a mistake in a key names the key's line, not the table's.
    #[serde(default)]
    keys: BTreeMap<Spanned<String>, Spanned<RawKey>>,
    #[serde(default)]
    cors_origins: Vec<String>,
    request_timeout_ms: Option<u64>,
    max_concurrent_requests: Option<usize>,
    max_body_bytes: Option<usize>,
    body_timeout_ms: Option<u64>,
    header_timeout_ms: Option<u64>,
    max_connections: Option<usize>,
    shutdown_timeout_ms: Option<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawKey {
    sha256: Spanned<String>,
    scopes: Spanned<Vec<Scope>>,
    users: Option<Vec<UserId>>,
    personalities: Option<Vec<PersonalityId>>,
}

/// A mistake of a setting that has no place of its own (a limit): the table is blamed
/// ([`Settings::from_toml`] gives it the table's span).
impl From<String> for SettingsError {
    fn from(message: String) -> SettingsError {
        SettingsError {
            message,
            span: None,
        }
    }
}

impl SettingsError {
    /// A mistake of the value written at `span`.
    fn at<T>(span: &Spanned<T>, message: String) -> SettingsError {
        SettingsError {
            message,
            span: Some(span.span()),
        }
    }
}

impl RawServe {
    /// The table checked: key names are ids, hashes are SHA-256 hex and unique, every key has
    /// a scope, origins are origins, limits are positive. Errors name the key or setting, and
    /// a key's mistake carries the span of the name or field at fault.
    fn check(self) -> Result<Settings, SettingsError> {
        let defaults = Settings::default();
        let mut keys = BTreeMap::new();
        let mut hashes = BTreeMap::new();
        for (name, key) in self.keys {
            check_key_name(name.get_ref())
                .map_err(|reason| SettingsError::at(&name, format!("serve.keys: {reason}")))?;
            let name = name.into_inner();
            let at = format!("serve.keys.{name}");
            let key = key.into_inner();
            let sha256 = key.sha256.get_ref().to_ascii_lowercase();
            if sha256.len() != 64 || !sha256.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(SettingsError::at(
                    &key.sha256,
                    format!(
                        "{at}.sha256 is not a SHA-256 in hex (64 hex digits); `memory key new` prints one"
                    ),
                ));
            }
            if let Some(other) = hashes.insert(sha256.clone(), name.clone()) {
                return Err(SettingsError::at(
                    &key.sha256,
                    format!("{at}.sha256 is the hash of key {other:?} too: each key needs its own"),
                ));
            }
            if key.scopes.get_ref().is_empty() {
                return Err(SettingsError::at(
                    &key.scopes,
                    format!("{at}.scopes is empty: give it read, write, admin or metrics"),
                ));
            }
            keys.insert(
                name,
                ApiKey {
                    sha256,
                    scopes: key.scopes.into_inner().into_iter().collect(),
                    users: key.users.map(|users| users.into_iter().collect()),
                    personalities: key
                        .personalities
                        .map(|personalities| personalities.into_iter().collect()),
                },
            );
        }
        for origin in &self.cors_origins {
            if !is_origin(origin) {
                return Err(format!(
                    "serve.cors_origins: {origin:?} is not an origin; write scheme://host[:port], as https://app.example.com, with no path"
                )
                .into());
            }
        }
        Ok(Settings {
            keys,
            cors_origins: self.cors_origins,
            request_timeout: Duration::from_millis(at_least_one(
                "request_timeout_ms",
                self.request_timeout_ms,
                millis(defaults.request_timeout),
            )?),
            max_concurrent_requests: match at_least_one(
                "max_concurrent_requests",
                self.max_concurrent_requests,
                defaults.max_concurrent_requests,
            )? {
                n if n > MAX_CONCURRENT_REQUESTS => {
                    return Err(format!(
                        "serve.max_concurrent_requests is {n}; the most is {MAX_CONCURRENT_REQUESTS}"
                    )
                    .into());
                }
                n => n,
            },
            max_body_bytes: at_least_one(
                "max_body_bytes",
                self.max_body_bytes,
                defaults.max_body_bytes,
            )?,
            body_timeout: read_timeout(
                "body_timeout_ms",
                self.body_timeout_ms,
                defaults.body_timeout,
            )?,
            header_timeout: read_timeout(
                "header_timeout_ms",
                self.header_timeout_ms,
                defaults.header_timeout,
            )?,
            max_connections: at_least_one(
                "max_connections",
                self.max_connections,
                defaults.max_connections,
            )?,
            shutdown_timeout: Duration::from_millis(at_least_one(
                "shutdown_timeout_ms",
                self.shutdown_timeout_ms,
                millis(defaults.shutdown_timeout),
            )?),
        })
    }
}

/// The names of the keys `memory serve` makes itself: `token` for `--token`, `local` for
/// anyone on this machine when no key is configured. A configured key may not take them, so a
/// name is one caller in logs, metrics and the replay of keyed writes.
pub const RESERVED_KEY_NAMES: [&str; 2] = ["token", "local"];

/// The most requests at once a server may be configured to take.
pub const MAX_CONCURRENT_REQUESTS: usize = 100_000;

/// Whether `name` may name a key: an id (1 to 64 of `A-Z`, `a-z`, `0-9`, `_`, `-`), not one
/// of [`RESERVED_KEY_NAMES`].
///
/// # Errors
/// What is wrong with it, naming it.
pub fn check_key_name(name: &str) -> Result<(), String> {
    if PersonalityId::new(name).is_err() {
        return Err(format!(
            "key name {name:?} may use only A-Z, a-z, 0-9, '_' and '-', 1 to 64 of them"
        ));
    }
    if RESERVED_KEY_NAMES.contains(&name) {
        return Err(format!(
            "key name {name:?} is memory serve's own ({}); choose another",
            RESERVED_KEY_NAMES.join(", ")
        ));
    }
    Ok(())
}

/// `value`, or `default` when unset; 0 is refused naming the setting.
fn at_least_one<T: PartialEq + From<u8>>(
    name: &str,
    value: Option<T>,
    default: T,
) -> Result<T, String> {
    match value {
        Some(value) if value == T::from(0) => Err(format!("serve.{name} must be at least 1")),
        Some(value) => Ok(value),
        None => Ok(default),
    }
}

/// The longest a client may take to send a request's headers or body.
pub const MAX_READ_TIMEOUT: Duration = Duration::from_secs(60 * 60);

/// A timeout for reading from a client: `value` milliseconds, or `default` when unset; 0 and
/// more than [`MAX_READ_TIMEOUT`] are refused naming the setting.
fn read_timeout(name: &str, value: Option<u64>, default: Duration) -> Result<Duration, String> {
    let timeout = Duration::from_millis(at_least_one(name, value, millis(default))?);
    if timeout > MAX_READ_TIMEOUT {
        return Err(format!(
            "serve.{name} is {}; the most is {} (an hour)",
            millis(timeout),
            millis(MAX_READ_TIMEOUT)
        ));
    }
    Ok(timeout)
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// `scheme://host[:port]` with an http(s) scheme and nothing after the authority.
fn is_origin(text: &str) -> bool {
    let Some((scheme, authority)) = text.split_once("://") else {
        return false;
    };
    matches!(scheme, "http" | "https")
        && !authority.is_empty()
        && !authority.contains(['/', '?', '#', '@', ' '])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Settings, String> {
        toml::from_str::<RawServe>(text)
            .map_err(|err| err.to_string())?
            .check()
            .map_err(|err| err.message)
    }

    #[test]
    fn defaults_and_keys() {
        let config = parse("").unwrap();
        assert_eq!(config, Settings::default());
        let hash = "a".repeat(64);
        let config = parse(&format!(
            "max_concurrent_requests = 8\n[keys]\nalice-app = {{ sha256 = \"{hash}\", scopes = [\"read\", \"write\"], users = [\"alice\"] }}"
        ))
        .unwrap();
        assert_eq!(config.max_concurrent_requests, 8);
        let key = &config.keys["alice-app"];
        assert_eq!(key.scopes, BTreeSet::from([Scope::Read, Scope::Write]));
        assert_eq!(
            key.users,
            Some(BTreeSet::from([UserId::new("alice").unwrap()]))
        );
        assert_eq!(key.personalities, None);
    }

    #[test]
    fn mistakes_are_named() {
        let hash = "b".repeat(64);
        for (text, expected) in [
            (
                "[keys]\nk = { sha256 = \"xyz\", scopes = [\"read\"] }",
                "not a SHA-256",
            ),
            (
                &format!("[keys]\nk = {{ sha256 = \"{hash}\", scopes = [] }}"),
                "scopes is empty",
            ),
            (
                &format!("[keys]\nk = {{ sha256 = \"{hash}\", scopes = [\"root\"] }}"),
                "unknown variant",
            ),
            (
                &format!(
                    "[keys]\na = {{ sha256 = \"{hash}\", scopes = [\"read\"] }}\nb = {{ sha256 = \"{hash}\", scopes = [\"read\"] }}"
                ),
                "hash of key \"a\" too",
            ),
            (
                &format!("[keys]\n\"a b\" = {{ sha256 = \"{hash}\", scopes = [\"read\"] }}"),
                "key name",
            ),
            (
                "cors_origins = [\"https://a.example/path\"]",
                "not an origin",
            ),
            ("request_timeout_ms = 0", "at least 1"),
            ("max_concurrent_requests = 0", "at least 1"),
            ("max_body_bytes = 0", "at least 1"),
            ("max_concurrent_requests = 100001", "the most is 100000"),
            (
                &format!("[keys]\ntoken = {{ sha256 = \"{hash}\", scopes = [\"read\"] }}"),
                "memory serve's own",
            ),
            ("unknown = 1", "unknown field"),
            (
                &format!(
                    "[keys]\nk = {{ sha256 = \"{hash}\", scopes = [\"read\"], users = [\"../x\"] }}"
                ),
                "invalid user id",
            ),
        ] {
            let err = parse(text).unwrap_err();
            assert!(err.contains(expected), "{text:?}: {err}");
        }
    }
}
