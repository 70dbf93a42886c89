//! What the targets that go through a provider share: a runtime, and a root on disk of the
//! process's own. Not a target itself (the targets are the `[[bin]]`s of Cargo.toml).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// One current-thread runtime for the process, made on the first input.
pub fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a tokio runtime")
    })
}

/// A root of this process's own, named after `target`, on tmpfs where there is one: each input
/// is written to disk. Under `$AGENT_MEMORY_FUZZ_TMP` when set (scripts/fuzz sets it, and
/// removes it afterwards).
pub fn root(target: &str) -> &'static Path {
    static ROOT: OnceLock<PathBuf> = OnceLock::new();
    ROOT.get_or_init(|| {
        let shm = Path::new("/dev/shm");
        let base = match std::env::var_os("AGENT_MEMORY_FUZZ_TMP") {
            Some(dir) => PathBuf::from(dir),
            None if shm.is_dir() => shm.to_path_buf(),
            None => std::env::temp_dir(),
        };
        base.join(format!("agent-memory-fuzz-{target}-{}", std::process::id()))
    })
}
