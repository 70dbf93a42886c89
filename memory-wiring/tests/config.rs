//! `memory.toml` parsing: what it accepts, and errors that name the line.

mod common;

use std::path::Path;

use memory_core::{Budgets, Caps, MemoryError, MemoryScope, PersonalityId};
use memory_vector::ModelName;
use memory_wiring::{Config, McpConfig, PersonalityConfig, ProviderConfig};

use common::{FULL, config_error as error, parse};

#[test]
fn a_full_config_parses_with_paths_and_secrets_resolved() {
    // Any variable set in the environment stands in for a secret.
    let home = std::env::var("HOME").unwrap();
    let config = parse(FULL).unwrap();
    assert_eq!(config.default_provider, "files");
    assert_eq!(config.users_provider, "shared");
    let ProviderConfig::Markdown(md) = &config.providers["files"] else {
        panic!("files is markdown")
    };
    assert_eq!(md.root, Path::new("/etc/agent/memory"));
    let ProviderConfig::Postgres(pg) = &config.providers["shared"] else {
        panic!("shared is postgres")
    };
    assert_eq!(pg.url, format!("postgres://agent:{home}@db:5432/agents"));
    assert_eq!(pg.schema, "team_a");
    let ProviderConfig::Vector {
        source,
        index_dir,
        model,
        recall,
    } = &config.providers["recall"]
    else {
        panic!("recall is vector")
    };
    assert_eq!(source, "files");
    assert_eq!(index_dir, Path::new("/etc/agent/memory/.recall-index"));
    assert!(model.model_dir.ends_with("models/e5") && model.model_dir.is_absolute());
    // No `model`: the default one.
    assert_eq!(model.name, ModelName::E5Small);
    assert_eq!(recall.k, 4);

    let ada = PersonalityId::new("ada").unwrap();
    assert_eq!(
        config.personality(&ada),
        PersonalityConfig {
            provider: Some("recall".into()),
            memory_scope: MemoryScope::PerPersonality,
            budgets: Budgets {
                memory: Caps {
                    soft: Some(2048),
                    hard: Some(4096)
                },
                user: Caps::default(),
                ..Budgets::default()
            },
            max_chars: 4000,
        }
    );
    let concierge = PersonalityId::new("concierge").unwrap();
    assert_eq!(
        config.personality(&concierge).memory_scope,
        MemoryScope::Global
    );
    assert_eq!(config.provider_of(&concierge), "shared");
    let stranger = PersonalityId::new("stranger").unwrap();
    assert_eq!(config.provider_of(&stranger), "files");
    assert_eq!(config.personality(&stranger), PersonalityConfig::default());
}

#[test]
fn an_empty_file_is_the_markdown_default_and_one_provider_is_the_default() {
    let config = parse("").unwrap();
    assert_eq!(config.default_provider, "markdown");
    assert!(matches!(
        config.providers["markdown"],
        ProviderConfig::Markdown(_)
    ));

    let config = parse("[providers.only]\nkind = \"markdown\"\nroot = \"/m\"\n").unwrap();
    assert_eq!(config.default_provider, "only");
}

#[test]
fn unknown_keys_are_errors_naming_the_line() {
    let message = error("[providers.files]\nkind = \"markdown\"\nroot = \"/m\"\nrot = \"/x\"\n");
    assert!(
        message.starts_with("/etc/agent/memory.toml:4: providers.files.rot: unknown field `rot`"),
        "{message}"
    );

    let message = error("[personalities.ada]\nmax_chars = 10\nmemory_scop = \"global\"\n");
    assert!(
        message.starts_with("/etc/agent/memory.toml:3:"),
        "{message}"
    );
    assert!(message.contains("memory_scop"), "{message}");

    let message = error("defaut_provider = \"x\"\n");
    assert!(
        message.starts_with("/etc/agent/memory.toml:1:"),
        "{message}"
    );

    let message = error("[providers.pg]\nkind = \"postgres\"\nurl = \"postgres://x\"\npool = 3\n");
    assert!(
        message.starts_with("/etc/agent/memory.toml:4: providers.pg.pool: unknown field `pool`"),
        "{message}"
    );

    let message = error("[providers.x]\nkind = \"mongodb\"\n");
    assert!(message.contains("mongodb"), "{message}");
}

