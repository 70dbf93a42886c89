//! The `[serve]` table, kept as the file writes it for the service to read.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::locator::Locator;

/// The `[serve]` table as the file writes it: the HTTP service's settings, which memory-web
/// reads and checks (`ServeTable::settings`, with this crate's `serve` feature). It keeps the
/// file's text, so a mistake in it is named at its line as every other mistake in the file is.
#[derive(Clone, Default)]
pub struct ServeTable {
    /// `None` when the file has no `[serve]` table (or there is no file).
    written: Option<WrittenTable>,
}

/// The file that holds a `[serve]` table.
#[derive(Clone)]
struct WrittenTable {
    /// The whole file: the service's settings are read from it, and its spans are byte offsets
    /// into it.
    text: Arc<str>,
    origin: PathBuf,
}

impl ServeTable {
    /// The table of the file `text`, read from `origin`.
    pub(super) fn in_file(text: &str, origin: &Path) -> ServeTable {
        ServeTable {
            written: Some(WrittenTable {
                text: Arc::from(text),
                origin: origin.to_path_buf(),
            }),
        }
    }

    /// The file, when it has a `[serve]` table.
    #[cfg_attr(not(feature = "serve"), allow(dead_code))]
    pub(crate) fn written(&self) -> Option<Locator<'_>> {
        self.written.as_ref().map(|written| Locator {
            text: &written.text,
            origin: &written.origin,
        })
    }
}

/// Where the table is, never the file's text: that may hold a password in a URL.
impl std::fmt::Debug for ServeTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut table = f.debug_struct("ServeTable");
        if let Some(written) = &self.written {
            table.field("origin", &written.origin);
        }
        table.finish()
    }
}
