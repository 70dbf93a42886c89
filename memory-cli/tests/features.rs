//! What a build of `memory` says about its cargo features, and the conveniences generated from
//! its command definitions. Runs in every build: `./scripts/test` runs it in the full build and
//! again in the lean one (`--no-default-features`), where the kinds it lacks are refused.

use common::{memory, run};

mod common;

/// The provider kinds behind a feature: (kind as `memory.toml` writes it, feature, built here).
const KINDS: [(&str, &str, bool); 3] = [
    ("postgres", "postgres", cfg!(feature = "postgres")),
    ("redis", "redis", cfg!(feature = "redis")),
    ("vector", "recall", cfg!(feature = "recall")),
];

#[test]
fn the_version_names_the_features_built_and_not() {
    let root = tempfile::tempdir().unwrap();
    let (code, stdout, _) = run(memory(root.path()).arg("--version"));
    assert_eq!(code, 0);
    assert!(
        stdout.starts_with(&format!("memory {} (features: ", env!("CARGO_PKG_VERSION"))),
        "{stdout}"
    );
    for (_, feature, built) in KINDS {
        let sign = if built { '+' } else { '-' };
        assert!(stdout.contains(&format!("{sign}{feature}")), "{stdout}");
    }
}

/// A config naming a kind this build lacks fails at load, naming the kind and the feature to
/// rebuild with, and writes nothing; a kind it has is not refused for that.
#[test]
fn a_kind_this_build_lacks_is_refused_with_the_feature_to_rebuild_with() {
    let root = tempfile::tempdir().unwrap();
    let config = root.path().join("memory.toml");
    for (kind, feature, built) in KINDS {
        let table = match kind {
            // Nothing listens on port 1: a build that has the kind fails to connect instead.
            "postgres" => "url = \"postgres://nobody@127.0.0.1:1/none?connect_timeout=1\"",
            "redis" => "url = \"redis://127.0.0.1:1\"",
            _ => "source = \"files\"",
        };
        std::fs::write(
            &config,
            format!(
                "default_provider = \"team\"\nusers_provider = \"files\"\n\n[providers.files]\nkind = \"markdown\"\nroot = \"files\"\n\n[providers.team]\nkind = \"{kind}\"\n{table}\n"
            ),
        )
        .unwrap();
        let (code, _, stderr) = run(memory(root.path())
            .arg("--config")
            .arg(&config)
            .args(["cat", "memories/ada/MEMORY.md"]));
        let lacking = format!("this build has no {kind} provider");
        if built {
            assert!(!stderr.contains(&lacking), "{kind}: {stderr}");
            continue;
        }
        assert_eq!(code, 2, "{kind}: {stderr}");
        assert!(stderr.contains(&lacking), "{kind}: {stderr}");
        assert!(
            stderr.contains(&format!("memory.toml:9: providers.team.kind = \"{kind}\"")),
            "{kind}: the line and the field: {stderr}"
        );
        assert!(
            stderr.contains(&format!(
                "cargo install --locked --path memory-cli --features {feature}"
            )),
            "{kind}: {stderr}"
        );
        assert!(
            !root.path().join("files").exists(),
            "{kind}: nothing written"
        );
    }
}

#[test]
fn completions_cover_every_subcommand_for_each_shell() {
    let root = tempfile::tempdir().unwrap();
    for (shell, marker) in [
        ("bash", "complete -F _memory"),
        ("zsh", "#compdef memory"),
        ("fish", "complete -c memory"),
        ("elvish", "edit:completion:arg-completer[memory]"),
        ("powershell", "Register-ArgumentCompleter"),
    ] {
        let (code, stdout, stderr) = run(memory(root.path()).args(["completions", shell]));
        assert_eq!(code, 0, "{shell}: {stderr}");
        assert!(stdout.contains(marker), "{shell}: {stdout}");
        for subcommand in ["show", "sync", "serve", "completions", "man"] {
            assert!(stdout.contains(subcommand), "{shell} lacks {subcommand}");
        }
    }
    let (code, _, stderr) = run(memory(root.path()).args(["completions", "tcsh"]));
    assert_eq!(code, 2);
    assert!(stderr.contains("tcsh"), "{stderr}");
}

#[test]
fn the_man_page_is_roff_from_the_same_definitions() {
    let root = tempfile::tempdir().unwrap();
    let (code, stdout, stderr) = run(memory(root.path()).arg("man"));
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains(".TH memory 1"), "{stdout}");
    assert!(stdout.contains(".SH SUBCOMMANDS"), "{stdout}");
    for subcommand in ["memory\\-show", "memory\\-serve", "memory\\-completions"] {
        assert!(stdout.contains(subcommand), "lacks {subcommand}: {stdout}");
    }
    assert!(
        stdout.contains("Exit codes: 0 ok"),
        "the long help is the page's description"
    );
}