/// A mistake inside a provider table (read through its `kind`, which serde reports at the
/// whole table) names the line and the field it is in; one that is no field's, such as a
/// field left out, names the table's.
#[test]
fn a_mistake_in_a_provider_field_names_its_line() {
    for (text, starts) in [
        (
            "[providers.pg]\nkind = \"postgres\"\nurl = \"postgres://agent:hunter2@db/m\"\n\ndeadline_ms = \"ten\"\n",
            "/etc/agent/memory.toml:5: providers.pg.deadline_ms: invalid type: string \"ten\", expected u64",
        ),
        (
            "[providers.pg]\nkind = \"postgres\"\npool_mode = \"statement\"\nurl = \"postgres://db/m\"\n",
            "/etc/agent/memory.toml:3: providers.pg.pool_mode: unknown variant `statement`, expected `session` or `transaction`",
        ),
        (
            "[providers]\nfast = { kind = \"redis\", url = \"redis://h\", prefix = 7 }\n",
            "/etc/agent/memory.toml:2: providers.fast.prefix: invalid type: integer `7`",
        ),
        (
            "[providers.files]\nkind = \"markdown\"\nroot = \"m\"\nhistory = { keep = -1 }\n",
            "/etc/agent/memory.toml:4: providers.files.history: ",
        ),
        (
            "[providers.files]\nkind = \"markdown\"\nroot = \"m\"\n[providers.recall]\nkind = \"vector\"\nsource = \"files\"\nmodel_dir = 3\n",
            "/etc/agent/memory.toml:7: providers.recall.model_dir: invalid type: integer `3`",
        ),
        (
            "[providers.files]\nkind = \"markdown\"\nroot = \"m\"\n[providers.recall]\nkind = \"vector\"\nsource = \"files\"\nmodel = \"e5\"\n",
            "/etc/agent/memory.toml:7: providers.recall.model: unknown variant `e5`, expected `multilingual-e5-small` or `all-MiniLM-L6-v2`",
        ),
        (
            "[providers.pg]\nkind = \"postgres\"\nschema = \"s\"\n",
            "/etc/agent/memory.toml:1: missing field `url`",
        ),
    ] {
        let message = error(text);
        assert!(message.starts_with(starts), "{text}\n{message}");
        assert!(!message.contains("hunter2"), "{message}");
    }
}

#[test]
fn dangling_provider_names_are_errors_naming_the_line() {
    let base = "[providers.files]\nkind = \"markdown\"\nroot = \"/m\"\n\n";
    let message = error(&format!("{base}[personalities.ada]\nprovider = \"nope\"\n"));
    assert!(
        message.starts_with("/etc/agent/memory.toml:6:"),
        "{message}"
    );
    assert!(
        message.contains("\"nope\"") && message.contains("configured: files"),
        "{message}"
    );

    let message = error(&format!("default_provider = \"gone\"\n{base}"));
    assert!(
        message.starts_with("/etc/agent/memory.toml:1:"),
        "{message}"
    );

    // The line of `source = ...` (7), not the table's header (5).
    let message = error(&format!(
        "{base}[providers.recall]\nkind = \"vector\"\nsource = \"missing\"\n"
    ));
    assert!(
        message.starts_with("/etc/agent/memory.toml:7:"),
        "{message}"
    );
    assert!(message.contains("providers.recall.source"), "{message}");

    let message = error(&format!(
        "{base}[providers.r1]\nkind = \"vector\"\nsource = \"files\"\n\n[providers.r2]\nkind = \"vector\"\nsource = \"r1\"\n"
    ));
    assert!(
        message.starts_with("/etc/agent/memory.toml:11:"),
        "{message}"
    );
    assert!(message.contains("another vector provider"), "{message}");
}

