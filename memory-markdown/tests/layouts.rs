//! The layouts of the systems this project comes from: a Metis workspace (`.metis/MEMORY.md`
//! and `.metis/USER.md`, one personality's and one user's) and Ethos's first layout, whose root
//! `USER.md` no prefetch reads without saying so.

mod common;

use std::fs;
use std::path::Path;

use memory_core::{
    DocumentId, IdempotencyKey, Identity, IdentityMap, IfMatch, MemoryError, MemoryProvider,
    MemoryUpdate, NotePath, PersonalityId, Store, Surface, UserId,
};
use memory_markdown::{Layout, MarkdownProvider};

use common::ctx_of;

fn workspace(dir: &Path) -> MarkdownProvider {
    MarkdownProvider::new(dir).with_layout(Layout::Metis {
        personality: PersonalityId::new("app").unwrap(),
        user: UserId::new("grace").unwrap(),
    })
}

fn app_memory() -> DocumentId {
    DocumentId::PersonalityMemory {
        personality: PersonalityId::new("app").unwrap(),
    }
}

fn both(memory: &str, user: &str) -> [MemoryUpdate; 2] {
    [
        MemoryUpdate::add(Store::Memory, memory),
        MemoryUpdate::add(Store::User, user),
    ]
}

#[tokio::test]
async fn a_metis_workspace_keeps_its_two_documents_in_dot_metis() {
    let dir = tempfile::tempdir().unwrap();
    let provider = workspace(dir.path());
    let metis = dir.path().join(".metis");
    assert_eq!(provider.list().await.unwrap(), vec![]);
    assert!(!metis.exists(), "nothing is created before the first write");

    let keyed = ctx_of("app", "grace").with_idempotency_key(IdempotencyKey::new("turn-1").unwrap());
    let report = provider
        .sync(
            &keyed,
            &both("Build with make.", "Name: Grace."),
            &IfMatch::NONE,
        )
        .await
        .unwrap();
    assert_eq!(
        report.documents[0].location,
        metis.join("MEMORY.md").display().to_string()
    );
    assert_eq!(
        fs::read_to_string(metis.join("MEMORY.md")).unwrap(),
        "Build with make.\n"
    );
    assert_eq!(
        fs::read_to_string(metis.join("USER.md")).unwrap(),
        "Name: Grace.\n"
    );
    // Receipts and history live beside the files Metis reads, hidden from it.
    let replay = provider
        .sync(
            &keyed,
            &both("Build with make.", "Name: Grace."),
            &IfMatch::NONE,
        )
        .await
        .unwrap();
    assert!(replay.documents.iter().all(|d| d.replayed));
    assert!(metis.join(".MEMORY.md.history.jsonl").is_file());
    assert_eq!(
        provider.list().await.unwrap(),
        vec![
            app_memory(),
            DocumentId::user(&UserId::new("grace").unwrap())
        ]
    );

    // Metis's own write (a plain file write) is a hand edit: the next read and history see it.
    fs::write(metis.join("MEMORY.md"), "Build with ninja.\n").unwrap();
    let seen = provider.prefetch(&ctx_of("app", "grace")).await.unwrap();
    assert_eq!(
        seen.context.as_deref(),
        Some("## About You\n\nName: Grace.\n\n## Memory\n\nBuild with ninja.")
    );
    assert!(seen.warnings.is_empty(), "{:?}", seen.warnings);
    let history = provider.history(&app_memory(), 10).await.unwrap();
    assert_eq!(history[0].surface, Surface::External);

    // The identity map is beside them; a purge removes the file Metis then reads as empty.
    let telegram = Identity::new("telegram", "42").unwrap();
    provider
        .link(&telegram, &UserId::new("grace").unwrap(), false)
        .await
        .unwrap();
    assert!(metis.join("identity-map.json").is_file());
    provider.purge(&app_memory(), Surface::Cli).await.unwrap();
    assert!(!metis.join("MEMORY.md").exists());
}

#[tokio::test]
async fn a_document_with_no_place_in_the_workspace_is_refused_before_anything_is_touched() {
    let dir = tempfile::tempdir().unwrap();
    let provider = workspace(dir.path());
    let no_place = |err: MemoryError, document: &str| {
        assert_eq!(err.code(), "not-in-layout", "{err}");
        let message = err.to_string();
        assert!(message.starts_with(document), "{message}");
        assert!(message.contains("personality 'app'") && message.contains("user 'grace'"));
    };
    for (personality, user, document) in [
        ("bob", "grace", "personalities/bob/MEMORY.md"),
        ("app", "alan", "users/alan/USER.md"),
    ] {
        let err = provider
            .sync(&ctx_of(personality, user), &both("x", "y"), &IfMatch::NONE)
            .await
            .unwrap_err();
        no_place(err, document);
        no_place(
            provider
                .prefetch(&ctx_of(personality, user))
                .await
                .unwrap_err(),
            document,
        );
    }
    no_place(
        provider.read(&DocumentId::GlobalMemory).await.unwrap_err(),
        "MEMORY.md",
    );
    no_place(
        provider
            .history(&DocumentId::GlobalMemory, 5)
            .await
            .unwrap_err(),
        "MEMORY.md",
    );
    no_place(
        provider
            .purge(&DocumentId::GlobalMemory, Surface::Cli)
            .await
            .unwrap_err(),
        "MEMORY.md",
    );
    // Not even the notes of the two documents it holds: two files have no place for them.
    let kyoto = NotePath::new("projects/kyoto.md").unwrap();
    for beside in [
        app_memory(),
        DocumentId::user(&UserId::new("grace").unwrap()),
    ] {
        let note = DocumentId::note(&beside, kyoto.clone());
        let shown = note.relative_path();
        no_place(provider.read(&note).await.unwrap_err(), &shown);
        no_place(provider.history(&note, 5).await.unwrap_err(), &shown);
        no_place(
            provider.purge(&note, Surface::Cli).await.unwrap_err(),
            &shown,
        );
    }
    assert_eq!(
        fs::read_dir(dir.path()).unwrap().count(),
        0,
        "nothing touched"
    );
}

#[tokio::test]
async fn a_root_user_md_from_ethoss_first_layout_is_warned_about_on_every_prefetch() {
    let dir = tempfile::tempdir().unwrap();
    let provider = MarkdownProvider::new(dir.path());
    let seen = provider.prefetch(&ctx_of("ada", "grace")).await.unwrap();
    assert!(seen.warnings.is_empty());
    fs::write(dir.path().join("USER.md"), "Name: Grace.\n").unwrap();
    let seen = provider.prefetch(&ctx_of("ada", "grace")).await.unwrap();
    assert_eq!(seen.context, None, "the root USER.md is no document");
    assert_eq!(seen.warnings.len(), 1);
    let warning = &seen.warnings[0];
    assert!(
        warning.contains(&dir.path().join("USER.md").display().to_string())
            && warning.contains("memory migrate --root-user"),
        "{warning}"
    );
    // A Metis workspace's root is the user's project: a USER.md there is theirs, not Ethos's.
    let seen = workspace(dir.path())
        .prefetch(&ctx_of("app", "grace"))
        .await
        .unwrap();
    assert!(seen.warnings.is_empty(), "{:?}", seen.warnings);
}
