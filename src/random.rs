//! Unguessable identifiers: question ids and loopback-form tokens (128 bits, hex).

use std::io::Read;
use std::sync::OnceLock;

/// `n` bytes from the operating system's CSPRNG, as lowercase hex.
pub fn random_hex(n: usize) -> std::io::Result<String> {
    // Opened once: every question needs an id, and reopening costs two system calls more.
    static URANDOM: OnceLock<std::fs::File> = OnceLock::new();
    let file = match URANDOM.get() {
        Some(file) => file,
        None => {
            let opened = std::fs::File::open("/dev/urandom")?;
            URANDOM.get_or_init(|| opened)
        }
    };
    let mut bytes = vec![0u8; n];
    (&*file).read_exact(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
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
        assert!(crate::relay::is_question_id(&a));
        assert_ne!(a, b);
    }
}
