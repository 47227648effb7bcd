//! How a session's questions end when the session does, on either transport.
//!
//! Each server keeps its session's pool in a [`PoolSlot`], one per session, shared by every
//! clone of the `HimServer`; dropped with the last of them, it withdraws what is still
//! open (what a browser has is kept for a late answer, `Pool::shutdown`). rmcp holds the
//! server in one `Arc` for the session's life and gives each request task a clone of that
//! `Arc`, not of the server, so the slot drops when rmcp is done with the session. That is
//! how a 2026-07-28 sessionless request ends: rmcp drops its server as soon as the response
//! is sent or the client goes away (it cancels the call then).
//!
//! For a session it is not soon enough. When a session's input ends (stdio EOF, an HTTP
//! DELETE, a session closed for being idle or abandoned) rmcp gives calls still running 5 s
//! to finish before it cancels them, and ours wait for a person: their questions would stay
//! in the panel 5 s after the client was gone, then end as `cancelled`. So the transport is
//! wrapped ([`WithdrawOnEof`]) and says at once when its input ends. Over HTTP the transport
//! is rmcp's, made by the session manager apart from the server, so the wrapper also hands
//! every request a [`SessionEnd`]: the server attaches its slot to it when it makes its pool,
//! and the end reaches the pool without any table of sessions and servers.

use std::future::Future;
use std::sync::{Arc, Mutex, OnceLock, Weak};

use rmcp::RoleServer;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;

use crate::agent::pool::Pool;

/// One session's pool, made on its first question; dropped, it withdraws what is open.
#[derive(Default)]
pub struct PoolSlot(OnceLock<Pool>);

impl PoolSlot {
    pub fn get(&self) -> Option<&Pool> {
        self.0.get()
    }

    pub fn get_or_init(&self, make: impl FnOnce() -> Pool) -> &Pool {
        self.0.get_or_init(make)
    }

    /// Withdraws every question still open (kept as `Pool::shutdown` says).
    pub fn shutdown(&self) {
        if let Some(pool) = self.0.get() {
            pool.shutdown();
        }
    }
}

impl Drop for PoolSlot {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// The end of one session's input, shared by its transport and its server.
#[derive(Clone, Default)]
pub struct SessionEnd(Arc<Mutex<Ending>>);

#[derive(Default)]
struct Ending {
    slot: Option<Weak<PoolSlot>>,
    ended: bool,
}

impl SessionEnd {
    /// The session's pool lives in `slot`; if the session has already ended, it is shut
    /// down at once.
    pub fn attach(&self, slot: &Arc<PoolSlot>) {
        let ended = {
            let mut ending = self.lock();
            ending.slot = Some(Arc::downgrade(slot));
            ending.ended
        };
        if ended {
            slot.shutdown();
        }
    }

    /// The session's input ended: its questions are withdrawn now.
    pub fn end(&self) {
        let slot = {
            let mut ending = self.lock();
            ending.ended = true;
            ending.slot.as_ref().and_then(Weak::upgrade)
        };
        if let Some(slot) = slot {
            slot.shutdown();
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Ending> {
        // Two field writes; a panic elsewhere cannot leave them half done.
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A transport that reports the end of its input at once, and (over HTTP) hands every
/// request its session's [`SessionEnd`].
pub struct WithdrawOnEof<T> {
    inner: T,
    on_eof: Option<Box<dyn FnOnce() + Send>>,
    /// Put in each request's extensions, for the server to attach its pool to.
    tag: Option<SessionEnd>,
}

impl<T> WithdrawOnEof<T> {
    /// `on_eof` runs once, when `inner` has no more messages.
    pub fn new(inner: T, on_eof: Box<dyn FnOnce() + Send>) -> Self {
        WithdrawOnEof {
            inner,
            on_eof: Some(on_eof),
            tag: None,
        }
    }

    /// A session whose server is not known here: `end` reaches it through its requests.
    pub fn tagging(inner: T, end: SessionEnd) -> Self {
        let ends = end.clone();
        WithdrawOnEof {
            inner,
            on_eof: Some(Box::new(move || ends.end())),
            tag: Some(end),
        }
    }
}

impl<T: Transport<RoleServer>> Transport<RoleServer> for WithdrawOnEof<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        // Cancel-safe as rmcp's own: nothing happens here until the inner read completes.
        let mut message = self.inner.receive().await;
        match (&mut message, &self.tag) {
            (Some(message @ rmcp::model::JsonRpcMessage::Request(_)), Some(end)) => {
                message.insert_extension(end.clone());
            }
            (None, _) => {
                if let Some(on_eof) = self.on_eof.take() {
                    on_eof();
                }
            }
            _ => {}
        }
        message
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_end_before_the_pool_is_attached_still_reaches_it() {
        let end = SessionEnd::default();
        end.end();
        let slot = Arc::new(PoolSlot::default());
        // No pool yet: nothing to withdraw, and nothing panics.
        end.attach(&slot);
        assert!(end.lock().ended);
        assert!(
            end.lock()
                .slot
                .as_ref()
                .is_some_and(|s| s.upgrade().is_some())
        );
        drop(slot);
        // The end holds the slot weakly: the server's going is not delayed by it.
        assert!(
            end.lock()
                .slot
                .as_ref()
                .is_some_and(|s| s.upgrade().is_none())
        );
    }
}
