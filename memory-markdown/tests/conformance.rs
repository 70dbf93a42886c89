//! The whole conformance suite against markdown files, each test in its own temp dir.

use memory_conformance::Fixture;
use memory_markdown::MarkdownProvider;

async fn setup() -> Fixture<MarkdownProvider> {
    let root = tempfile::tempdir().expect("a temp dir for the memory root");
    Fixture::new(MarkdownProvider::new(root.path())).with_guard(root)
}

memory_conformance::conformance_suite!(setup);

/// The identity-map cases through two provider values on one root, as two processes would
/// share it.
mod identity_map {
    use std::sync::Arc;

    use memory_conformance::identity::Maps;
    use memory_core::IdentityMap;
    use memory_markdown::MarkdownProvider;

    async fn setup() -> Maps {
        let root = tempfile::tempdir().expect("a temp dir for the memory root");
        let handles: Vec<Arc<dyn IdentityMap>> = (0..2)
            .map(|_| Arc::new(MarkdownProvider::new(root.path())) as Arc<dyn IdentityMap>)
            .collect();
        Maps::new(handles).with_guard(root)
    }

    memory_conformance::identity_map_suite!(setup);
}
