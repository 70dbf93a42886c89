//! The lock Ethos takes on the identity map before it adds an entry, taken here too, so that on a
//! root the two programs share neither writes the map between the other's re-read and its
//! rename.
//!
//! Ethos's protocol (`acquireSentinelLock` in its `packages/wiring/src/backup/sentinel-lock.ts`):
//! the lock is the file `identity-map.json.lock` beside the map, made by an exclusive create and
//! holding `{"token", "pid", "boot", "startedAt"}`; its maker confirms it still holds its own
//! bytes; a lock whose holder is provably gone (its `boot` is another boot's, or nothing wears its
//! `pid`) is removed and retaken at once, one without a readable `pid` only once it is 5 s old; a
//! live holder is waited for, never taken over; the holder removes the file when done, if it still
//! holds its bytes. This side follows the same rules, so each program reads the other's lock
//! right, and a holder of either kind killed mid-write leaves a lock the other reclaims.

use std::collections::hash_map::RandomState;
use std::fs;
use std::hash::{BuildHasher, Hasher};
use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use memory_core::MemoryError;

use crate::files;

/// How often a waiting writer looks at the lock again (Ethos: 20 ms).
const RETRY: Duration = Duration::from_millis(20);
/// Past this age a lock without a readable holder is stale (Ethos: 5 s): its maker died
/// between the create and the write.
const UNREADABLE_STALE: Duration = Duration::from_secs(5);

/// The lock, held until dropped.
#[derive(Debug)]
pub(crate) struct Held {
    path: PathBuf,
    body: String,
}

impl Drop for Held {
    fn drop(&mut self) {
        // Only our own bytes: a holder that was (wrongly) taken over must not remove its
        // successor's lock on the way out.
        if fs::read_to_string(&self.path).is_ok_and(|body| body == self.body) {
            let _ = fs::remove_file(&self.path);
        }
    }
}

/// `identity-map.json.lock` beside `map`.
pub(crate) fn path(map: &Path) -> PathBuf {
    let mut name = map.as_os_str().to_owned();
    name.push(".lock");
    PathBuf::from(name)
}

/// Takes the lock on `map`, waiting at most `timeout` for a live holder. The map's directory
/// exists (our own lock made it).
pub(crate) fn acquire(map: &Path, timeout: Duration) -> Result<Held, MemoryError> {
    let path = path(map);
    let held = Held {
        body: holder_body(),
        path: path.clone(),
    };
    let deadline = Instant::now() + timeout;
    loop {
        match files::private_file()
            .write(true)
            .create_new(true)
            .open(&path)
        {
            Ok(mut file) => {
                if let Err(err) = file.write_all(held.body.as_bytes()) {
                    drop(file);
                    drop(held);
                    return Err(MemoryError::unavailable(path.display().to_string(), err));
                }
                drop(file);
                // A contender that judged the lock we replaced stale may have removed ours in
                // the meantime and made its own: then it is not ours.
                if read(&path).is_some_and(|body| body == held.body) {
                    return Ok(held);
                }
            }
            Err(err) if err.kind() == ErrorKind::AlreadyExists => {
                if let Some(observed) = read(&path)
                    && is_stale(&path, &observed)
                    // It may have been retaken (and be live) since it was read.
                    && read(&path).is_some_and(|body| body == observed)
                    && fs::remove_file(&path).is_ok()
                {
                    continue;
                }
            }
            Err(err) => return Err(files::io_error(&path, err)),
        }
        if Instant::now() >= deadline {
            let holder = read(&path)
                .and_then(|body| holder(&body))
                .map_or_else(String::new, |(pid, _)| format!(" by process {pid}"));
            return Err(MemoryError::Unavailable {
                what: path.display().to_string(),
                message: format!(
                    "Ethos's lock on the identity map is still held{holder} after {timeout:?}; nothing was written. If no Ethos process is running, delete this file"
                ),
                source: None,
            });
        }
        std::thread::sleep(RETRY);
    }
}

/// What Ethos writes into the lock: a token unique to this acquisition (so that two bodies are
/// never equal), the pid, the boot and the time.
fn holder_body() -> String {
    let token = format!(
        "{:016x}{:016x}",
        RandomState::new().build_hasher().finish(),
        RandomState::new().build_hasher().finish()
    );
    let boot = boot_id().map_or_else(|| "null".to_owned(), |boot| json_string(&boot));
    format!(
        r#"{{"token":{},"pid":{},"boot":{boot},"startedAt":{}}}"#,
        json_string(&token),
        std::process::id(),
        json_string(&memory_core::raw::format_utc_millis(SystemTime::now())),
    )
}

