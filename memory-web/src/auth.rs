//! Who may call the service: API keys with scopes, each possibly restricted to some users and
//! personalities; or, on a loopback address with no keys configured, this machine only.

use std::collections::{BTreeSet, HashMap};
use std::net::SocketAddr;
use std::sync::Arc;

use crate::deployment::Deployment;
use crate::settings::{Scope, Settings};
use axum::extract::{FromRequestParts, Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use memory_core::raw::sha256_hex;
use memory_core::{DocumentId, MemoryError, MemoryScope, PersonalityId, UserId};

use crate::problem::Problem;

/// The environment variable `memory serve` reads its admin token from when `--token` is not
/// given.
pub const TOKEN_ENV: &str = "MEMORY_SERVE_TOKEN";

/// The shortest token accepted: long enough that guessing it over the network is hopeless.
pub const MIN_TOKEN_CHARS: usize = 16;

/// The name the `--token` key gets.
const TOKEN_KEY_NAME: &str = "token";

/// The prefix of keys `memory key new` mints, so a leaked one is recognisable in a scan.
const KEY_PREFIX: &str = "amk_";

/// A new API key: `amk_` and 256 random bits in hex.
///
/// # Errors
/// When the operating system has no randomness to give.
pub fn mint_key() -> Result<String, MemoryError> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|err| MemoryError::Config {
        message: format!("cannot get random bytes for a key: {err}"),
    })?;
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    Ok(format!("{KEY_PREFIX}{hex}"))
}

/// The SHA-256 of `key` in hex: what `memory.toml` stores. Keys are 256 random bits, so a
/// plain hash is as strong as a slow one and costs nothing per request.
pub fn key_sha256(key: &str) -> String {
    sha256_hex(key)
}

/// Who is calling, and what they may do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    /// The key's name in `memory.toml` (`token` for `--token`, `local` without keys): for
    /// logs, never the key.
    pub name: String,
    scopes: BTreeSet<Scope>,
    users: Option<BTreeSet<UserId>>,
    personalities: Option<BTreeSet<PersonalityId>>,
}

impl Principal {
    /// Anyone on this machine, when the server runs on loopback without keys: everything.
    fn local() -> Principal {
        Principal {
            name: "local".to_owned(),
            scopes: BTreeSet::from([Scope::Admin]),
            users: None,
            personalities: None,
        }
    }

    /// Whether it holds `scope` (admin holds every scope).
    pub fn has(&self, scope: Scope) -> bool {
        self.scopes.contains(&scope) || self.scopes.contains(&Scope::Admin)
    }

    /// Whether it is restricted to some users.
    pub fn restricts_users(&self) -> bool {
        self.users.is_some()
    }

    /// Whether it may read and write `user`'s profile.
    pub fn may_user(&self, user: &UserId) -> bool {
        self.users.as_ref().is_none_or(|users| users.contains(user))
    }

    /// Whether it may read and write `personality`'s memory.
    pub fn may_personality(&self, personality: &PersonalityId) -> bool {
        self.personalities
            .as_ref()
            .is_none_or(|personalities| personalities.contains(personality))
    }

    /// Whether it may read and write `document`: a profile of one of its users, the memory
    /// of one of its personalities, or the global `MEMORY.md` when it is unrestricted or one
    /// of its personalities has global scope in `deployment`; a note when it may the document
    /// the note's scope sits beside.
    pub fn may_document(&self, document: &DocumentId, deployment: &dyn Deployment) -> bool {
        match document {
            DocumentId::UserProfile { user } => self.may_user(user),
            DocumentId::PersonalityMemory { personality } => self.may_personality(personality),
            DocumentId::GlobalMemory => self.personalities.as_ref().is_none_or(|mine| {
                mine.iter().any(|personality| {
                    deployment.placement(personality).scope == MemoryScope::Global
                })
            }),
            // A note is as reachable as the document its scope sits beside.
            DocumentId::Note(note) => self.may_document(&note.scope.document(), deployment),
        }
    }

    /// [`Principal::may_document`] as a 403 that names the document and nothing about it: a
    /// key restricted to other users learns neither its text nor whether it exists.
    pub(crate) fn check_document(
        &self,
        document: &DocumentId,
        deployment: &dyn Deployment,
    ) -> Result<(), Problem> {
        if self.may_document(document, deployment) {
            return Ok(());
        }
        Err(Problem::forbidden(format!(
            "key {:?} may not read or write {}",
            self.name,
            document.relative_path()
        )))
    }

