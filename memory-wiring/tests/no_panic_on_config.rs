//! Issue 19: `memory.toml` however wrong it is.
//!
//! The README's example and the configs of the wiring tests, mutated (lines dropped, duplicated
//! and swapped, values of the wrong type, unknown keys, `${UNSET}` variables, weird URLs, huge
//! and negative numbers, unicode), and arbitrary text, parsed with `Config::parse`: nothing may
//! panic, every error is a `Config` error whose message names the file and a line or a key, and
//! what parses holds together. A URL's password never shows in an error or a `Debug`.

mod common;

use memory_core::MemoryError;
use memory_wiring::{Config, ProviderConfig};
use proptest::prelude::*;
use proptest::sample::{Index, select};
use proptest::test_runner::{Config as RunConfig, RngSeed, TestCaseError, TestRunner};

use common::{FULL, ORIGIN, parse};

/// A variable no environment sets.
const UNSET: &str = "AGENT_MEMORY_FUZZ_SURELY_UNSET";

/// A fixed seed per test: the same cases on every run, so a failure reproduces.
fn run<S: Strategy>(
    cases: u32,
    seed: u64,
    strategy: S,
    test: impl Fn(S::Value) -> Result<(), TestCaseError>,
) {
    let mut runner = TestRunner::new(RunConfig {
        cases,
        rng_seed: RngSeed::Fixed(seed),
        failure_persistence: None,
        ..RunConfig::default()
    });
    if let Err(err) = runner.run(&strategy, test) {
        panic!("{err}");
    }
}

// ---------------------------------------------------------------------------------------------
// Seeds: the README's example and the configs of tests/config.rs.

/// Every ```toml block of the README.
fn readme_configs() -> Vec<String> {
    let readme = include_str!("../../README.md");
    readme
        .split("```toml\n")
        .skip(1)
        .filter_map(|block| block.find("```").map(|end| block[..end].to_owned()))
        .collect()
}

const SMALL: &[&str] = &[
    "",
    "[providers.only]\nkind = \"markdown\"\nroot = \"/m\"\n",
    "[providers.pg]\nkind = \"postgres\"\nurl = \"postgres://agent:hunter2@db/m?sslmode=require\"\nmax_connections = 4\nconnect_timeout_ms = 100\nlock_timeout_ms = 100\nmigrate = false\nmax_attempts = 3\n",
    "[providers.r]\nkind = \"redis\"\nurl = \"redis://:hunter2@cache:6379/0\"\nprefix = \"p\"\nresponse_timeout_ms = 10\n",
    "default_provider = \"a\"\n[providers.a]\nkind = \"redis\"\nurl = \"redis://x\"\n[providers.v]\nkind = \"vector\"\nsource = \"a\"\nindex_dir = \"idx\"\nort_library = \"/lib/libonnxruntime.so\"\nrecall = { k = 3, candidates = 9, vector_weight = 0.7, ann_index_rows = 10, catch_up_ms = 0 }\n",
    "[personalities.ada]\nmax_chars = 10\nmemory_scope = \"per-personality\"\ncaps.memory = { soft = 1, hard = 2 }\ncaps.user = { soft = 1 }\n",
    "[mcp]\npersonality = \"coder\"\nuser = \"ada\"\n",
];

fn seeds() -> Vec<String> {
    let mut seeds = readme_configs();
    assert!(!seeds.is_empty(), "the README has no toml block any more");
    // The README's secret, set and with a password, so that mutants get past it.
    let with_url: Vec<String> = seeds
        .iter()
        .map(|s| {
            s.replace(
                "${MEMORY_POSTGRES_URL}",
                "postgres://agent:hunter2@db:5432/m",
            )
        })
        .collect();
    seeds.extend(with_url);
    seeds.push(FULL.to_owned());
    seeds.extend(SMALL.iter().map(|s| (*s).to_owned()));
    seeds
}

// ---------------------------------------------------------------------------------------------
// Mutations.

