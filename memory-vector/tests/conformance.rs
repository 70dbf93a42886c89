//! The contract through the recall index, over markdown: without a query the vector provider
//! must be indistinguishable from its source.

use std::sync::{Arc, OnceLock};

use memory_conformance::Fixture;
use memory_markdown::MarkdownProvider;
use memory_vector::{Embedder, ModelConfig, RecallConfig, VectorProvider};

fn embedder() -> Arc<Embedder> {
    static EMBEDDER: OnceLock<Arc<Embedder>> = OnceLock::new();
    Arc::clone(EMBEDDER.get_or_init(|| {
        Arc::new(Embedder::load(&ModelConfig::from_env()).unwrap_or_else(|err| panic!("{err}")))
    }))
}

async fn setup() -> Fixture<VectorProvider> {
    let dir = tempfile::tempdir().unwrap();
    let source = Arc::new(MarkdownProvider::new(dir.path().join("memory")));
    let provider = VectorProvider::open(
        source,
        &dir.path().join("index"),
        embedder(),
        RecallConfig::default(),
    )
    .await
    .unwrap();
    Fixture::new(provider).with_guard(dir)
}

memory_conformance::conformance_suite!(setup);
memory_conformance::notes_suite!(setup);