    /// [`Principal::may_personality`] as a 403 naming the personality.
    pub(crate) fn check_personality(&self, personality: &PersonalityId) -> Result<(), Problem> {
        if self.may_personality(personality) {
            return Ok(());
        }
        Err(Problem::forbidden(format!(
            "key {:?} may not read or write the memory of personality '{personality}'",
            self.name
        )))
    }

    /// Both documents of one conversation: the personality's memory and the user's profile.
    /// The one personality and one user this key is restricted to, if it is restricted to
    /// exactly one of each: whose memory a request that names none opens.
    pub(crate) fn only_pair(&self) -> Option<(PersonalityId, UserId)> {
        fn only<T: Clone + Ord>(set: Option<&BTreeSet<T>>) -> Option<T> {
            set.filter(|set| set.len() == 1)?.first().cloned()
        }
        Some((
            only(self.personalities.as_ref())?,
            only(self.users.as_ref())?,
        ))
    }

    pub(crate) fn check_pair(
        &self,
        personality: &PersonalityId,
        user: &UserId,
    ) -> Result<(), Problem> {
        self.check_personality(personality)?;
        if !self.may_user(user) {
            return Err(Problem::forbidden(format!(
                "key {:?} may not read or write the profile of user '{user}'",
                self.name
            )));
        }
        Ok(())
    }
}

/// The access rules of one server: its keys by hash, or this machine only.
#[derive(Clone)]
pub struct Access {
    keys: Arc<HashMap<String, Arc<Principal>>>,
    /// No keys, on loopback: every request from this machine is this principal, who may do
    /// everything, and requests must name a loopback host (a web page elsewhere pointing its
    /// domain at 127.0.0.1, DNS rebinding, is refused).
    local: Option<Arc<Principal>>,
}

/// Shows the key names, never their hashes.
impl std::fmt::Debug for Access {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut names: Vec<&str> = self.keys.values().map(|p| p.name.as_str()).collect();
        names.sort_unstable();
        f.debug_struct("Access")
            .field("keys", &names)
            .field("local_only", &self.local.is_some())
            .finish()
    }
}

impl Access {
    /// The rules for a server bound to `address` with the keys of `settings` and, if given, the
    /// admin `token` (`--token`) as one more key.
    ///
    /// Memory is personal, so a server on an address other machines can reach refuses to
    /// start without keys; on loopback without keys it serves this machine only.
    ///
    /// # Errors
    /// [`MemoryError::Config`] for a reachable address without keys, or a token shorter than
    /// [`MIN_TOKEN_CHARS`] or equal to a configured key.
    pub fn new(
        address: SocketAddr,
        settings: &Settings,
        token: Option<&str>,
    ) -> Result<Access, MemoryError> {
        let refuse = |message: String| Err(MemoryError::Config { message });
        let mut keys: HashMap<String, Arc<Principal>> = settings
            .keys
            .iter()
            .map(|(name, key)| {
                let principal = Principal {
                    name: name.clone(),
                    scopes: key.scopes.clone(),
                    users: key.users.clone(),
                    personalities: key.personalities.clone(),
                };
                (key.sha256.clone(), Arc::new(principal))
            })
            .collect();
        if let Some(token) = token {
            if token.chars().count() < MIN_TOKEN_CHARS {
                return refuse(format!(
                    "the token is {} chars; use at least {MIN_TOKEN_CHARS} random ones (memory key new makes one)",
                    token.chars().count()
                ));
            }
            let principal = Principal {
                name: TOKEN_KEY_NAME.to_owned(),
                ..Principal::local()
            };
            if keys
                .insert(key_sha256(token), Arc::new(principal))
                .is_some()
            {
                return refuse(
                    "the token is also a key in [serve.keys]; give --token a key of its own"
                        .to_owned(),
                );
            }
        }
        let loopback = address.ip().is_loopback();
        if keys.is_empty() && !loopback {
            return refuse(format!(
                "serving on {address} needs API keys: add them under [serve.keys] in memory.toml (`memory key new` prints a line), or pass --token (or set {TOKEN_ENV}); or bind 127.0.0.1"
            ));
        }
        Ok(Access {
            local: keys.is_empty().then(|| Arc::new(Principal::local())),
            keys: Arc::new(keys),
        })
    }

    /// The rules of a loopback server without keys: what tests and local use get.
    pub fn loopback() -> Access {
        Access {
            keys: Arc::new(HashMap::new()),
            local: Some(Arc::new(Principal::local())),
        }
    }