const VALUES: &[&str] = &[
    "5",
    "0",
    "-1",
    "-9223372036854775808",
    "9223372036854775807",
    "18446744073709551616",
    "1e400",
    "-0.0",
    "nan",
    "inf",
    "true",
    "[]",
    "[1, \"a\"]",
    "{}",
    "{ soft = 1 }",
    "{ soft = -1, hard = 99999999999 }",
    "{ k = 0 }",
    "1979-05-27T07:32:00Z",
    "\"x\"",
    "\"\"",
    "\" \"",
    "\"${AGENT_MEMORY_FUZZ_SURELY_UNSET}\"",
    "\"a${AGENT_MEMORY_FUZZ_SURELY_UNSET}b\"",
    "\"${\"",
    "\"${}\"",
    "\"${HOME\"",
    "\"}${HOME}{\"",
    "\"${HOME}/x\"",
    "\"~/x\"",
    "\"~\"",
    "\"/\"",
    "\"..\"",
    "\"postgres://agent:hunter2@db:99999999/m\"",
    "\"postgres://[::1\"",
    "\"redis://:hunter2@\"",
    "\"redis+unix:///run/redis.sock?pass=hunter2\"",
    "\"mongodb://x\"",
    "\"日本🙂\"",
    "\"\\u0000\"",
    "\"a\\nb\"",
    "\"\\q\"",
    "'''multi\nline'''",
    "\"global\"",
    "\"per-personality\"",
    "\"Global\"",
    "\"files\"",
    "\"shared\"",
    "\"recall\"",
    "\"markdown\"",
    "\"postgres\"",
    "\"redis\"",
    "\"vector\"",
];

const KEYS: &[&str] = &[
    "kind",
    "root",
    "url",
    "schema",
    "prefix",
    "source",
    "index_dir",
    "model_dir",
    "ort_library",
    "recall",
    "recall.k",
    "provider",
    "memory_scope",
    "max_chars",
    "caps",
    "caps.memory",
    "caps.user.hard",
    "default_provider",
    "users_provider",
    "personality",
    "user",
    "max_connections",
    "max_attempts",
    "unknown_key",
    "rot",
    "\"quoted key\"",
    "\"日本\"",
    "a.b.c",
    "\"\"",
];

const LINES: &[&str] = &[
    "",
    "zzz = 1",
    "[unknown]",
    "[providers]",
    "[providers.x]",
    "[providers.\"a b\"]",
    "[providers.\"\"]",
    "[providers.日本]",
    "[[providers]]",
    "[personalities.ada]",
    "[personalities.\"../ada\"]",
    "[personalities.\"\"]",
    "[mcp]",
    "kind = \"vector\"",
    "kind = \"markdown\"",
    "source = \"files\"",
    "source = \"nowhere\"",
    "provider = \"nowhere\"",
    "memory_scope = \"global\"",
    "caps.memory = { soft = 10, hard = 5 }",
    "caps.user = { soft = 18446744073709551615 }",
    "max_chars = -1",
    "max_chars = 9223372036854775807",
    "default_provider = \"nowhere\"",
    "users_provider = \"files\"",
    "url = \"${AGENT_MEMORY_FUZZ_SURELY_UNSET}\"",
    "root = \"${\"",
    "# a comment 🙂",
    "key = \"unterminated",
    "= 1",
    "\u{feff}",
    "\u{0}",
    "\r",
];

