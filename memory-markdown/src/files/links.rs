//! Symbolic links: the file a write to a linked document must replace, and a link that leads
//! nowhere (or to itself) reported as `Corrupt`.

use std::fs;
use std::io::{self, ErrorKind};
use std::path::{Path, PathBuf};

use memory_core::MemoryError;

use super::errors::io_error;
use super::paths::split;

/// The file a write to `document` must replace: `document` itself, or, when it is a symbolic
/// link (into a dotfiles repository, say), the file at the end of its chain of links. Renaming
/// over the link would turn it into a plain file and leave its target silently behind.
///
/// A link to nothing, or a loop, is `Corrupt`: writing a new file where the link points could
/// create it in a place nobody chose.
pub(crate) fn write_target(document: &Path) -> Result<PathBuf, MemoryError> {
    // Linux gives up on a path after 40 links; so does this.
    const MAX_LINKS: usize = 40;
    let corrupt = |reason: String| MemoryError::Corrupt {
        location: document.display().to_string(),
        reason,
    };
    let mut target = document.to_path_buf();
    for _ in 0..MAX_LINKS {
        match fs::symlink_metadata(&target) {
            Ok(meta) if meta.file_type().is_symlink() => {}
            Ok(_) => return Ok(target),
            // A new document: it is created where it belongs.
            Err(err) if err.kind() == ErrorKind::NotFound && target == document => {
                return Ok(target);
            }
            Err(err) if err.kind() == ErrorKind::NotFound => {
                return Err(corrupt(format!(
                    "it is a symbolic link to {}, which does not exist; point the link at a file or remove it; nothing was written",
                    target.display()
                )));
            }
            Err(err) => return Err(io_error(&target, err)),
        }
        let next = fs::read_link(&target).map_err(|err| io_error(&target, err))?;
        // A relative link is relative to the directory that holds it.
        target = split(&target).0.join(next);
    }
    Err(corrupt(format!(
        "it is a symbolic link that leads to itself (or through more than {MAX_LINKS} links); point it at a file; nothing was written"
    )))
}

/// Maps an error opening `path` to read it: a loop of symbolic links is `Corrupt`, as a write
/// would find (the kind of error that says so is not stable Rust), the rest as [`io_error`].
pub(crate) fn read_error(path: &Path, err: io::Error) -> MemoryError {
    write_target(path)
        .err()
        .unwrap_or_else(|| io_error(path, err))
}
