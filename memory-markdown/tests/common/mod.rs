//! What the markdown provider's tests share: a provider on a fresh root, the conversation most
//! of them write in, and reading a folder's names.

#![allow(dead_code)] // each test file uses its own part

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

use memory_core::{MemoryContext, MemoryUpdate, PersonalityId, Store, UserId};
use memory_markdown::MarkdownProvider;
use tempfile::TempDir;

/// A provider on a fresh root, with the root's guard.
pub fn setup() -> (TempDir, MarkdownProvider) {
    let dir = tempfile::tempdir().unwrap();
    let provider = MarkdownProvider::new(dir.path());
    (dir, provider)
}

/// `personality` speaking to `user`.
pub fn ctx_of(personality: &str, user: &str) -> MemoryContext {
    MemoryContext::new(
        PersonalityId::new(personality).unwrap(),
        UserId::new(user).unwrap(),
    )
}

/// Ada speaking to u1.
pub fn ctx() -> MemoryContext {
    ctx_of("ada", "u1")
}

/// One `add` of `content` to `store`.
pub fn add(store: Store, content: &str) -> [MemoryUpdate; 1] {
    [MemoryUpdate::add(store, content)]
}

/// The names in `dir`, hidden ones included.
pub fn names(dir: &Path) -> BTreeSet<String> {
    fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect()
}

/// `names` as a set, to compare with [`names`].
pub fn set(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|n| n.to_string()).collect()
}
