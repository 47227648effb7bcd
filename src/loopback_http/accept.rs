//! The one accept loop of both loopback servers (`serve --http`, the loopback form).
//!
//! ```text
//!  accept (a place free) ──► task per connection: owner check (blocking pool) ──► serve
//!                                                  another user's: closed unread
//!                                                  evicted for a newer one: closed
//! ```
//!
//! The loop itself does nothing that can block: whose process is calling is asked of the
//! kernel (netlink, else `/proc/net`) on the blocking pool, inside the connection's own task,
//! so a slow answer delays only that connection and never the SSE keep-alives or the other
//! requests on the same runtime. The connection holds its pending place while it waits for
//! its check ([`Admission`]), and at most [`MAX_LOOKUPS`] checks run at once: a lookup on the
//! blocking pool cannot be cancelled, so one whose connection was evicted meanwhile still
//! holds its turn until the kernel answers.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use super::admission::{Admission, Ticket};
use super::owner::{self, Caller};

/// Owner lookups running at once, per server. Each normally takes microseconds; the bound
/// matters only when the kernel is slow to answer (netlink waits up to a second).
pub const MAX_LOOKUPS: usize = 16;

/// How long to wait after a failed accept (out of descriptors, usually) before the next.
const ACCEPT_RETRY: Duration = Duration::from_millis(100);

/// Who may connect, and what the log calls the server.
#[derive(Debug, Clone, Copy)]
pub struct Door {
    /// Only this user's processes (every loopback server; `--allow-remote` turns it off).
    pub same_user_only: bool,
    /// "serve --http" or "loopback form", for the log.
    pub server: &'static str,
}

/// Accepts on `listener` until `until` resolves, and returns its output. Each connection
/// gets a place from `admission`, is checked (another user's is closed before a byte of it
/// is read), and is then served by `serve` in a task of `connections`, which the caller
/// keeps for as long as connections may finish (the form lets requests under way end; the
/// caller drops the set to close the rest). A connection evicted from its pending place is
/// closed wherever it is.
pub async fn accept_until<T, S, F>(
    listener: &TcpListener,
    admission: &Arc<Admission>,
    door: Door,
    connections: &mut JoinSet<()>,
    until: impl Future<Output = T>,
    serve: S,
) -> T
where
    S: Fn(TcpStream, Arc<Ticket>) -> F,
    F: Future<Output = ()> + Send + 'static,
{
    tokio::pin!(until);
    let lookups = Arc::new(Semaphore::new(MAX_LOOKUPS));
    loop {
        tokio::select! {
            ended = &mut until => return ended,
            accepted = async {
                admission.room().await;
                listener.accept().await
            } => match accepted {
                Ok((stream, from)) => {
                    let ticket = Arc::new(admission.enter());
                    let local = stream.local_addr();
                    // Made now, run only once the caller is known to be this user.
                    let served = serve(stream, ticket.clone());
                    let lookups = lookups.clone();
                    connections.spawn(async move {
                        tokio::select! {
                            _ = async {
                                if admitted(door, local, from, &lookups).await {
                                    served.await;
                                }
                            } => {}
                            _ = ticket.evicted() => tracing::debug!(
                                "{}: closed a connection that sent no acceptable request, to make room",
                                door.server
                            ),
                        }
                    });
                }
                Err(err) => {
                    tracing::warn!("{}: cannot accept a connection: {err}", door.server);
                    tokio::time::sleep(ACCEPT_RETRY).await;
                }
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
}

/// Whether the connection from `from`, accepted on `local`, may be served: any caller where
/// the door is open to all, else only a process of this user (asked on the blocking pool).
async fn admitted(
    door: Door,
    local: std::io::Result<SocketAddr>,
    from: SocketAddr,
    lookups: &Arc<Semaphore>,
) -> bool {
    if !door.same_user_only {
        return true;
    }
    let Ok(turn) = lookups.clone().acquire_owned().await else {
        return false;
    };
    let why = match local {
        Ok(local) => match tokio::task::spawn_blocking(move || {
            let _turn = turn;
            owner::check(local, from)
        })
        .await
        {
            Ok(Caller::Same | Caller::Unknowable) => return true,
            Ok(Caller::Refused(why)) => why,
            Err(err) => format!("its owner could not be looked up: {err}"),
        },
        Err(err) => format!("its local address is unknown: {err}"),
    };
    tracing::warn!("{}: refused a connection from {from}: {why}", door.server);
    false
}
