//! all-MiniLM-L6-v2, int8 weights, run by onnxruntime through fastembed.

use std::path::PathBuf;

use fastembed::{
    InitOptionsUserDefined, Pooling, QuantizationMode, TextEmbedding, TokenizerFiles,
    UserDefinedEmbeddingModel,
};
use memory_core::MemoryError;

use super::{BATCH, Engine, ModelConfig, Role, missing, read_provisioned, unloadable};

/// The int8 weights' file name in the model directory, as provisioned.
pub(super) const WEIGHTS_FILE: &str = "model.onnx";
/// onnxruntime's file name in the model directory, as provisioned.
const ORT_LIBRARY_FILE: &str = "libonnxruntime.so.1.24.4";
/// Longest input in tokens; longer entries are cut (MiniLM was trained on 256).
const MAX_TOKENS: usize = 256;

struct MiniLm(TextEmbedding);

impl Engine for MiniLm {
    /// Queries and entries alike: MiniLM was trained without prefixes.
    fn embed(&mut self, texts: &[String], _role: Role) -> Result<Vec<Vec<f32>>, String> {
        self.0
            .embed(texts, Some(BATCH))
            .map_err(|err| err.to_string())
    }
}

/// Loads onnxruntime and the model; the engine and the weights that name it.
pub(super) fn load(config: &ModelConfig) -> Result<(Box<dyn Engine>, Vec<u8>), MemoryError> {
    let library: PathBuf = config
        .ort_library
        .clone()
        .unwrap_or_else(|| config.model_dir.join(ORT_LIBRARY_FILE));
    let read = |name: &str| read_provisioned(&config.model_dir.join(name));
    let onnx = read(WEIGHTS_FILE)?;
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
    let model = UserDefinedEmbeddingModel::new(onnx.clone(), tokenizer)
        .with_pooling(Pooling::Mean)
        // The weights are int8 but the computation is float: `Dynamic` would wrongly forbid
        // batching.
        .with_quantization(QuantizationMode::None);
    let options = InitOptionsUserDefined::new().with_max_length(MAX_TOKENS);
    let model = TextEmbedding::try_new_from_user_defined(model, options)
        .map_err(|err| unloadable(config, err))?;
    Ok((Box::new(MiniLm(model)), onnx))
}
