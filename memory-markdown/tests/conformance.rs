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
    let (stored, damaged) = (path.clone(), path.clone());
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
        .with_stored_history(move |document| {
            // Every file in the document's folder: it, its journal's segments and checkpoint
            // texts, its receipts.
            let folder = MarkdownProvider::new(&stored).path(&document);
            let folder = folder.parent().unwrap().to_path_buf();
            async move {
                let mut files: Vec<_> = std::fs::read_dir(&folder)
                    .unwrap()
                    .map(|entry| entry.unwrap().path())
                    .collect();
                files.sort();
                files
                    .iter()
                    .map(|file| {
                        format!(
                            "{}: {}\n",
                            file.display(),
                            std::fs::read_to_string(file).unwrap()
                        )
                    })
                    .collect::<String>()
            }
        })
        .with_history_damage(move |document, number| {
            // Revision `number`'s line in the journal, its updates' content altered.
            let journal = MarkdownProvider::new(&damaged).history_path(&document);
            async move {
                let text = std::fs::read_to_string(&journal).unwrap();
                let number_field = format!("\"number\":{number},");
                let damaged: String = text
                    .lines()
                    .map(|line| {
                        let line = if line.contains(&number_field) {
                            line.replace("\"content\":\"", "\"content\":\"damaged ")
                        } else {
                            line.to_owned()
                        };
                        line + "\n"
                    })
                    .collect();
                assert_ne!(
                    damaged,
                    text,
                    "revision {number} is in {}",
                    journal.display()
                );
                std::fs::write(&journal, damaged).unwrap();
                number
            }
        })
        .with_guard(root)
}

memory_conformance::conformance_suite!(setup; hosts, hand_edits, stored_history);
memory_conformance::notes_suite!(setup);

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
