//! The ports a bench's runs listen on: from `--port` upward, each run the next port that is free on
//! 127.0.0.1 for both TCP and UDP when the run starts (a game server may take either). A port some
//! other program holds — or an outgoing connection borrowed from the ephemeral range — is skipped and
//! said, rather than handed to a server that would then fail to listen.

use crate::exit::BadInput;
use std::net::{Ipv4Addr, TcpListener, UdpSocket};

/// The next run's port, from the first one a bench was given.
pub struct Ports {
    next: Option<u16>,
}

impl Ports {
    pub fn from(first: u16) -> Self {
        Self { next: Some(first) }
    }

    /// The first free port at or above the last one taken + 1.
    pub fn take(&mut self) -> Result<u16, BadInput> {
        let from = self.next.ok_or_else(|| BadInput("--port: no free port left above it for this many runs".into()))?;
        let port = (from..=u16::MAX).find(|&p| is_free(p)).ok_or_else(|| BadInput(format!("--port: no free port from {from} up")))?;
        if port != from {
            eprintln!("aggro: port {from} is in use; this run takes {port}");
        }
        self.next = port.checked_add(1);
        Ok(port)
    }
}

/// Whether a TCP listener and a UDP socket can both bind `port` on 127.0.0.1 now.
fn is_free(port: u16) -> bool {
    port != 0 && TcpListener::bind((Ipv4Addr::LOCALHOST, port)).is_ok() && UdpSocket::bind((Ipv4Addr::LOCALHOST, port)).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_port_in_use_is_skipped() {
        let held = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let busy = held.local_addr().unwrap().port();
        let mut ports = Ports::from(busy);
        let first = ports.take().unwrap();
        assert!(first > busy, "{first} should come after the held {busy}");
        assert!(ports.take().unwrap() > first);
    }

    #[test]
    fn the_last_port_ends_the_runs() {
        let mut ports = Ports { next: None };
        assert!(ports.take().unwrap_err().0.contains("no free port"));
    }
}