#[test]
fn other_mistakes_name_the_line_too() {
    // The line of the mistake, `url = "${...}"` (3), not the table's header (1).
    let message =
        error("[providers.pg]\nkind = \"postgres\"\nurl = \"${WIRING_TEST_SURELY_UNSET}\"\n");
    assert!(
        message.starts_with("/etc/agent/memory.toml:3:"),
        "{message}"
    );
    assert!(
        message.contains("WIRING_TEST_SURELY_UNSET is not set"),
        "{message}"
    );
    // In a path, and in a provider written as an inline table.
    let message = error(
        "[providers.files]\nkind = \"markdown\"\n# where the files live\nroot = \"${WIRING_TEST_SURELY_UNSET}/m\"\n",
    );
    assert!(
        message.starts_with("/etc/agent/memory.toml:4:")
            && message.contains("providers.files.root"),
        "{message}"
    );
    let message = error(
        "[providers]\n\ncache = { kind = \"redis\", url = \"${WIRING_TEST_SURELY_UNSET}\" }\n",
    );
    assert!(
        message.starts_with("/etc/agent/memory.toml:3:") && message.contains("providers.cache.url"),
        "{message}"
    );

    let message = error("[personalities.ada]\ncaps.memory = { soft = 10, hard = 5 }\n");
    assert!(
        message.starts_with("/etc/agent/memory.toml:2:"),
        "{message}"
    );
    assert!(
        message.contains("soft cap 10 is over hard cap 5"),
        "{message}"
    );

    let message = error("[personalities.\"../ada\"]\nmax_chars = 1\n");
    assert!(message.contains("invalid personality id"), "{message}");

    let message = error("[providers.\"a b\"]\nkind = \"markdown\"\nroot = \"/m\"\n");
    assert!(message.contains("provider name \"a b\""), "{message}");

    let message = error(
        "default_provider = \"a\"\n[providers.a]\nkind = \"redis\"\nurl = \"redis://x\"\n[providers.v]\nkind = \"vector\"\nsource = \"a\"\n",
    );
    assert!(
        message.contains("providers.v.index_dir is required"),
        "{message}"
    );

    let message = error(
        "[providers.a]\nkind = \"markdown\"\nroot = \"/a\"\n[providers.b]\nkind = \"markdown\"\nroot = \"/b\"\n",
    );
    assert!(
        message.contains("default_provider is required"),
        "{message}"
    );
}

#[test]
fn an_unreadable_file_is_a_config_error_naming_it() {
    let err = Config::from_file(Path::new("/nonexistent/memory.toml")).unwrap_err();
    assert!(
        matches!(&err, MemoryError::Config { message } if message.contains("/nonexistent/memory.toml")),
        "{err}"
    );
}

#[test]
fn the_mcp_table_names_who_memory_mcp_serves() {
    let config = parse("[mcp]\npersonality = \"coder\"\nuser = \"ada\"\n").unwrap();
    assert_eq!(
        config.mcp.personality,
        Some(PersonalityId::new("coder").unwrap())
    );
    assert_eq!(
        config.mcp.user,
        Some(memory_core::UserId::new("ada").unwrap())
    );
    assert_eq!(parse("").unwrap().mcp, McpConfig::default());

    let message = error("[mcp]\npersonality = \"coder\"\nagent = \"x\"\n");
    assert!(
        message.starts_with("/etc/agent/memory.toml:3:"),
        "{message}"
    );
    assert!(message.contains("unknown field `agent`"), "{message}");
    let message = error("[mcp]\nuser = \"ada lovelace\"\n");
    assert!(
        message.starts_with("/etc/agent/memory.toml:2:"),
        "{message}"
    );
    assert!(message.contains("user id"), "{message}");
}

#[test]
fn a_url_written_where_a_kind_belongs_is_not_echoed_with_its_password() {
    let text = "[providers.shared]\nkind = \"postgres://agent:Secret123@db.example/m\"\n";
    let err = Config::parse(text, Path::new("/etc/agent/memory.toml")).unwrap_err();
    let message = err.to_string();
    assert!(!message.contains("Secret123"), "{message}");
    assert!(
        message.contains("unknown variant"),
        "still says what is wrong: {message}"
    );
    assert!(message.contains("/etc/agent/memory.toml:2"), "{message}");
}

