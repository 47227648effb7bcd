//! rmcp's own stdio transport, with one thing added: the end of the client's input is
//! reported at once. rmcp then gives calls in progress 5 s to finish before it drops them;
//! ours wait for a person, so they are withdrawn instead — the panel clears at once, and
//! each call ends as `cancelled`, its result still written.

use std::future::Future;

use rmcp::RoleServer;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;

pub struct WithdrawOnEof<T> {
    inner: T,
    on_eof: Option<Box<dyn FnOnce() + Send>>,
}

impl<T> WithdrawOnEof<T> {
    /// `on_eof` runs once, when `inner` has no more messages.
    pub fn new(inner: T, on_eof: Box<dyn FnOnce() + Send>) -> Self {
        WithdrawOnEof {
            inner,
            on_eof: Some(on_eof),
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
        let message = self.inner.receive().await;
        if message.is_none()
            && let Some(on_eof) = self.on_eof.take()
        {
            on_eof();
        }
        message
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}
