//! Unguessable identifiers: question ids and loopback-form tokens (128 bits, hex).

use std::io::Read;

/// `n` bytes from the operating system's CSPRNG, as lowercase hex.
pub fn random_hex(n: usize) -> std::io::Result<String> {
    let mut bytes = vec![0u8; n];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// A fresh question id: 128 random bits.
pub fn question_id() -> std::io::Result<String> {
    random_hex(16)
}

#[cfg(test)]
mod tests {
    #[test]
    fn ids_are_32_hex_digits_and_differ() {
        let a = super::question_id().unwrap();
        let b = super::question_id().unwrap();
        assert_eq!(a.len(), 32);
        assert!(crate::relay::is_question_id(&a));
        assert_ne!(a, b);
    }
}
