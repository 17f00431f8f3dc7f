//! What the kernel says about this process: resident memory, and its UDP
//! sockets' receive queues and drops (from /proc; zeros where unavailable).

pub use aggro_core::clock::rss_bytes;

/// A process's memory and its sockets' kernel queues, read when an interval closes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ProcessGauges {
    pub rss_bytes: u64,
    /// Bytes waiting in the sockets' kernel receive queues.
    pub receive_queue_bytes: u64,
    /// Datagrams the kernel dropped on those sockets since they opened (receive buffers full).
    pub kernel_drops: u64,
}

impl ProcessGauges {
    /// Reads them for the UDP sockets bound to `ports` (each kernel table read once).
    pub fn read(ports: impl IntoIterator<Item = u16>) -> Self {
        let ports: Vec<u16> = ports.into_iter().collect();
        let mut g = Self { rss_bytes: rss_bytes(), ..Self::default() };
        for table in ["/proc/self/net/udp", "/proc/self/net/udp6"] {
            let text = std::fs::read_to_string(table).unwrap_or_default();
            for (port, rx, drops) in text.lines().skip(1).filter_map(parse_line) {
                if ports.contains(&port) {
                    g.receive_queue_bytes += rx;
                    g.kernel_drops += drops;
                }
            }
        }
        g
    }
}

/// (local port, rx_queue bytes, drops) of a /proc/net/udp line.
fn parse_line(line: &str) -> Option<(u16, u64, u64)> {
    let mut f = line.split_whitespace();
    let port = u16::from_str_radix(f.nth(1)?.rsplit(':').next()?, 16).ok()?;
    let rx = u64::from_str_radix(f.nth(2)?.split(':').nth(1)?, 16).ok()?;
    let drops = f.last()?.parse().ok()?;
    Some((port, rx, drops))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_proc_line_is_read_and_a_live_socket_is_seen() {
        let line = "  123: 0100007F:1E61 00000000:0000 07 00000000:00000A00 00:00000000 00000000  1000        0 4242 2 0000000000000000 17";
        assert_eq!(parse_line(line), Some((0x1e61, 0xa00, 17)));
        assert_eq!(parse_line("  sl  local_address rem_address"), None, "the header line");
        assert!(rss_bytes() > 1 << 20);
        let s = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let c = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        c.send_to(&[0; 100], s.local_addr().unwrap()).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let g = ProcessGauges::read([s.local_addr().unwrap().port()]);
        assert!(g.receive_queue_bytes >= 100, "the unread datagram is queued: {g:?}");
        assert_eq!(ProcessGauges::read([]).receive_queue_bytes, 0);
    }
}
