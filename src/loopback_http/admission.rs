//! Connection slots that idle or half-sent connections cannot take from real requests, for
//! both loopback servers (`serve --http`, the loopback form).
//!
//! A connection is *pending* from accept until it has sent a request the server accepts
//! (for `--http`, one that passed the token check; for the form, one for its own path),
//! and *proven* after. Pending ones have few places: when they are all taken, the server
//! accepts the next connection only once the oldest pending one has had [`Admission`]'s
//! `grace` — time enough to send a request head, which a real client sends as soon as it
//! connects — and closes that one to make room. Waiting connections queue in the kernel's
//! listen backlog ([`listen`]: deep enough that the kernel does not drop their SYNs, which
//! would cost a real client seconds of retransmits), first come first served, so a flood of idle or
//! half-sent connections, however fast it reconnects, delays a real client by about (flood ÷
//! places) × grace and never shuts it out, and never holds more descriptors than the places. Proven
//! connections have a cap of their own, past which a request is answered 503.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::net::{TcpListener, TcpSocket};
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;
use tokio_util::sync::{CancellationToken, WaitForCancellationFuture};

/// Connections the kernel may hold for us before `accept` (capped by `net.core.somaxconn`,
/// 4096 by default). Rust's and tokio's `bind` ask for 128, fewer than a flood waiting for
/// the pending places holds, and a dropped SYN is retried only after one second, then three.
const LISTEN_BACKLOG: u32 = 1024;

/// A listening socket on `addr`, with a backlog deep enough for [`Admission`].
pub fn listen(addr: SocketAddr) -> std::io::Result<TcpListener> {
    let socket = match addr {
        SocketAddr::V4(_) => TcpSocket::new_v4()?,
        SocketAddr::V6(_) => TcpSocket::new_v6()?,
    };
    // As std's and tokio's `bind` do: a restarted server can listen again at once.
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(LISTEN_BACKLOG)
}

pub struct Admission {
    pending_max: usize,
    grace: Duration,
    pending: Mutex<Pending>,
    /// A pending connection left (proven or closed): there may be room.
    left: Notify,
    proven: Arc<Semaphore>,
}

#[derive(Default)]
struct Pending {
    next: u64,
    /// Oldest first: id, when it was accepted, how to close it.
    queue: VecDeque<(u64, Instant, CancellationToken)>,
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
    pub fn new(pending_max: usize, grace: Duration, proven_max: usize) -> Arc<Admission> {
        Arc::new(Admission {
            pending_max: pending_max.max(1),
            grace,
            pending: Mutex::new(Pending::default()),
            left: Notify::new(),
            proven: Arc::new(Semaphore::new(proven_max)),
        })
    }

    /// Returns once a pending place is free, closing the oldest pending connection when it
    /// has had its grace. The caller then accepts one connection and [`enter`]s it; only
    /// one task may do this (the accept loop), so the room cannot be taken in between.
    ///
    /// [`enter`]: Admission::enter
    pub async fn room(&self) {
        loop {
            let wait = {
                let mut pending = self.lock();
                let Some(&(_, since, _)) = pending.queue.front() else {
                    return;
                };
                if pending.queue.len() < self.pending_max {
                    return;
                }
                let waited = since.elapsed();
                if waited >= self.grace {
                    if let Some((_, _, oldest)) = pending.queue.pop_front() {
                        oldest.cancel();
                    }
                    return;
                }
                self.grace - waited
            };
            tokio::select! {
                _ = self.left.notified() => {}
                _ = tokio::time::sleep(wait) => {}
            }
        }
    }

    /// A place for a connection just accepted.
    pub fn enter(self: &Arc<Self>) -> Ticket {
        let evicted = CancellationToken::new();
        let mut pending = self.lock();
        let id = pending.next;
        pending.next += 1;
        pending
            .queue
            .push_back((id, Instant::now(), evicted.clone()));
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
        let mut pending = self.lock();
        let before = pending.queue.len();
        pending.queue.retain(|(other, _, _)| *other != id);
        if pending.queue.len() < before {
            self.left.notify_one();
        }
    }
}

impl Ticket {
    /// Resolves when this connection's pending place was taken for a newer one; never once
    /// proven.
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

    const GRACE: Duration = Duration::from_millis(200);

    async fn admitted(admission: &Arc<Admission>) -> Ticket {
        admission.room().await;
        admission.enter()
    }

    #[tokio::test(start_paused = true)]
    async fn when_full_the_next_connection_waits_for_the_oldest_to_have_its_grace() {
        let admission = Admission::new(2, GRACE, 8);
        let first = admitted(&admission).await;
        tokio::time::sleep(GRACE / 2).await;
        let second = admitted(&admission).await;
        let start = Instant::now();
        let third = admitted(&admission).await;
        assert_eq!(
            start.elapsed(),
            GRACE / 2,
            "waited out the first one's grace"
        );
        assert!(first.evicted.is_cancelled());
        assert!(!second.evicted.is_cancelled() && !third.evicted.is_cancelled());
        assert_eq!(admission.pending(), 2);
    }

    #[tokio::test(start_paused = true)]
    async fn a_place_freed_by_a_proven_or_closed_connection_is_taken_at_once() {
        let admission = Admission::new(2, GRACE, 8);
        let (first, second) = (admitted(&admission).await, admitted(&admission).await);
        let start = Instant::now();
        let waiting = tokio::spawn({
            let admission = admission.clone();
            async move { admitted(&admission).await }
        });
        tokio::time::sleep(Duration::from_millis(10)).await;
        assert_eq!(first.prove(), Proof::Proven);
        let third = waiting.await.expect("admitted");
        assert_eq!(start.elapsed(), Duration::from_millis(10));
        assert!(!second.evicted.is_cancelled());
        drop(second);
        let start = Instant::now();
        let _fourth = admitted(&admission).await;
        assert_eq!(start.elapsed(), Duration::ZERO);
        drop(third);
    }

    #[tokio::test(start_paused = true)]
    async fn a_proven_connection_is_never_closed_to_make_room() {
        let admission = Admission::new(1, GRACE, 8);
        let real = admitted(&admission).await;
        assert_eq!(real.prove(), Proof::Proven);
        assert_eq!(admission.pending(), 0);
        let mut flood = Vec::new();
        for _ in 0..10 {
            flood.push(admitted(&admission).await);
        }
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

    #[tokio::test(start_paused = true)]
    async fn past_the_proven_cap_a_request_is_refused_until_a_slot_frees() {
        let admission = Admission::new(8, GRACE, 1);
        let (a, b) = (admitted(&admission).await, admitted(&admission).await);
        assert_eq!(a.prove(), Proof::Proven);
        assert_eq!(b.prove(), Proof::Full);
        assert_eq!(admission.pending(), 1, "b stays pending");
        drop(a);
        assert_eq!(b.prove(), Proof::Proven);
        drop(b);
        assert_eq!(admission.pending(), 0);
    }
}
