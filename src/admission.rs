//! Connection slots that idle or half-sent connections cannot take from real requests, for
//! both loopback servers (`serve --http`, the loopback form).
//!
//! A connection is *pending* from accept until it has sent a request the server accepts
//! (for `--http`, one that passed the token check; for the form, one for its own path),
//! and *proven* after. Pending ones are few and cheap to lose: when one more arrives than
//! there is room for, the oldest pending one is closed. A flood of connections that never
//! send anything therefore only ever displaces its own kind, while a client that sends its
//! request as soon as it connects (every real one) is proven before the flood reaches it.
//! Proven connections have a cap of their own, past which a request is answered 503.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::{CancellationToken, WaitForCancellationFuture};

pub struct Admission {
    pending_max: usize,
    pending: Mutex<Pending>,
    proven: Arc<Semaphore>,
}

#[derive(Default)]
struct Pending {
    next: u64,
    /// Oldest first.
    queue: VecDeque<(u64, CancellationToken)>,
}

/// One connection's place; dropping it frees the place.
pub struct Ticket {
    admission: Arc<Admission>,
    id: u64,
    evicted: CancellationToken,
    proven: Mutex<Option<OwnedSemaphorePermit>>,
}

/// Whether a request may be served on a ticket's connection.
#[derive(Debug, PartialEq, Eq)]
pub enum Proof {
    Proven,
    /// Every proven slot is taken: answer 503 and close.
    Full,
}

impl Admission {
    pub fn new(pending_max: usize, proven_max: usize) -> Arc<Admission> {
        Arc::new(Admission {
            pending_max: pending_max.max(1),
            pending: Mutex::new(Pending::default()),
            proven: Arc::new(Semaphore::new(proven_max)),
        })
    }

    /// A place for a connection just accepted, closing the oldest pending one if needed.
    pub fn enter(self: &Arc<Self>) -> Ticket {
        let evicted = CancellationToken::new();
        let mut pending = self.lock();
        let id = pending.next;
        pending.next += 1;
        pending.queue.push_back((id, evicted.clone()));
        while pending.queue.len() > self.pending_max {
            if let Some((_, oldest)) = pending.queue.pop_front() {
                oldest.cancel();
            }
        }
        drop(pending);
        Ticket {
            admission: self.clone(),
            id,
            evicted,
            proven: Mutex::new(None),
        }
    }

    pub fn pending(&self) -> usize {
        self.lock().queue.len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Pending> {
        self.pending.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn leave_pending(&self, id: u64) {
        self.lock().queue.retain(|(other, _)| *other != id);
    }
}

impl Ticket {
    /// Resolves when a newer connection took this one's pending place; never once proven.
    pub fn evicted(&self) -> WaitForCancellationFuture<'_> {
        self.evicted.cancelled()
    }

    /// The connection sent an acceptable request: it leaves the pending queue for good and
    /// holds a proven slot until it closes. Idempotent, so every request may call it.
    pub fn prove(&self) -> Proof {
        let mut proven = self.proven.lock().unwrap_or_else(|p| p.into_inner());
        if proven.is_some() {
            return Proof::Proven;
        }
        match self.admission.proven.clone().try_acquire_owned() {
            Ok(permit) => {
                *proven = Some(permit);
                self.admission.leave_pending(self.id);
                Proof::Proven
            }
            Err(_) => Proof::Full,
        }
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        self.admission.leave_pending(self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_arrival_past_the_pending_cap_closes_the_oldest_pending_one() {
        let admission = Admission::new(2, 8);
        let first = admission.enter();
        let second = admission.enter();
        assert!(!first.evicted.is_cancelled());
        let third = admission.enter();
        assert!(first.evicted.is_cancelled());
        assert!(!second.evicted.is_cancelled() && !third.evicted.is_cancelled());
        assert_eq!(admission.pending(), 2);
    }

    #[test]
    fn a_proven_connection_is_never_evicted_and_frees_its_pending_place() {
        let admission = Admission::new(1, 8);
        let real = admission.enter();
        assert_eq!(real.prove(), Proof::Proven);
        assert_eq!(admission.pending(), 0);
        let flood: Vec<Ticket> = (0..100).map(|_| admission.enter()).collect();
        assert!(!real.evicted.is_cancelled());
        assert_eq!(
            flood.iter().filter(|t| !t.evicted.is_cancelled()).count(),
            1
        );
        assert_eq!(
            real.prove(),
            Proof::Proven,
            "proving twice keeps the one slot"
        );
    }

    #[test]
    fn past_the_proven_cap_a_request_is_refused_until_a_slot_frees() {
        let admission = Admission::new(8, 1);
        let (a, b) = (admission.enter(), admission.enter());
        assert_eq!(a.prove(), Proof::Proven);
        assert_eq!(b.prove(), Proof::Full);
        assert_eq!(admission.pending(), 1, "b stays pending");
        drop(a);
        assert_eq!(b.prove(), Proof::Proven);
        drop(b);
        assert_eq!(admission.pending(), 0);
    }
}