#[test]
fn history_retention_is_set_per_provider() {
    use memory_core::Retention;
    use std::time::Duration;
    let config = parse(
        r#"
        default_provider = "files"
        [providers.files]
        kind = "markdown"
        root = "m"
        history = { keep = 3, max_age_days = 2 }
        [providers.shared]
        kind = "postgres"
        url = "postgres://db/agents"
        history = { keep = 0 }
        [providers.fast]
        kind = "redis"
        url = "redis://127.0.0.1"
        "#,
    )
    .unwrap();
    let ProviderConfig::Markdown(md) = &config.providers["files"] else {
        panic!("files is markdown")
    };
    let two_days = Duration::from_secs(2 * 86_400);
    assert_eq!(md.history, Retention::keep(3).with_max_age(two_days));
    let ProviderConfig::Postgres(pg) = &config.providers["shared"] else {
        panic!("shared is postgres")
    };
    assert_eq!(pg.history, Retention::OFF);
    let ProviderConfig::Redis(redis) = &config.providers["fast"] else {
        panic!("fast is redis")
    };
    assert_eq!(
        redis.history,
        Retention::default(),
        "100 revisions unless set"
    );

    let message =
        error("[providers.files]\nkind = \"markdown\"\nroot = \"m\"\nhistory = { kept = 3 }\n");
    assert!(
        message.contains("unknown field `kept`") && message.contains("max_age_days"),
        "{message}"
    );
}

#[test]
fn each_provider_says_its_kind() {
    let config = parse(FULL).unwrap();
    let kinds: Vec<(&str, &str)> = config
        .providers
        .iter()
        .map(|(name, provider)| (name.as_str(), provider.kind()))
        .collect();
    assert_eq!(
        kinds,
        [
            ("fast", "redis"),
            ("files", "markdown"),
            ("recall", "vector"),
            ("shared", "postgres")
        ]
    );
}

/// Where each document lives, and what each personality reads it through: a personality's
/// MEMORY.md in its own provider, every USER.md (and the global MEMORY.md) in the users
/// provider, read through a recall provider over it where the personality has one.
#[test]
fn each_document_has_one_home_read_through_the_personalitys_provider() {
    let config = parse(FULL).unwrap();
    let ada: PersonalityId = "ada".parse().unwrap();
    let bob: PersonalityId = "bob".parse().unwrap();
    let concierge: PersonalityId = "concierge".parse().unwrap();
    let user = memory_core::DocumentId::UserProfile {
        user: "grace".parse().unwrap(),
    };
    let memory_of = |personality: &PersonalityId| memory_core::DocumentId::PersonalityMemory {
        personality: personality.clone(),
    };
    assert_eq!(config.storage_of("recall"), "files");
    assert_eq!(config.storage_of("shared"), "shared");
    assert_eq!(config.storage_of("nothing"), "nothing");
    assert_eq!(config.home_of(&memory_of(&ada)), "recall");
    assert_eq!(config.home_of(&memory_of(&bob)), "files");
    assert_eq!(config.home_of(&user), "shared");
    assert_eq!(
        config.home_of(&memory_core::DocumentId::GlobalMemory),
        "shared"
    );
    // Ada's MEMORY.md through her recall provider; her USER.md lives in "shared", which her
    // provider does not store: read there.
    assert_eq!(config.provider_for(&ada, &memory_of(&ada)), "recall");
    assert_eq!(config.provider_for(&ada, &user), "shared");
    assert_eq!(config.provider_for(&concierge, &user), "shared");
    // With the users provider under recall too, USER.md is read through it.
    let config = parse(
        "users_provider = \"files\"\ndefault_provider = \"files\"\n\
         [providers.files]\nkind = \"markdown\"\nroot = \"/m\"\n\
         [providers.recall]\nkind = \"vector\"\nsource = \"files\"\n\
         [personalities.ada]\nprovider = \"recall\"\n",
    )
    .unwrap();
    assert_eq!(config.provider_for(&ada, &user), "recall");
    assert_eq!(config.provider_for(&bob, &user), "files");
}

#[test]
fn a_soft_cap_equal_to_the_hard_cap_is_fine() {
    let config = parse(
        "[providers.files]\nkind = \"markdown\"\nroot = \"/m\"\n\n[personalities.ada]\ncaps.memory = { soft = 100, hard = 100 }\n",
    )
    .unwrap();
    let ada = config.personality(&"ada".parse().unwrap());
    assert_eq!(ada.budgets.memory.soft, Some(100));
}

