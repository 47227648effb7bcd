//! The kernel's socket tables, `/proc/net/tcp` and `/proc/net/tcp6`: one row per socket of
//! this network namespace with its addresses, state, owner and inode. Read whole, so slow
//! on a machine with many sockets: `sock_diag` answers a connection's owner where it can,
//! and this answers the rest — the listener on a port for `him doctor`, and kernels
//! without `tcp_diag`.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use super::Owner;

const TABLES: [&str; 2] = ["/proc/net/tcp", "/proc/net/tcp6"];

/// The owner of the socket at `peer` connected to `local`, from either table.
pub fn owner(local: SocketAddr, peer: SocketAddr) -> Result<Option<Owner>, String> {
    let mut unreadable = Vec::new();
    for table in TABLES {
        match std::fs::read_to_string(table) {
            Ok(text) => {
                if let Some(owner) = owner_in(&text, local, peer) {
                    return Ok(Some(owner));
                }
            }
            Err(err) => unreadable.push(format!("{table}: {err}")),
        }
    }
    if unreadable.is_empty() {
        Ok(None)
    } else {
        Err(format!(
            "cannot read the socket tables ({})",
            unreadable.join("; ")
        ))
    }
}

/// The owner of the socket at `peer` connected to `local`, from one table's text.
fn owner_in(table: &str, local: SocketAddr, peer: SocketAddr) -> Option<Owner> {
    let (local, peer) = (canonical(local), canonical(peer));
    table.lines().skip(1).find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let (own, remote) = (address(fields.get(1)?)?, address(fields.get(2)?)?);
        if own != peer || remote != local {
            return None;
        }
        Some(Owner {
            uid: fields.get(7)?.parse().ok()?,
            inode: fields.get(9)?.parse().ok()?,
        })
    })
}

/// A dual-stack socket shows an IPv4 peer as `::ffff:a.b.c.d`.
fn canonical(address: SocketAddr) -> SocketAddr {
    SocketAddr::new(address.ip().to_canonical(), address.port())
}

/// `0100007F:1F90` or 32 hex digits and a port: each 32-bit word is printed in the
/// machine's byte order, the port as a number.
fn address(text: &str) -> Option<SocketAddr> {
    let (ip, port) = text.split_once(':')?;
    let port = u16::from_str_radix(port, 16).ok()?;
    let word = |i: usize| -> Option<[u8; 4]> {
        let hex = ip.get(i * 8..i * 8 + 8)?;
        Some(u32::from_str_radix(hex, 16).ok()?.to_ne_bytes())
    };
    let ip = match ip.len() {
        8 => IpAddr::V4(Ipv4Addr::from(word(0)?)),
        32 => {
            let mut octets = [0u8; 16];
            for i in 0..4 {
                octets[i * 4..i * 4 + 4].copy_from_slice(&word(i)?);
            }
            IpAddr::V6(Ipv6Addr::from(octets))
        }
        _ => return None,
    };
    Some(SocketAddr::new(ip.to_canonical(), port))
}

/// The uid of the process listening on `addr` (or on its port on every address), if the
/// platform can tell; `Ok(None)` when nothing listens there.
pub fn listener_uid(addr: SocketAddr) -> Result<Option<u32>, String> {
    let mut errors = Vec::new();
    for table in TABLES {
        match std::fs::read_to_string(table) {
            Ok(text) => {
                if let Some(uid) = listener_in(&text, addr) {
                    return Ok(Some(uid));
                }
            }
            Err(err) => errors.push(format!("{table}: {err}")),
        }
    }
    if errors.len() == 2 {
        return Err(errors.join("; "));
    }
    Ok(None)
}

