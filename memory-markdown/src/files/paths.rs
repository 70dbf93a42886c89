//! The names of the files beside a document.

use std::path::{Path, PathBuf};

/// The hidden file `.<NAME>.<suffix>` beside `document` (its lock, its receipts): one place
/// names them, so every writer finds the same file and `list` never takes one for a document.
pub(crate) fn beside(document: &Path, suffix: &str) -> PathBuf {
    let (dir, name) = split(document);
    dir.join(format!(".{name}.{suffix}"))
}

/// The document's directory and file name. Document paths always have both: they are the
/// root joined with at least one name.
pub(crate) fn split(document: &Path) -> (&Path, String) {
    let dir = document.parent().unwrap_or(Path::new("."));
    let name = document
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    (dir, name)
}
