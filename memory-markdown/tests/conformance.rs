//! The whole conformance suite against markdown files, each test in its own temp dir.

use std::sync::Arc;

use memory_conformance::Fixture;
use memory_markdown::MarkdownProvider;

/// A provider on a fresh root; other hosts are other provider values on the same root (as
/// other processes would be), and a hand edit writes the file as an editor does.
async fn setup() -> Fixture<MarkdownProvider> {
    let root = tempfile::tempdir().expect("a temp dir for the memory root");
    let path = root.path().to_path_buf();
    let (hosts, edits) = (path.clone(), path.clone());
    Fixture::new(MarkdownProvider::new(&path))
        .with_hosts(move |host| {
            let mut provider = MarkdownProvider::new(&hosts);
            if let Some(retention) = host.retention {
                provider = provider.with_retention(retention);
            }
            async move { Arc::new(provider) }
        })
        .with_hand_edits(move |document, text| {
            let file = MarkdownProvider::new(&edits).path(&document);
            async move {
                std::fs::create_dir_all(file.parent().unwrap()).unwrap();
                std::fs::write(&file, text).unwrap();
            }
        })
        .with_guard(root)
}

memory_conformance::conformance_suite!(setup; hosts, hand_edits);

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
