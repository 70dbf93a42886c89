//! The hostile note paths of `memory_conformance::notes::hostile_note_paths`, refused by the
//! path rule itself, each naming the path as given: the surfaces' end-to-end tests send the
//! same paths and check that nothing was written.

use memory_conformance::notes::hostile_note_paths;
use memory_core::{ErrorKind, MemoryError, NotePath};

#[test]
fn hundreds_of_hostile_paths_are_refused_naming_them() {
    let paths = hostile_note_paths();
    assert!(paths.len() > 300, "{}", paths.len());
    for path in &paths {
        match NotePath::new(path.as_str()) {
            Err(err @ MemoryError::InvalidNotePath { .. }) => {
                assert_eq!(err.kind(), ErrorKind::InvalidInput);
                let MemoryError::InvalidNotePath {
                    path: given,
                    reason,
                } = &err
                else {
                    unreachable!("matched above");
                };
                assert_eq!(given, path, "the error names the path as given");
                assert!(!reason.is_empty(), "{path:?}");
            }
            other => panic!("{path:?} should be refused, got {other:?}"),
        }
    }
}
