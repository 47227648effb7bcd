//! Unguessable identifiers: question ids and loopback-form tokens (128 bits, hex).

use std::fmt::Write as _;

/// `n` bytes from the operating system's CSPRNG, as lowercase hex.
pub fn random_hex(n: usize) -> std::io::Result<String> {
    let mut bytes = vec![0u8; n];
    getrandom::fill(&mut bytes).map_err(std::io::Error::other)?;
    let mut hex = String::with_capacity(2 * n);
    for b in &bytes {
        let _ = write!(hex, "{b:02x}");
    }
    Ok(hex)
}

/// Compares a presented secret with the real one without an early exit, so the time taken
/// does not tell how much of a guess was right. The length is not secret (tokens of one
/// kind all have the same length).
pub fn same_secret(presented: &[u8], secret: &[u8]) -> bool {
    if presented.len() != secret.len() {
        return false;
    }
    let diff = presented
        .iter()
        .zip(secret)
        .fold(0u8, |acc, (x, y)| acc | (x ^ y));
    std::hint::black_box(diff) == 0
}

/// A fresh question id: 128 random bits.
pub fn question_id() -> std::io::Result<String> {
    random_hex(16)
}

/// Question ids carry at least 128 random bits as lowercase hex.
pub fn is_question_id(id: &str) -> bool {
    (32..=128).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

#[cfg(test)]
mod tests {
    #[test]
    fn secrets_match_only_when_equal() {
        assert!(super::same_secret(b"abc", b"abc"));
        assert!(!super::same_secret(b"abc", b"abd"));
        assert!(!super::same_secret(b"abc", b"abcd"));
        assert!(!super::same_secret(b"", b"a"));
    }

    #[test]
    fn ids_are_32_hex_digits_and_differ() {
        let a = super::question_id().unwrap();
        let b = super::question_id().unwrap();
        assert_eq!(a.len(), 32);
        assert!(crate::platform::random::is_question_id(&a));
        assert_ne!(a, b);
    }

    #[test]
    fn ids_stay_distinct() {
        let mut seen = std::collections::HashSet::new();
        for n in 0..1000 {
            let id = super::question_id().unwrap();
            assert!(crate::platform::random::is_question_id(&id), "{id}");
            assert!(seen.insert(id), "an id repeated after {n}");
        }
        assert_eq!(super::random_hex(5).unwrap().len(), 10);
    }
}
