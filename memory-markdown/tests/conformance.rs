//! The whole conformance suite against markdown files, each test in its own temp dir.

use memory_conformance::Fixture;
use memory_markdown::MarkdownProvider;

async fn setup() -> Fixture<MarkdownProvider> {
    let root = tempfile::tempdir().expect("a temp dir for the memory root");
    Fixture::new(MarkdownProvider::new(root.path())).with_guard(root)
}

memory_conformance::conformance_suite!(setup);
