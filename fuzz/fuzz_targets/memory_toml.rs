//! `memory.toml`, as `Config::parse` reads it: whatever an operator wrote.
//!
//! Built with the postgres and redis provider kinds, not recall (lancedb): a `kind = "vector"`
//! table is refused naming the feature, so the fields of vector tables are not reached here.
//!
//! Beyond not panicking (the checks of memory-wiring's no_panic_on_config test):
//! - a refusal is a `Config` error whose message starts with the file's name and then names a
//!   line within the file (`memory.toml:7: ...`) or a key;
//! - what parses holds together: every provider name it uses names a provider, soft caps are
//!   not over hard caps, no `${VAR}` is left in a URL;
//! - a password written in a URL's user info (`postgres://agent:<password>@...`) never shows,
//!   neither in an error nor in the `Debug` of what parsed;
//! - `[serve]`, which `memory` checks on every command with `ServeTable::settings` (memory-web's
//!   `Settings::from_toml`, through the wiring's `serve` feature),
//!   is refused the same way: a `Config` error naming the file and a line or a key.

#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use memory_core::MemoryError;
use memory_wiring::{Config, ProviderConfig};


const ORIGIN: &str = "/etc/agent/memory.toml";

/// The password of the seeds' URLs.
const PASSWORD: &str = "hunter2";

/// Words that name a place in the file when a message has no line.
const NAMED: &[&str] = &[
    "default_provider",
    "users_provider",
    "providers",
    "personalities",
    "mcp",
    "serve",
    "field",
    "key",
];

fuzz_target!(|data: &[u8]| {
    // The file is read as UTF-8 first (`read_to_string`), so the parser only sees text.
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let secret = password_only_in_urls(text);
    match Config::parse(text, Path::new(ORIGIN)) {
        Ok(config) => {
            check_config(text, &config, secret);
            if let Err(err) = config.serve.settings() {
                check_error(text, &err, secret);
            }
        }
        Err(err) => check_error(text, &err, secret),
    }
});

/// Whether every `hunter2` in `text` is inside the password of a URL given as `url = "..."`,
/// and there is at least one: then no message and no `Debug` may show it. (Elsewhere, in a
/// user name, a path or a provider's name, it is no secret; and an escape such as `\u0068`
/// could spell it where the text does not.)
fn password_only_in_urls(text: &str) -> bool {
    if !text.contains(PASSWORD) || text.contains('\\') {
        return false;
    }
    text.lines()
        .filter(|line| line.contains(PASSWORD))
        .all(|line| {
            let Some(url) = line
                .trim()
                .strip_prefix("url = \"")
                .and_then(|rest| rest.strip_suffix('"'))
            else {
                return false;
            };
            let Some((scheme, rest)) = url.split_once("://") else {
                return false;
            };
            let Some((userinfo, host)) = rest.rsplit_once('@') else {
                return false;
            };
            let Some((user, password)) = userinfo.split_once(':') else {
                return false;
            };
            password.contains(PASSWORD)
                && ![scheme, user, host].iter().any(|part| part.contains(PASSWORD))
                // A `#` or `?` or `/` in the user info ends it for a URL parser: what follows
                // is no password to it.
                && !userinfo.contains(['#', '?', '/'])
        })
}

/// The error is a config error naming the file and a line (within the file) or a key.
fn check_error(text: &str, err: &MemoryError, secret: bool) {
    let MemoryError::Config { message } = err else {
        panic!("not a config error: {err:?}");
    };
    assert!(!message.trim().is_empty(), "an empty message");
    let rest = message
        .strip_prefix(&format!("{ORIGIN}:"))
        .unwrap_or_else(|| panic!("{message:?} does not name the file"));
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    if digits.is_empty() {
        assert!(
            NAMED.iter().any(|word| rest.contains(word)),
            "{message:?} names neither a line nor a key"
        );
    } else {
        let line: usize = digits.parse().unwrap_or(0);
        let lines = text.split('\n').count();
        assert!(
            (1..=lines).contains(&line),
            "{message:?} names line {line} of a {lines}-line file"
        );
        assert!(
            rest[digits.len()..].starts_with(": ") && rest.len() > digits.len() + 2,
            "{message:?}"
        );
    }
    if secret {
        assert!(
            !message.contains(PASSWORD),
            "a URL's password shows in {message:?}"
        );
    }
}

/// What parses holds together, and keeps passwords out of its `Debug`.
fn check_config(text: &str, config: &Config, secret: bool) {
    let known = |name: &str| config.providers.contains_key(name);
    assert!(known(&config.default_provider), "{config:?}");
    assert!(known(&config.users_provider), "{config:?}");
    for (id, personality) in &config.personalities {
        if let Some(provider) = &personality.provider {
            assert!(known(provider), "{id}: {config:?}");
        }
        for caps in [personality.budgets.memory, personality.budgets.user] {
            if let (Some(soft), Some(hard)) = (caps.soft, caps.hard) {
                assert!(soft <= hard, "{id}: {caps:?}");
            }
        }
    }
    for provider in config.providers.values() {
        let debug = match provider {
            ProviderConfig::Postgres(pg) => {
                assert!(!pg.url.contains("${"), "unexpanded: {:?}", pg.url);
                // Its other strings are cleared first: they are no secret.
                let mut pg = pg.clone();
                pg.schema.clear();
                format!("{pg:?}")
            }
            ProviderConfig::Redis(redis) => {
                assert!(!redis.url.contains("${"), "unexpanded: {:?}", redis.url);
                let mut redis = redis.clone();
                redis.prefix.clear();
                format!("{redis:?}")
            }
            ProviderConfig::Markdown(_) => continue,
        };
        if secret {
            assert!(
                !debug.contains(PASSWORD),
                "a password in Debug: {debug} from {text:?}"
            );
        }
    }
    if secret {
        let debug = format!("{config:?}");
        assert!(!debug.contains(PASSWORD), "a password in Debug: {debug}");
    }
}
