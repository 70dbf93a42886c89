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

/// The `memory-X(1)` pages a man page refers to, by file name (`memory-show.1`).
fn referred_pages(page: &str) -> Vec<String> {
    // roff escapes the hyphens: `memory\-key\-new(1)`.
    let mut referred = Vec::new();
    let mut rest = page;
    while let Some(at) = rest.find("memory\\-") {
        let name: String = rest[at..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '\\' || *c == '-')
            .collect();
        rest = &rest[at + name.len()..];
        if rest.starts_with("(1)") {
            referred.push(format!("{}.1", name.replace("\\-", "-")));
        }
    }
    referred
}

/// `memory man --dir` writes, into a folder it makes, the page of every subcommand (nested
/// ones too), so each `memory-X(1)` a page refers to is there; `memory man` prints the same
/// top page.
#[test]
fn man_pages_are_written_for_every_page_they_refer_to() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("share/man/man1");
    let (code, stdout, stderr) = run(memory(root.path()).args(["man", "--dir"]).arg(&dir));
    assert_eq!(code, 0, "{stderr}");
    let listed: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        listed.first().copied(),
        Some(dir.join("memory.1").to_str().unwrap()),
        "{stdout}"
    );
    let mut written: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .collect();
    written.sort();
    assert_eq!(listed.len(), written.len(), "every page written is listed");
    for page in [
        "memory.1",
        "memory-show.1",
        "memory-cat.1",
        "memory-serve.1",
        "memory-key.1",
        "memory-key-new.1",
        "memory-man.1",
    ] {
        assert!(written.contains(&page.to_owned()), "no {page}: {written:?}");
    }
    let mut references = 0;
    for name in &written {
        let page = std::fs::read_to_string(dir.join(name)).unwrap();
        let title = name.trim_end_matches(".1");
        assert!(page.contains(&format!(".TH {title} 1")), "{name}");
        for referred in referred_pages(&page) {
            references += 1;
            assert!(
                written.contains(&referred),
                "{name} refers to {referred}, which is not written: {written:?}"
            );
        }
    }
    assert!(references >= 15, "the pages refer to {references} pages");
    assert!(!written.contains(&"memory-help.1".to_owned()));

    let (code, printed, stderr) = run(memory(root.path()).arg("man"));
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        printed,
        std::fs::read_to_string(dir.join("memory.1")).unwrap()
    );
    for referred in referred_pages(&printed) {
        assert!(
            written.contains(&referred),
            "memory man refers to {referred}"
        );
    }

    // A folder that cannot be made is named.
    let file = root.path().join("a-file");
    std::fs::write(&file, "").unwrap();
    let (code, _, stderr) = run(memory(root.path())
        .args(["man", "--dir"])
        .arg(file.join("man1")));
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("a-file"), "{stderr}");
}

/// The README's lines installing completions and man pages run as written on a fresh home
/// (no `~/.local/share` yet), leaving the files where bash-completion and man look.
#[test]
fn the_readmes_completion_and_man_page_lines_run_on_a_fresh_home() {
    let readme = include_str!("../../README.md");
    let block = readme
        .split("```sh\n")
        .skip(1)
        .map(|block| &block[..block.find("```").expect("the block ends")])
        .find(|block| block.contains("memory completions bash >"))
        .expect("the README installs the bash completions");
    let home = tempfile::tempdir().unwrap();
    let bin = common::memory_bin().parent().unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = std::process::Command::new("sh")
        .args(["-e", "-c", block])
        .env("HOME", home.path())
        .env("PATH", path)
        .env_remove("MEMORY_CONFIG")
        .env("MEMORY_ROOT", home.path().join("memory"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{block}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let share = home.path().join(".local/share");
    let completions =
        std::fs::read_to_string(share.join("bash-completion/completions/memory")).unwrap();
    assert!(completions.contains("complete -F _memory"), "{completions}");
    for page in ["memory.1", "memory-show.1"] {
        let page = std::fs::read_to_string(share.join("man/man1").join(page)).unwrap();
        assert!(page.contains(".TH memory"), "{page}");
    }
}