fn json_string(text: &str) -> String {
    serde_json::to_string(text).expect("a string always serializes")
}

fn read(path: &Path) -> Option<String> {
    fs::read_to_string(path).ok()
}

/// The holder a lock names: its pid (a positive integer) and its boot, if any.
fn holder(body: &str) -> Option<(u64, Option<String>)> {
    let value: serde_json::Value = serde_json::from_str(body).ok()?;
    let pid = value.get("pid")?;
    let pid = pid.as_u64().or_else(|| {
        // `Number.isInteger(5.0)` is true in JavaScript.
        pid.as_f64()
            .filter(|pid| pid.fract() == 0.0 && *pid >= 1.0 && *pid <= 4_294_967_295.0)
            .map(|pid| pid as u64)
    })?;
    let boot = value
        .get("boot")
        .and_then(serde_json::Value::as_str)
        .filter(|boot| !boot.is_empty())
        .map(str::to_owned);
    (pid > 0).then_some((pid, boot))
}

/// Whether the holder of the lock is provably gone: from another boot, or no process wears its
/// pid; one without a readable holder once it is old. Every uncertain answer is "held".
fn is_stale(path: &Path, body: &str) -> bool {
    match holder(body) {
        Some((pid, boot)) => other_boot(boot.as_deref()) || !pid_alive(pid),
        None => fs::metadata(path)
            .and_then(|meta| meta.modified())
            .map_or(true, |modified| {
                modified.elapsed().is_ok_and(|age| age > UNREADABLE_STALE)
            }),
    }
}

/// This boot as Ethos names it (`boot-id:<uuid>`), on Linux, where the kernel gives an exact id;
/// `None` elsewhere, where no lock is ever judged to be another boot's.
fn boot_id() -> Option<String> {
    let id = fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    let id = id.trim();
    (!id.is_empty()).then(|| format!("boot-id:{id}"))
}

fn other_boot(recorded: Option<&str>) -> bool {
    match (recorded, boot_id()) {
        (Some(recorded), Some(current)) => recorded.starts_with("boot-id:") && recorded != current,
        _ => false,
    }
}

/// Whether some process wears `pid`. Where `/proc` cannot tell, it is taken to be alive.
fn pid_alive(pid: u64) -> bool {
    if !Path::new("/proc/self").exists() {
        return true;
    }
    Path::new("/proc").join(pid.to_string()).exists()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_body_is_what_ethos_reads_as_a_live_holder_of_this_boot() {
        let body = holder_body();
        let value: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(value["pid"], serde_json::json!(std::process::id()));
        assert_eq!(value["token"].as_str().unwrap().len(), 32);
        assert_eq!(value["boot"].as_str().map(str::to_owned), boot_id());
        assert!(value["startedAt"].as_str().unwrap().ends_with('Z'));
        assert_ne!(holder_body(), body, "every acquisition has its own token");
        let dir = tempfile::tempdir().unwrap();
        assert!(!is_stale(dir.path(), &body), "our own live pid holds");
    }

    #[test]
    fn a_gone_holder_or_another_boot_is_stale_and_a_fresh_unreadable_one_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let lock = dir.path().join("identity-map.json.lock");
        fs::write(&lock, "").unwrap();
        assert!(
            !is_stale(&lock, ""),
            "maybe a holder between create and write"
        );
        assert!(!is_stale(&lock, "{\"pid\": \"12\"}"));
        let me = std::process::id();
        if boot_id().is_some() {
            assert!(is_stale(
                &lock,
                &format!(r#"{{"pid": {me}, "boot": "boot-id:another"}}"#)
            ));
            // A boot of a form this side cannot compare is no proof.
            assert!(!is_stale(
                &lock,
                &format!(r#"{{"pid": {me}, "boot": "boot-epoch:1"}}"#)
            ));
        }
        assert!(!is_stale(&lock, &format!(r#"{{"pid": {me}.0}}"#)));
        if Path::new("/proc/self").exists() {
            // Above the largest pid Linux hands out.
            assert!(is_stale(&lock, r#"{"pid": 4194305}"#));
        }
    }
}
