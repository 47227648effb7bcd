//! The wall clock, in the one unit the wire and the store use.

use std::time::{SystemTime, UNIX_EPOCH};

/// Now, in Unix milliseconds (the clock of `asked_at_ms`, of deadlines sent to hosts, of the
/// sealed retry state and of kept questions).
pub fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}
