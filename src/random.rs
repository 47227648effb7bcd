//! Unguessable identifiers: question ids and loopback-form tokens (128 bits, hex).

use std::io::Read;
use std::sync::{Mutex, OnceLock};

/// Randomness read from the operating system ahead of need, 256 ids' worth at a time: a
/// read is a system call and a run of the kernel's generator on every question's path.
/// Bytes are handed out once and wiped from the buffer as they go.
struct Reserve {
    bytes: [u8; RESERVE],
    used: usize,
}

const RESERVE: usize = 4096;

fn urandom() -> std::io::Result<&'static std::fs::File> {
    static URANDOM: OnceLock<std::fs::File> = OnceLock::new();
    match URANDOM.get() {
        Some(file) => Ok(file),
        None => {
            let opened = std::fs::File::open("/dev/urandom")?;
            Ok(URANDOM.get_or_init(|| opened))
        }
    }
}

/// Fills `out` from the operating system's CSPRNG.
fn fill_random(out: &mut [u8]) -> std::io::Result<()> {
    static RESERVED: Mutex<Reserve> = Mutex::new(Reserve {
        bytes: [0; RESERVE],
        used: RESERVE,
    });
    if out.len() > RESERVE {
        return urandom()?.read_exact(out);
    }
    let mut reserve = RESERVED.lock().unwrap_or_else(|p| p.into_inner());
    if reserve.used + out.len() > RESERVE {
        urandom()?.read_exact(&mut reserve.bytes)?;
        reserve.used = 0;
    }
    let taken = reserve.used..reserve.used + out.len();
    out.copy_from_slice(&reserve.bytes[taken.clone()]);
    reserve.bytes[taken].fill(0);
    reserve.used += out.len();
    Ok(())
}

/// `n` bytes from the operating system's CSPRNG, as lowercase hex.
pub fn random_hex(n: usize) -> std::io::Result<String> {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut bytes = vec![0u8; n];
    fill_random(&mut bytes)?;
    let mut hex = String::with_capacity(2 * n);
    for b in &bytes {
        hex.push(char::from(DIGITS[usize::from(b >> 4)]));
        hex.push(char::from(DIGITS[usize::from(b & 0xf)]));
    }
    bytes.fill(0);
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

    #[test]
    fn ids_stay_distinct_across_refills_of_the_reserve() {
        // 1,000 ids take 16,000 bytes: the 4 KiB reserve is refilled several times, and
        // odd-sized takes leave it at uneven offsets.
        let mut seen = std::collections::HashSet::new();
        for n in 0..1000 {
            let id = super::question_id().unwrap();
            assert!(crate::relay::is_question_id(&id), "{id}");
            assert!(seen.insert(id), "an id repeated after {n}");
            let odd = super::random_hex(1 + n % 7).unwrap();
            assert_eq!(odd.len(), 2 * (1 + n % 7));
        }
        // Larger than the reserve: read directly.
        assert_eq!(super::random_hex(5000).unwrap().len(), 10_000);
    }
}
