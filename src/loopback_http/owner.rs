//! Whose process is at the other end of a loopback TCP connection (DESIGN.md §1 and §6).
//!
//! The Unix sockets check `peer_cred`; a TCP socket has no such call, but on Linux the
//! kernel keeps every socket's owner and tells it: `sock_diag` (`sock_diag.rs`) looks the
//! far end up by its addresses, and the socket tables under `/proc/net` (`proc_net.rs`)
//! list it where netlink cannot answer. The peer of a connection accepted on `local` from
//! `peer` is the socket whose own address is `peer` and whose remote address is `local`.
//! One with no inode belongs to no process any more (its owner closed it and it lingers in
//! FIN_WAIT or TIME_WAIT, shown as uid 0), so it, like a missing socket or a failed lookup,
//! is refused: only a positive answer of this user's uid admits.
//!
//! Both loopback servers ask once per connection, before reading a byte of it: the loopback
//! form, whose token another user could read in an opener's arguments, and `serve --http`,
//! whose port another user could take while it is down and so learn the token.

#[cfg(target_os = "linux")]
mod proc_net;
#[cfg(target_os = "linux")]
mod sock_diag;

use std::net::SocketAddr;

#[cfg(target_os = "linux")]
pub use proc_net::listener_uid;

/// What the kernel says about a connection's far end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Caller {
    /// A process of this user.
    Same,
    /// Refused, and why (for the log: a uid, never a token).
    Refused(String),
    /// This platform cannot tell (macOS): the token alone holds.
    Unknowable,
}

/// Whether the connection accepted on `local` from `peer` comes from this user.
pub fn check(local: SocketAddr, peer: SocketAddr) -> Caller {
    check_against(local, peer, crate::wire::runtime::current_uid())
}

#[cfg(target_os = "linux")]
fn check_against(local: SocketAddr, peer: SocketAddr, uid: u32) -> Caller {
    match owner(local, peer) {
        Ok(Some(owner)) => judge(owner, uid),
        Ok(None) => Caller::Refused(format!("no socket of {peer} is connected to {local}")),
        Err(why) => Caller::Refused(why),
    }
}

/// The kernel's connection hash first; the tables while netlink has not yet shown that it
/// answers here (a kernel without `tcp_diag` says "no such socket" to every question).
#[cfg(target_os = "linux")]
fn owner(local: SocketAddr, peer: SocketAddr) -> Result<Option<Owner>, String> {
    use std::sync::atomic::{AtomicBool, Ordering};
    static SOCK_DIAG_ANSWERS: AtomicBool = AtomicBool::new(false);
    match sock_diag::owner(peer, local) {
        Ok(Some(owner)) => {
            SOCK_DIAG_ANSWERS.store(true, Ordering::Relaxed);
            Ok(Some(owner))
        }
        Ok(None) if SOCK_DIAG_ANSWERS.load(Ordering::Relaxed) => Ok(None),
        Ok(None) | Err(_) => proc_net::owner(local, peer),
    }
}

#[cfg(not(target_os = "linux"))]
fn check_against(_local: SocketAddr, _peer: SocketAddr, _uid: u32) -> Caller {
    Caller::Unknowable
}

#[cfg(not(target_os = "linux"))]
pub fn listener_uid(_addr: SocketAddr) -> Result<Option<u32>, String> {
    Err("this platform does not say who owns a socket".into())
}

/// The owner of one socket, as the kernel says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Owner {
    uid: u32,
    inode: u64,
}

fn judge(owner: Owner, uid: u32) -> Caller {
    if owner.inode == 0 {
        Caller::Refused("its socket belongs to no process any more".into())
    } else if owner.uid != uid {
        Caller::Refused(format!("it belongs to uid {}, not {uid}", owner.uid))
    } else {
        Caller::Same
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_live_socket_of_this_uid_is_the_same_user() {
        assert_eq!(
            judge(
                Owner {
                    uid: 1000,
                    inode: 5
                },
                1000
            ),
            Caller::Same
        );
        assert!(
            matches!(judge(Owner { uid: 1001, inode: 5 }, 1000), Caller::Refused(why) if why.contains("uid 1001"))
        );
        // A socket left in TIME_WAIT shows uid 0 and inode 0; as root that must not pass.
        assert!(
            matches!(judge(Owner { uid: 0, inode: 0 }, 0), Caller::Refused(why) if why.contains("no process"))
        );
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_connection_from_this_process_is_the_same_user_and_a_closed_one_is_not() {
        use std::net::{TcpListener, TcpStream};
        let listener = TcpListener::bind(("127.0.0.1", 0)).expect("bind");
        let client = TcpStream::connect(listener.local_addr().expect("addr")).expect("connect");
        let (server, from) = listener.accept().expect("accept");
        let local = server.local_addr().expect("local");
        assert_eq!(check(local, from), Caller::Same);
        assert!(
            matches!(check_against(local, from, u32::MAX), Caller::Refused(why) if why.contains("belongs to uid"))
        );
        drop(client);
        // The closed client end lingers in FIN_WAIT2 with no inode, or is gone.
        assert!(matches!(check(local, from), Caller::Refused(_)));
    }
}
