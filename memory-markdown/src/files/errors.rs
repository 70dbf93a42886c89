//! I/O errors as `MemoryError`s.

use std::fs;
use std::io::{self, ErrorKind};
use std::path::Path;

use memory_core::MemoryError;

/// Maps an I/O error on `path`: something of the wrong type where the layout needs a file or a
/// directory is `Corrupt` (retrying cannot help, a person must move it); anything else is
/// `Unavailable`.
pub(crate) fn io_error(path: &Path, err: io::Error) -> MemoryError {
    let location = path.display().to_string();
    match err.kind() {
        ErrorKind::IsADirectory => MemoryError::Corrupt {
            location,
            reason: "it is a directory, where a file should be".to_owned(),
        },
        ErrorKind::NotADirectory | ErrorKind::AlreadyExists => {
            match path
                .ancestors()
                .skip(1)
                .find(|dir| fs::metadata(dir).is_ok_and(|meta| !meta.is_dir()))
            {
                Some(blocker) => MemoryError::Corrupt {
                    location,
                    reason: format!(
                        "{} is a file, where a directory should be",
                        blocker.display()
                    ),
                },
                None => MemoryError::unavailable(location, err),
            }
        }
        _ => MemoryError::unavailable(location, err),
    }
}
