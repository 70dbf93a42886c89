//! The hash reports and revisions carry of a text.

use sha2::{Digest, Sha256};

/// Lowercase hex SHA-256 of `text`'s UTF-8 bytes, as reports carry it.
pub fn sha256_hex(text: &str) -> String {
    format!("{:x}", Sha256::digest(text.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha256_is_hex_of_utf8() {
        assert_eq!(
            sha256_hex(""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }
}