/// One change to a config's text, always at char boundaries.
#[derive(Debug, Clone)]
enum Mutation {
    DropLine(Index),
    DuplicateLine(Index),
    SwapLines(Index, Index),
    SetValue(Index, &'static str),
    RenameKey(Index, &'static str),
    InsertLine(Index, &'static str),
    InsertText(Index, String),
    Truncate(Index),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let index = any::<Index>;
    prop_oneof![
        2 => index().prop_map(Mutation::DropLine),
        1 => index().prop_map(Mutation::DuplicateLine),
        1 => (index(), index()).prop_map(|(a, b)| Mutation::SwapLines(a, b)),
        4 => (index(), select(VALUES)).prop_map(|(i, v)| Mutation::SetValue(i, v)),
        2 => (index(), select(KEYS)).prop_map(|(i, k)| Mutation::RenameKey(i, k)),
        2 => (index(), select(LINES)).prop_map(|(i, l)| Mutation::InsertLine(i, l)),
        1 => (index(), any::<String>()).prop_map(|(i, t)| Mutation::InsertText(i, t)),
        1 => index().prop_map(Mutation::Truncate),
    ]
}

fn mutate(text: &str, mutation: &Mutation) -> String {
    let mut lines: Vec<String> = text.split('\n').map(str::to_owned).collect();
    let line = |i: &Index| i.index(lines.len());
    // Values and keys are changed on `key = value` lines, so that most mutants stay TOML and
    // reach the wiring's own checks.
    let pairs: Vec<usize> = (0..lines.len())
        .filter(|&n| {
            let line = lines[n].trim_start();
            line.contains('=') && !line.starts_with(['[', '#'])
        })
        .collect();
    let pair = |i: &Index| (!pairs.is_empty()).then(|| pairs[i.index(pairs.len())]);
    match mutation {
        Mutation::DropLine(i) => {
            let at = line(i);
            lines.remove(at);
        }
        Mutation::DuplicateLine(i) => {
            let at = line(i);
            lines.insert(at, lines[at].clone());
        }
        Mutation::SwapLines(a, b) => {
            let (a, b) = (line(a), line(b));
            lines.swap(a, b);
        }
        Mutation::SetValue(i, value) => {
            if let Some(at) = pair(i)
                && let Some((key, _)) = lines[at].split_once('=')
            {
                lines[at] = format!("{key}= {value}");
            }
        }
        Mutation::RenameKey(i, key) => {
            if let Some(at) = pair(i)
                && let Some((_, value)) = lines[at].split_once('=')
            {
                lines[at] = format!("{key} ={value}");
            }
        }
        Mutation::InsertLine(i, new) => {
            let at = i.index(lines.len() + 1);
            lines.insert(at, (*new).to_owned());
        }
        Mutation::InsertText(i, new) => {
            let joined = lines.join("\n");
            let at = char_boundary(&joined, i);
            return format!("{}{new}{}", &joined[..at], &joined[at..]);
        }
        Mutation::Truncate(i) => {
            let joined = lines.join("\n");
            let at = char_boundary(&joined, i);
            return joined[..at].to_owned();
        }
    }
    lines.join("\n")
}

fn char_boundary(text: &str, i: &Index) -> usize {
    let boundaries: Vec<usize> = text
        .char_indices()
        .map(|(at, _)| at)
        .chain([text.len()])
        .collect();
    boundaries[i.index(boundaries.len())]
}

fn config_text() -> impl Strategy<Value = String> {
    let mutations = prop_oneof![
        3 => prop::collection::vec(mutation(), 1..2),
        1 => prop::collection::vec(mutation(), 2..5),
    ];
    let mutated = (select(seeds()), mutations)
        .prop_map(|(seed, mutations)| mutations.iter().fold(seed, |t, m| mutate(&t, m)));
    prop_oneof![
        8 => mutated,
        1 => any::<String>(),
        // TOML-ish soup.
        1 => prop::collection::vec(
            prop_oneof![select(LINES), select(VALUES), select(KEYS), Just(" = "), Just("\n")],
            0..30,
        )
        .prop_map(|parts| parts.concat()),
    ]
}

// ---------------------------------------------------------------------------------------------
// The checks.

/// Words that name a place in the file when a message has no line.
const NAMED: &[&str] = &[
    "default_provider",
    "users_provider",
    "providers",
    "personalities",
    "mcp",
    "field",
    "key",
];

/// The error of `text`, if any, is a config error naming the file and a line (within the file)
/// or a key.
fn check_error(text: &str, err: &MemoryError) -> Result<(), TestCaseError> {
    let MemoryError::Config { message } = err else {
        return Err(TestCaseError::fail(format!(
            "not a config error: {err:?} for {text:?}"
        )));
    };
    prop_assert!(!message.trim().is_empty(), "empty message for {text:?}");
    let rest = message.strip_prefix(&format!("{ORIGIN}:"));
    prop_assert!(
        rest.is_some(),
        "{message:?} does not name the file, for {text:?}"
    );
    let rest = rest.unwrap_or_default();
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    if digits.is_empty() {
        prop_assert!(
            NAMED.iter().any(|word| rest.contains(word)),
            "{message:?} names neither a line nor a key, for {text:?}"
        );
    } else {
        let line: usize = digits.parse().unwrap_or(0);
        let lines = text.split('\n').count();
        prop_assert!(
            (1..=lines).contains(&line),
            "{message:?} names line {line} of a {lines}-line file {text:?}"
        );
        prop_assert!(
            rest[digits.len()..].starts_with(": ") && rest.len() > digits.len() + 2,
            "{message:?}"
        );
    }
    Ok(())
}

/// What parses holds together: every name it uses names a provider, caps are in order.
fn check_config(text: &str, config: &Config) -> Result<(), TestCaseError> {
    let known = |name: &str| config.providers.contains_key(name);
    prop_assert!(known(&config.default_provider), "{config:?} from {text:?}");
    prop_assert!(known(&config.users_provider), "{config:?} from {text:?}");
    for (id, personality) in &config.personalities {
        if let Some(provider) = &personality.provider {
            prop_assert!(known(provider), "{id}: {config:?} from {text:?}");
        }
        for caps in [personality.budgets.memory, personality.budgets.user] {
            if let (Some(soft), Some(hard)) = (caps.soft, caps.hard) {
                prop_assert!(soft <= hard, "{id}: {caps:?} from {text:?}");
            }
        }
    }
    for (name, provider) in &config.providers {
        if let ProviderConfig::Vector { source, .. } = provider {
            prop_assert!(
                matches!(
                    config.providers.get(source),
                    Some(p) if !matches!(p, ProviderConfig::Vector { .. })
                ),
                "{name} indexes {source:?}: {config:?} from {text:?}"
            );
        }
        if let ProviderConfig::Postgres(pg) = provider {
            prop_assert!(!pg.url.contains("${"), "unexpanded: {:?}", pg.url);
        }
        if let ProviderConfig::Redis(redis) = provider {
            prop_assert!(!redis.url.contains("${"), "unexpanded: {:?}", redis.url);
        }
    }
    check_debug(config, "hunter2")
}

/// The `Debug` of every provider configured by URL keeps `password` out of its URL. (Its
/// other strings are cleared first: a mutant may put the password in a schema or prefix.)
fn check_debug(config: &Config, password: &str) -> Result<(), TestCaseError> {
    for provider in config.providers.values() {
        let debug = match provider {
            ProviderConfig::Postgres(pg) => {
                let mut pg = pg.clone();
                pg.schema.clear();
                format!("{pg:?}")
            }
            ProviderConfig::Redis(redis) => {
                let mut redis = redis.clone();
                redis.prefix.clear();
                format!("{redis:?}")
            }
            _ => continue,
        };
        prop_assert!(!debug.contains(password), "a password in Debug: {debug}");
    }
    Ok(())
}

fn check(text: &str) -> Result<(), TestCaseError> {
    match parse(text) {
        Ok(config) => check_config(text, &config),
        Err(err) => check_error(text, &err),
    }
}

#[test]
fn mutated_configs_parse_or_name_the_line() {
    run(1500, 19, config_text(), |text| check(&text));
}

#[test]
fn every_seed_is_a_config_or_a_clear_error() {
    for seed in seeds() {
        if let Err(err) = check(&seed) {
            panic!("{err}");
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Passwords.

#[derive(Debug, Clone)]
struct Secret {
    kind: &'static str,
    url: String,
    password: String,
}

/// A URL with a password no config holds elsewhere, in the user info or a query parameter.
fn secret() -> impl Strategy<Value = Secret> {
    (
        select(&["postgres", "redis"][..]),
        select(
            &[
                "postgres",
                "postgresql",
                "redis",
                "rediss",
                "redis+unix",
                "unix",
            ][..],
        ),
        "[A-Za-z0-9]{6,12}",
        0u8..3,
    )
        .prop_map(|(kind, scheme, tail, form)| {
            let password = format!("Pw9{tail}");
            let url = match form {
                0 => format!("{scheme}://agent:{password}@db.example:5432/m"),
                1 => format!("{scheme}://:{password}@db.example/0"),
                _ => format!("{scheme}://db.example/m?sslmode=require&password={password}"),
            };
            Secret {
                kind,
                url,
                password,
            }
        })
}

/// What goes wrong around a URL with a password, as a provider table: every one of these must
/// be an error that keeps the password to itself.
#[derive(Debug, Clone, Copy)]
enum Defect {
    UnknownKeyBeside,
    WrongTypeBeside,
    NegativeBeside,
    UnsetVariableInUrl,
    DuplicateUrl,
    BadProviderName,
    UnknownKind,
    DanglingDefault,
    SyntaxErrorAfter,
    UnterminatedUrl,
    BadEscapeInUrl,
    UrlOnMarkdown,
    UrlInArray,
}

const DEFECTS: &[Defect] = &[
    Defect::UnknownKeyBeside,
    Defect::WrongTypeBeside,
    Defect::NegativeBeside,
    Defect::UnsetVariableInUrl,
    Defect::DuplicateUrl,
    Defect::BadProviderName,
    Defect::UnknownKind,
    Defect::DanglingDefault,
    Defect::SyntaxErrorAfter,
    Defect::UnterminatedUrl,
    Defect::BadEscapeInUrl,
    Defect::UrlOnMarkdown,
    Defect::UrlInArray,
];

fn with_defect(secret: &Secret, defect: Defect) -> String {
    let (kind, url) = (secret.kind, &secret.url);
    let table = |name: &str, body: &str| format!("[providers.{name}]\n{body}");
    match defect {
        Defect::UnknownKeyBeside => table(
            "p",
            &format!("kind = \"{kind}\"\nurl = \"{url}\"\npool = 3\n"),
        ),
        Defect::WrongTypeBeside => table(
            "p",
            &format!("kind = \"{kind}\"\nurl = \"{url}\"\nmax_attempts = \"many\"\n"),
        ),
        Defect::NegativeBeside => table(
            "p",
            &format!("kind = \"{kind}\"\nurl = \"{url}\"\nconnect_timeout_ms = -1\n"),
        ),
        Defect::UnsetVariableInUrl => table(
            "p",
            &format!("kind = \"{kind}\"\nurl = \"{url}${{{UNSET}}}\"\n"),
        ),
        Defect::DuplicateUrl => table(
            "p",
            &format!("kind = \"{kind}\"\nurl = \"{url}\"\nurl = \"{url}\"\n"),
        ),
        Defect::BadProviderName => {
            table("\"p q\"", &format!("kind = \"{kind}\"\nurl = \"{url}\"\n"))
        }
        Defect::UnknownKind => table("p", &format!("kind = \"{kind}s\"\nurl = \"{url}\"\n")),
        Defect::DanglingDefault => format!(
            "default_provider = \"q\"\n{}",
            table("p", &format!("kind = \"{kind}\"\nurl = \"{url}\"\n"))
        ),
        Defect::SyntaxErrorAfter => table(
            "p",
            &format!("kind = \"{kind}\"\nurl = \"{url}\"\nschema =\n"),
        ),
        Defect::UnterminatedUrl => table("p", &format!("kind = \"{kind}\"\nurl = \"{url}\n")),
        Defect::BadEscapeInUrl => table("p", &format!("kind = \"{kind}\"\nurl = \"{url}\\q\"\n")),
        Defect::UrlOnMarkdown => table(
            "p",
            &format!("kind = \"markdown\"\nroot = \"/m\"\nurl = \"{url}\"\n"),
        ),
        Defect::UrlInArray => table("p", &format!("kind = \"{kind}\"\nurl = [\"{url}\"]\n")),
    }
}

fn check_secret_kept(text: &str, password: &str) -> Result<(), TestCaseError> {
    match parse(text) {
        Ok(config) => {
            check_config(text, &config)?;
            check_debug(&config, password)?;
        }
        Err(err) => {
            check_error(text, &err)?;
            let message = err.to_string();
            prop_assert!(
                !message.contains(password),
                "the password {password:?} shows in {message:?}, from {text:?}"
            );
        }
    }
    Ok(())
}

#[test]
fn errors_about_a_url_never_show_its_password() {
    run(
        300,
        1919,
        (secret(), select(DEFECTS)),
        |(secret, defect)| {
            let text = with_defect(&secret, defect);
            prop_assert!(parse(&text).is_err(), "{defect:?} parsed: {text:?}");
            check_secret_kept(&text, &secret.password)
        },
    );
}

/// The README's example and the tests' configs, mutated, with a password in every URL: what
/// parses keeps it out of `Debug`, what fails keeps it out of the message.
#[test]
fn mutated_configs_with_passwords_never_show_them() {
    let strategy = (
        secret(),
        select(seeds()),
        prop::collection::vec(mutation(), 0..4),
    );
    run(600, 191919, strategy, |(secret, seed, mutations)| {
        let text = seed
            .replace("${MEMORY_POSTGRES_URL}", &secret.url)
            .replace("postgres://agent:${HOME}@db:5432/agents", &secret.url)
            .replace("postgres://agent:hunter2@db:5432/m", &secret.url);
        let text = mutations.iter().fold(text, |t, m| mutate(&t, m));
        // A mutation may move the URL under another key (`root`, `default_provider`): it is no
        // URL there, and messages quote names and paths. Only URLs under `url` are held to it.
        let under_url = text
            .lines()
            .filter(|line| line.contains(&secret.password))
            .all(|line| line.trim_start().starts_with("url ="));
        if under_url {
            check_secret_kept(&text, &secret.password)
        } else {
            check(&text)
        }
    });
}

/// `url = "postgres://agent:<password>@db/m${oops"`: the message about the unclosed `${` says
/// where it is, never quoting the value.
#[test]
fn an_unclosed_variable_in_a_url_does_not_show_its_password() {
    run(100, 19_019, secret(), |secret| {
        let text = format!(
            "[providers.p]\nkind = \"{}\"\nurl = \"{}${{oops\"\n",
            secret.kind, secret.url
        );
        check_secret_kept(&text, &secret.password)
    });
}

/// A URL written where a provider's name belongs (`default_provider`, `users_provider`, a
/// personality's `provider`, a vector provider's `source`): a plausible slip, and the message
/// that says the name names nothing must not quote the password along with it.
#[test]
fn a_url_given_as_a_provider_name_does_not_show_its_password() {
    let keys = select(&["default_provider", "users_provider", "provider", "source"][..]);
    run(100, 19_190, (secret(), keys), |(secret, key)| {
        let base = "[providers.files]\nkind = \"markdown\"\nroot = \"/m\"\n";
        let text = match key {
            "provider" => format!("{base}[personalities.ada]\nprovider = \"{}\"\n", secret.url),
            "source" => format!(
                "default_provider = \"files\"\n{base}[providers.recall]\nkind = \"vector\"\nsource = \"{}\"\n",
                secret.url
            ),
            _ => format!("{key} = \"{}\"\n{base}", secret.url),
        };
        prop_assert!(parse(&text).is_err(), "{text}");
        check_secret_kept(&text, &secret.password)
    });
}