    /// Whether the server takes API keys (and so needs one on every API request).
    pub fn has_keys(&self) -> bool {
        self.local.is_none()
    }

    /// Who sent `headers`. Only a host that is not this machine (on a server without keys) is
    /// refused here, on every route; a missing or wrong key is refused by the routes that
    /// need one, so public ones (health, the OpenAPI document, the page) still answer.
    fn identify(&self, headers: &HeaderMap) -> Result<Caller, Problem> {
        if let Some(local) = &self.local {
            if !names_loopback(headers) {
                return Err(Problem::forbidden(
                    "this server answers only to localhost, 127.0.0.1 or [::1] in the Host header",
                ));
            }
            return Ok(Caller::Known(Arc::clone(local)));
        }
        let Some(value) = headers.get(header::AUTHORIZATION) else {
            return Ok(Caller::Anonymous);
        };
        let known = value
            .to_str()
            .ok()
            .and_then(|value| value.split_once(' '))
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .and_then(|(_, token)| self.keys.get(&key_sha256(token.trim())));
        Ok(match known {
            Some(principal) => Caller::Known(Arc::clone(principal)),
            None => Caller::WrongKey,
        })
    }
}

/// The caller of a request, as [`identify`] found it.
#[derive(Clone)]
pub(crate) enum Caller {
    /// A configured key, or anyone on this machine for a server without keys.
    Known(Arc<Principal>),
    /// No key was sent.
    Anonymous,
    /// A key was sent that is none of the configured ones.
    WrongKey,
}

impl Caller {
    /// Who it is, if known.
    pub(crate) fn principal(&self) -> Option<&Arc<Principal>> {
        match self {
            Caller::Known(principal) => Some(principal),
            Caller::Anonymous | Caller::WrongKey => None,
        }
    }
}

/// The key's name on a response, for the access log.
#[derive(Clone)]
pub(crate) struct KeyName(pub String);

/// The middleware finding who calls: the request carries a [`Caller`], its response the
/// key's [`KeyName`].
pub(crate) async fn identify(
    State(access): State<Access>,
    mut request: Request,
    next: Next,
) -> Response {
    let caller = match access.identify(request.headers()) {
        Ok(caller) => caller,
        Err(problem) => return problem.into_response(),
    };
    let name = caller.principal().map(|principal| principal.name.clone());
    request.extensions_mut().insert(caller);
    let mut response = next.run(request).await;
    if let Some(name) = name {
        response.extensions_mut().insert(KeyName(name));
    }
    response
}

