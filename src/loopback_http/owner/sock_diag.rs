//! One socket's owner from the kernel by its addresses (`sock_diag`, netlink(7)), the way
//! `ss` asks: a lookup in the kernel's connection hash, where reading `/proc/net/tcp` walks
//! every socket of the machine, each time, and slows to milliseconds on a busy one.
//!
//! A request without `NLM_F_DUMP` asks for exactly one socket (`inet_diag_find_one_icsk`):
//! the one whose own address is `own` and whose remote address is `remote`.

use std::net::{IpAddr, SocketAddr};
use std::os::fd::AsRawFd;
use std::time::Duration;

use nix::sys::socket::{
    self, AddressFamily, MsgFlags, NetlinkAddr, SockFlag, SockProtocol, SockType, sockopt,
};
use nix::sys::time::TimeVal;

use super::Owner;

const SOCK_DIAG_BY_FAMILY: u16 = 20;
const NLMSG_ERROR: u16 = 2;
const NLM_F_REQUEST: u16 = 1;
const NLMSG_HEADER: usize = 16;
/// `struct inet_diag_req_v2`.
const REQUEST_BODY: usize = 56;
const IPPROTO_TCP: u8 = 6;
/// `struct inet_diag_msg`: family, state, timer, retrans, the socket id (48 bytes),
/// expires, rqueue, wqueue, then these two.
const UID_AT: usize = 64;
const INODE_AT: usize = 68;

/// `Ok(None)`: the kernel knows no such socket (or cannot say, without `tcp_diag`).
pub fn owner(own: SocketAddr, remote: SocketAddr) -> Result<Option<Owner>, String> {
    let fd = socket::socket(
        AddressFamily::Netlink,
        SockType::Datagram,
        SockFlag::SOCK_CLOEXEC,
        SockProtocol::NetlinkSockDiag,
    )
    .map_err(|err| format!("netlink socket: {err}"))?;
    // The reply is queued before `sendto` returns; the timeout is only a backstop.
    let patience = TimeVal::from(libc_timeval(Duration::from_secs(1)));
    socket::setsockopt(&fd, sockopt::ReceiveTimeout, &patience)
        .map_err(|err| format!("netlink timeout: {err}"))?;
    let request = request(own, remote);
    socket::sendto(
        fd.as_raw_fd(),
        &request,
        &NetlinkAddr::new(0, 0),
        MsgFlags::empty(),
    )
    .map_err(|err| format!("netlink send: {err}"))?;
    let mut reply = [0u8; 512];
    let len = socket::recv(fd.as_raw_fd(), &mut reply, MsgFlags::empty())
        .map_err(|err| format!("netlink receive: {err}"))?;
    parse(&reply[..len])
}

fn libc_timeval(patience: Duration) -> nix::libc::timeval {
    nix::libc::timeval {
        tv_sec: patience.as_secs() as _,
        tv_usec: patience.subsec_micros() as _,
    }
}

fn request(own: SocketAddr, remote: SocketAddr) -> Vec<u8> {
    let mut out = Vec::with_capacity(NLMSG_HEADER + REQUEST_BODY);
    out.extend(((NLMSG_HEADER + REQUEST_BODY) as u32).to_ne_bytes());
    out.extend(SOCK_DIAG_BY_FAMILY.to_ne_bytes());
    out.extend(NLM_F_REQUEST.to_ne_bytes());
    out.extend(1u32.to_ne_bytes()); // sequence number
    out.extend(0u32.to_ne_bytes()); // port id: the kernel's
    let family = match own.ip() {
        IpAddr::V4(_) => nix::libc::AF_INET as u8,
        IpAddr::V6(_) => nix::libc::AF_INET6 as u8,
    };
    out.extend([family, IPPROTO_TCP, 0, 0]);
    out.extend(u32::MAX.to_ne_bytes()); // every state
    out.extend(own.port().to_be_bytes());
    out.extend(remote.port().to_be_bytes());
    out.extend(address(own.ip()));
    out.extend(address(remote.ip()));
    out.extend(0u32.to_ne_bytes()); // any interface
    out.extend([0xff; 8]); // INET_DIAG_NOCOOKIE
    out
}

/// Sixteen bytes in network order; an IPv4 address in the first four.
fn address(ip: IpAddr) -> [u8; 16] {
    let mut out = [0u8; 16];
    match ip {
        IpAddr::V4(v4) => out[..4].copy_from_slice(&v4.octets()),
        IpAddr::V6(v6) => out = v6.octets(),
    }
    out
}

fn parse(reply: &[u8]) -> Result<Option<Owner>, String> {
    let word = |at: usize| -> Option<u32> {
        Some(u32::from_ne_bytes(reply.get(at..at + 4)?.try_into().ok()?))
    };
    let kind = reply
        .get(4..6)
        .map(|b| u16::from_ne_bytes([b[0], b[1]]))
        .ok_or("netlink: a short reply")?;
    match kind {
        SOCK_DIAG_BY_FAMILY => {
            let (Some(uid), Some(inode)) =
                (word(NLMSG_HEADER + UID_AT), word(NLMSG_HEADER + INODE_AT))
            else {
                return Err("netlink: a short socket description".into());
            };
            Ok(Some(Owner {
                uid,
                inode: inode.into(),
            }))
        }
        NLMSG_ERROR => match word(NLMSG_HEADER).map(|e| e as i32) {
            Some(e) if e == -nix::libc::ENOENT => Ok(None),
            Some(e) => Err(format!(
                "netlink: {}",
                nix::errno::Errno::from_raw(-e).desc()
            )),
            None => Err("netlink: a short error".into()),
        },
        other => Err(format!("netlink: unexpected reply type {other}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kernel_names_the_owner_of_each_end_of_a_loopback_connection() {
        let listener = std::net::TcpListener::bind(("127.0.0.1", 0)).expect("bind");
        let client =
            std::net::TcpStream::connect(listener.local_addr().expect("addr")).expect("connect");
        let (server, from) = listener.accept().expect("accept");
        let local = server.local_addr().expect("local");
        let uid = nix::unistd::getuid().as_raw();
        let peer = owner(from, local)
            .expect("sock_diag")
            .expect("the client's socket");
        assert_eq!(peer.uid, uid);
        assert_ne!(peer.inode, 0);
        let unknown = SocketAddr::from(([127, 0, 0, 1], 1));
        assert_eq!(owner(unknown, local).expect("sock_diag"), None);
        drop((client, server));
    }

    #[test]
    fn an_error_reply_is_read_as_its_errno() {
        let mut reply = vec![0u8; 36];
        reply[4..6].copy_from_slice(&NLMSG_ERROR.to_ne_bytes());
        reply[16..20].copy_from_slice(&(-nix::libc::ENOENT).to_ne_bytes());
        assert_eq!(parse(&reply), Ok(None));
        reply[16..20].copy_from_slice(&(-nix::libc::EPERM).to_ne_bytes());
        assert!(parse(&reply).is_err_and(|e| e.contains("not permitted")));
        assert!(parse(&reply[..3]).is_err());
    }
}