/// The built-in default's root: `$MEMORY_ROOT`, else `~/.agent-memory`, never an empty path.
#[test]
fn the_default_memory_lives_at_memory_root_or_in_the_home_directory() {
    let config = parse("").unwrap();
    let ProviderConfig::Markdown(md) = &config.providers["markdown"] else {
        panic!("the default is markdown")
    };
    let expected = match std::env::var_os("MEMORY_ROOT") {
        Some(root) => std::path::PathBuf::from(root),
        None => std::path::PathBuf::from(std::env::var_os("HOME").unwrap()).join(".agent-memory"),
    };
    assert_eq!(md.root, expected);
    assert_eq!(md.root, memory_wiring::default_root());
}

/// A URL where a `kind` belongs is shown with its password hidden and its quotes kept.
#[test]
fn a_quoted_url_in_a_message_keeps_its_quotes() {
    let err = error("[providers.shared]\nkind = \"postgres://agent:Secret123@db.example/m\"\n");
    assert!(err.contains("`postgres://agent:***@db.example/m`"), "{err}");
}

/// An unclosed `${` is named by its character position in the value.
#[test]
fn an_unclosed_variable_is_named_by_its_position() {
    let err = error("[providers.pg]\nkind = \"postgres\"\nurl = \"a${HOME}bc${X\"\n");
    assert!(
        err.contains("\"${\" at character 11 has no closing \"}\""),
        "{err}"
    );
}

/// The `[serve]` table keeps the file's text for memory-web to read, but its `Debug` shows
/// where the table is, never the text: a URL elsewhere in the file may hold a password.
#[test]
fn the_debug_of_a_config_with_a_serve_table_shows_no_password() {
    let config = parse(
        "[providers.pg]\nkind = \"postgres\"\nurl = \"postgres://agent:hunter2@db/m\"\n\n[serve]\nmax_body_bytes = 4096\n",
    )
    .unwrap();
    let shown = format!("{config:?}");
    assert!(!shown.contains("hunter2"), "{shown}");
    assert!(shown.contains("ServeTable"), "{shown}");
}

/// `model` picks the embedding model (multilingual-e5-small when none is named); its directory defaults to where the provisioning script
/// puts that model (or its environment variable says), `model_dir` overrides it.
#[test]
fn a_vector_provider_names_its_model() {
    let base = "default_provider = \"recall\"\n[providers.files]\nkind = \"markdown\"\nroot = \"m\"\n[providers.recall]\nkind = \"vector\"\nsource = \"files\"\n";
    let model_of = |text: String| {
        let config = parse(&text).unwrap();
        let ProviderConfig::Vector { model, .. } = &config.providers["recall"] else {
            panic!("recall is vector")
        };
        model.clone()
    };
    for (line, name) in [
        ("", ModelName::E5Small),
        ("model = \"multilingual-e5-small\"\n", ModelName::E5Small),
        ("model = \"all-MiniLM-L6-v2\"\n", ModelName::MiniLm),
    ] {
        let model = model_of(format!("{base}{line}"));
        assert_eq!(model.name, name, "{line:?}");
        assert_eq!(
            model.model_dir,
            memory_vector::ModelConfig::of(name).model_dir
        );
    }
    let moved = model_of(format!(
        "{base}model = \"multilingual-e5-small\"\nmodel_dir = \"/opt/e5\"\n"
    ));
    assert_eq!(
        (moved.name, moved.model_dir),
        (ModelName::E5Small, "/opt/e5".into())
    );
}

/// A personality's caps on its notes are `caps.notes`; what it leaves out keeps the default,
/// and an unknown key names its line.
#[test]
fn a_personality_caps_its_notes() {
    let config = parse(
        "[personalities.ada.caps.notes]\nmax_notes = 50\nmax_note_bytes = 2000\n\n[personalities.bob]\n",
    )
    .unwrap();
    let notes = |id: &str| {
        config
            .personality(&PersonalityId::new(id).unwrap())
            .budgets
            .notes
    };
    assert_eq!(
        notes("ada"),
        memory_core::NoteCaps {
            max_notes: 50,
            max_note_bytes: 2000,
            ..memory_core::NoteCaps::DEFAULT
        }
    );
    assert_eq!(notes("bob"), memory_core::NoteCaps::DEFAULT);
    let message = error("[personalities.ada.caps.notes]\nmax_files = 3\n");
    assert!(message.contains("max_files"), "{message}");
}