/// A caller holding one scope, as a handler's first argument: a request without a key is
/// answered 401, a key without the scope 403.
macro_rules! scoped_caller {
    ($(#[$meta:meta])* $name:ident, $scope:expr) => {
        $(#[$meta])*
        pub(crate) struct $name(pub Arc<Principal>);

        impl<S: Send + Sync> FromRequestParts<S> for $name {
            type Rejection = Problem;

            async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Problem> {
                authorize(parts, $scope).map($name)
            }
        }

        impl std::ops::Deref for $name {
            type Target = Principal;

            fn deref(&self) -> &Principal {
                &self.0
            }
        }
    };
}

scoped_caller!(
    /// A caller with the `read` scope.
    Reader,
    Scope::Read
);
scoped_caller!(
    /// A caller with the `write` scope.
    Writer,
    Scope::Write
);
scoped_caller!(
    /// A caller with the `admin` scope.
    Admin,
    Scope::Admin
);
scoped_caller!(
    /// A caller with the `metrics` scope.
    MetricsReader,
    Scope::Metrics
);

fn authorize(parts: &Parts, scope: Scope) -> Result<Arc<Principal>, Problem> {
    let unauthorized = |detail: &str| {
        Problem::new(
            axum::http::StatusCode::UNAUTHORIZED,
            crate::problem::ProblemKind::Unauthorized,
            detail,
        )
    };
    let principal = match parts.extensions.get::<Caller>() {
        Some(Caller::Known(principal)) => Arc::clone(principal),
        Some(Caller::WrongKey) => {
            return Err(unauthorized(
                "the API key is not valid: send Authorization: Bearer <key> with a key configured under [serve.keys]",
            ));
        }
        Some(Caller::Anonymous) | None => {
            return Err(unauthorized(
                "this API needs a key: send Authorization: Bearer <key>",
            ));
        }
    };
    if !principal.has(scope) {
        return Err(Problem::forbidden(format!(
            "key {:?} lacks the {scope} scope this request needs",
            principal.name
        )));
    }
    Ok(principal)
}

/// Whether the `Host` header names this machine, and nothing else: `localhost` (any case, an
/// optional final dot), an IPv4 literal in 127.0.0.0/8, or `[::1]`, each with an optional
/// port from 1 to 65535. Anything else is refused, a malformed host included
/// (`localhost:80@evil.example`, `127.0.0.1:evil.example`, `[::1]evil.example`): a host this
/// check cannot read is not one it can vouch for.
fn names_loopback(headers: &HeaderMap) -> bool {
    let mut hosts = headers.get_all(header::HOST).iter();
    let (Some(host), None) = (hosts.next(), hosts.next()) else {
        // None, or several: RFC 9112 makes several a bad request.
        return false;
    };
    host.to_str().is_ok_and(is_loopback_host)
}

/// [`names_loopback`] on one `Host` value (RFC 9110 `uri-host [ ":" port ]`).
fn is_loopback_host(host: &str) -> bool {
    let (name, port) = match host.strip_prefix('[') {
        // An IP literal: `[` address `]`, then nothing or `:port`.
        Some(bracketed) => {
            let Some((address, rest)) = bracketed.split_once(']') else {
                return false;
            };
            let port = match rest {
                "" => None,
                rest => match rest.strip_prefix(':') {
                    Some(port) => Some(port),
                    None => return false,
                },
            };
            let loopback = address
                .parse::<std::net::Ipv6Addr>()
                .is_ok_and(|address| address.is_loopback());
            if !loopback {
                return false;
            }
            (None, port)
        }
        None => match host.split_once(':') {
            Some((name, port)) => (Some(name), Some(port)),
            None => (Some(host), None),
        },
    };
    if let Some(port) = port {
        // Digits only (`str::parse` would take a `+`), 1 to 65535.
        let digits =
            !port.is_empty() && port.len() <= 5 && port.bytes().all(|b| b.is_ascii_digit());
        if !digits || !port.parse::<u16>().is_ok_and(|port| port != 0) {
            return false;
        }
    }
    let Some(name) = name else {
        return true;
    };
    // A dotted-quad literal, as std reads one (four decimal octets, no leading zeros).
    if let Ok(address) = name.parse::<std::net::Ipv4Addr>() {
        return address.is_loopback();
    }
    // Host names compare without case, and a fully qualified one may end with a dot.
    let name = name.strip_suffix('.').unwrap_or(name);
    name.eq_ignore_ascii_case("localhost")
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use crate::settings::ApiKey;

    use super::*;

    fn address(text: &str) -> SocketAddr {
        text.parse().unwrap()
    }

    /// A key for [`serve_with`]: name, key, scopes, users it is restricted to.
    type TestKey<'a> = (&'a str, &'a str, &'a [Scope], Option<&'a [&'a str]>);

    fn serve_with(keys: &[TestKey<'_>]) -> Settings {
        let keys: BTreeMap<String, ApiKey> = keys
            .iter()
            .map(|(name, key, scopes, users)| {
                let key = ApiKey {
                    sha256: key_sha256(key),
                    scopes: scopes.iter().copied().collect(),
                    users: users
                        .map(|users| users.iter().map(|u| UserId::new(*u).unwrap()).collect()),
                    personalities: None,
                };
                ((*name).to_owned(), key)
            })
            .collect();
        Settings {
            keys,
            ..Settings::default()
        }
    }

    fn bearer(token: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::AUTHORIZATION,
            format!("Bearer {token}").parse().unwrap(),
        );
        headers
    }

    #[test]
    fn reachable_addresses_need_keys_and_loopback_without_keys_is_local() {
        let none = Settings::default();
        let err = Access::new(address("0.0.0.0:1"), &none, None).unwrap_err();
        assert!(err.to_string().contains("[serve.keys]"), "{err}");
        assert!(err.to_string().contains(TOKEN_ENV), "{err}");
        let short = Access::new(address("0.0.0.0:1"), &none, Some("secret")).unwrap_err();
        assert!(short.to_string().contains("6 chars"), "{short}");
        let token = "x".repeat(16);
        let remote = Access::new(address("0.0.0.0:1"), &none, Some(&token)).unwrap();
        assert!(remote.has_keys());
        let principal = Arc::clone(
            remote
                .identify(&bearer(&token))
                .unwrap()
                .principal()
                .unwrap(),
        );
        assert_eq!(principal.name, "token");
        assert!(Scope::ALL.into_iter().all(|scope| principal.has(scope)));
        let local = Access::new(address("127.0.0.1:1"), &none, None).unwrap();
        assert!(!local.has_keys());
        let with_keys = serve_with(&[("k", "key-1", &[Scope::Read], None)]);
        assert!(Access::new(address("10.0.0.1:1"), &with_keys, None).is_ok());
    }

    #[test]
    fn keys_are_found_by_hash_and_others_refused() {
        let serve = serve_with(&[
            ("reader", "key-r", &[Scope::Read], Some(&["alice"])),
            ("writer", "key-w", &[Scope::Read, Scope::Write], None),
        ]);
        let access = Access::new(address("0.0.0.0:1"), &serve, None).unwrap();
        let reader = Arc::clone(
            access
                .identify(&bearer("key-r"))
                .unwrap()
                .principal()
                .unwrap(),
        );
        assert_eq!(reader.name, "reader");
        assert!(reader.has(Scope::Read) && !reader.has(Scope::Write));
        assert!(reader.may_user(&UserId::new("alice").unwrap()));
        assert!(!reader.may_user(&UserId::new("bob").unwrap()));
        assert!(matches!(
            access.identify(&HeaderMap::new()).unwrap(),
            Caller::Anonymous
        ));
        for bad in ["Bearer nope", "Basic a2V5LXI=", "key-r"] {
            let mut headers = HeaderMap::new();
            headers.insert(header::AUTHORIZATION, bad.parse().unwrap());
            assert!(
                matches!(access.identify(&headers).unwrap(), Caller::WrongKey),
                "{bad}"
            );
        }
        let lower = {
            let mut headers = HeaderMap::new();
            headers.insert(header::AUTHORIZATION, "bearer key-w".parse().unwrap());
            headers
        };
        assert_eq!(
            access.identify(&lower).unwrap().principal().unwrap().name,
            "writer"
        );
    }

    #[test]
    fn host_names_are_parsed_with_and_without_ports() {
        for (host, loopback) in [
            ("localhost:8700", true),
            ("localhost", true),
            ("127.0.0.1", true),
            ("127.0.0.1:8700", true),
            ("127.1.2.3:65535", true),
            ("[::1]:8700", true),
            ("[::1]", true),
            ("[0:0:0:0:0:0:0:1]:1", true),
            ("LOCALHOST:8700", true),
            ("localhost.:8700", true),
            ("localhost.evil.example", false),
            ("evil.example:8700", false),
            ("127.0.0.1.nip.io", false),
            ("localhost..", false),
            // Malformed: userinfo, a name for a port, text after the brackets.
            ("localhost:80@evil.example", false),
            ("127.0.0.1:evil.example", false),
            ("[::1]evil.example", false),
            ("[::1]:evil.example", false),
            ("[::1", false),
            ("[localhost]:80", false),
            ("[::2]:80", false),
            ("[::ffff:127.0.0.1]", false),
            // Ports: 1 to 65535, digits only.
            ("localhost:", false),
            ("localhost:0", false),
            ("localhost:65536", false),
            ("localhost:+80", false),
            ("localhost:80:80", false),
            ("localhost:080800", false),
            ("[::1]:0", false),
            // Not loopback, or not a literal std reads as one.
            ("128.0.0.1", false),
            ("127.0.0.1.", false),
            ("0127.0.0.1", false),
            ("127.1", false),
            ("", false),
            ("local host", false),
        ] {
            let mut headers = HeaderMap::new();
            headers.insert(header::HOST, host.parse().unwrap());
            assert_eq!(names_loopback(&headers), loopback, "{host}");
        }
        assert!(!names_loopback(&HeaderMap::new()));
        let mut twice = HeaderMap::new();
        twice.append(header::HOST, "localhost".parse().unwrap());
        twice.append(header::HOST, "localhost".parse().unwrap());
        assert!(!names_loopback(&twice), "two Host headers");
    }

    #[test]
    fn minted_keys_are_random_and_hash_to_hex() {
        let (a, b) = (mint_key().unwrap(), mint_key().unwrap());
        assert_ne!(a, b);
        assert!(
            a.starts_with(KEY_PREFIX) && a.len() == KEY_PREFIX.len() + 64,
            "{a}"
        );
        assert_eq!(key_sha256(&a).len(), 64);
    }
}