/// `0A` is TCP_LISTEN in the tables' `st` column.
fn listener_in(table: &str, addr: SocketAddr) -> Option<u32> {
    let addr = canonical(addr);
    table.lines().skip(1).find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let own = address(fields.get(1)?)?;
        let reaches = own == addr || own.port() == addr.port() && own.ip().is_unspecified();
        (reaches && *fields.get(3)? == "0A")
            .then(|| fields.get(7)?.parse().ok())
            .flatten()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex4(ip: Ipv4Addr) -> String {
        format!("{:08X}", u32::from_ne_bytes(ip.octets()))
    }

    fn hex6(ip: Ipv6Addr) -> String {
        ip.octets()
            .chunks(4)
            .map(|w| format!("{:08X}", u32::from_ne_bytes([w[0], w[1], w[2], w[3]])))
            .collect()
    }

    fn row(own: &str, remote: &str, uid: u32, inode: u64) -> String {
        format!(
            "   3: {own} {remote} 01 00000000:00000000 00:00000000 00000000 {uid:>5}        0 {inode} 1 0000000000000000 20 4 30 10 -1"
        )
    }

    const HEADER: &str = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode";

    #[test]
    fn the_peer_row_is_the_one_whose_own_address_is_the_peer() {
        let lo = Ipv4Addr::LOCALHOST;
        let (server, client) = (SocketAddr::from((lo, 7676)), SocketAddr::from((lo, 50000)));
        let table = [
            HEADER.to_owned(),
            // The server's own end of the connection: ours, but not the peer.
            row(
                &format!("{}:1DFC", hex4(lo)),
                &format!("{}:C350", hex4(lo)),
                0,
                11,
            ),
            row(
                &format!("{}:C350", hex4(lo)),
                &format!("{}:1DFC", hex4(lo)),
                1001,
                12,
            ),
        ]
        .join("\n");
        assert_eq!(
            owner_in(&table, server, client),
            Some(Owner {
                uid: 1001,
                inode: 12
            })
        );
        assert_eq!(
            owner_in(&table, server, SocketAddr::from((lo, 50001))),
            None
        );
    }

    #[test]
    fn ipv6_and_mapped_ipv4_rows_are_read() {
        let server = SocketAddr::from((Ipv6Addr::LOCALHOST, 7676));
        let client = SocketAddr::from((Ipv6Addr::LOCALHOST, 40000));
        let table = [
            HEADER.to_owned(),
            row(
                &format!("{}:9C40", hex6(Ipv6Addr::LOCALHOST)),
                &format!("{}:1DFC", hex6(Ipv6Addr::LOCALHOST)),
                1000,
                99,
            ),
        ]
        .join("\n");
        assert_eq!(owner_in(&table, server, client).map(|o| o.uid), Some(1000));

        // A dual-stack client reaching an IPv4 listener shows as ::ffff:127.0.0.1.
        let mapped = Ipv4Addr::LOCALHOST.to_ipv6_mapped();
        let table = [
            HEADER.to_owned(),
            row(
                &format!("{}:9C40", hex6(mapped)),
                &format!("{}:1DFC", hex6(mapped)),
                1000,
                98,
            ),
        ]
        .join("\n");
        let v4 = |port| SocketAddr::from((Ipv4Addr::LOCALHOST, port));
        assert_eq!(
            owner_in(&table, v4(7676), v4(40000)).map(|o| o.inode),
            Some(98)
        );
    }

    #[test]
    fn a_listener_is_found_on_its_address_or_on_every_address() {
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, 7676));
        let listening = |own: &str, st: &str| {
            format!(
                "{HEADER}\n{}",
                row(own, "00000000:0000", 1001, 7).replacen(" 01 ", &format!(" {st} "), 1)
            )
        };
        assert_eq!(
            listener_in(&listening("0100007F:1DFC", "0A"), addr),
            Some(1001)
        );
        assert_eq!(
            listener_in(&listening("00000000:1DFC", "0A"), addr),
            Some(1001)
        );
        assert_eq!(
            listener_in(&listening("0100007F:1DFC", "01"), addr),
            None,
            "connected, not listening"
        );
        assert_eq!(listener_in(&listening("0100007F:1DFD", "0A"), addr), None);
    }

    #[test]
    fn malformed_rows_are_skipped_not_misread() {
        let server = SocketAddr::from((Ipv4Addr::LOCALHOST, 7676));
        let client = SocketAddr::from((Ipv4Addr::LOCALHOST, 50000));
        let table = format!(
            "{HEADER}\n   1: zz:1 00:00\n   2:\n{}",
            row("0100007F", "x", 0, 1)
        );
        assert_eq!(owner_in(&table, server, client), None);
    }
}
