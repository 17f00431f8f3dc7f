//! The bots' sockets in one edge-triggered epoll set, waited on to the
//! nanosecond (`epoll_pwait2`). mio's `Poll` rounds a timeout up to the next
//! millisecond: every tick went out up to 1 ms late, and ticks due within
//! that millisecond went out together — a bunch the server handles more
//! cheaply than independent players' sends.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

/// A socket's readiness: its token, whether its peer closed (or it failed), whether bytes came to read
/// (an edge for writing only — the peer's ACK freed send buffer — has nothing to read).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Ready {
    pub token: usize,
    pub closed: bool,
    pub readable: bool,
}

impl Ready {
    /// A socket to drive as if all had happened (a link just started).
    pub fn all(token: usize) -> Self {
        Self { token, closed: false, readable: true }
    }
}

/// An epoll set of sockets, each known by a token (its bot).
#[derive(Debug)]
pub(super) struct Readiness {
    epoll: OwnedFd,
    events: Vec<libc::epoll_event>,
    /// The kernel has no `epoll_pwait2` (before Linux 5.11): waits round up to the millisecond.
    millisecond_waits: bool,
}

impl Readiness {
    /// An empty set taking up to `capacity` events per wait.
    pub(super) fn new(capacity: usize) -> io::Result<Self> {
        // SAFETY: epoll_create1 takes a flag and returns a new fd or -1.
        let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` is a fresh epoll fd owned by nothing else.
        let epoll = unsafe { OwnedFd::from_raw_fd(fd) };
        Ok(Self { epoll, events: vec![libc::epoll_event { events: 0, u64: 0 }; capacity.max(1)], millisecond_waits: false })
    }

    /// Watches `fd` for reading, writing and the peer's close, edge-triggered, as bot `token`. A socket
    /// leaves the set when it is closed.
    pub(super) fn register(&self, fd: RawFd, token: usize) -> io::Result<()> {
        let flags = libc::EPOLLIN | libc::EPOLLOUT | libc::EPOLLRDHUP | libc::EPOLLET;
        let mut event = libc::epoll_event { events: flags as u32, u64: token as u64 };
        // SAFETY: both fds are open; the kernel copies `event`.
        if unsafe { libc::epoll_ctl(self.epoll.as_raw_fd(), libc::EPOLL_CTL_ADD, fd, &raw mut event) } < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Waits at most `timeout` for sockets to become ready; appends each ready one to `ready`.
    pub(super) fn wait(&mut self, timeout: Duration, ready: &mut Vec<Ready>) -> io::Result<()> {
        let n = self.wait_raw(timeout)?;
        let closed = (libc::EPOLLRDHUP | libc::EPOLLHUP | libc::EPOLLERR) as u32;
        ready.extend(self.events[..n].iter().map(|e| Ready {
            token: e.u64 as usize,
            closed: e.events & closed != 0,
            readable: e.events & (libc::EPOLLIN as u32 | closed) != 0,
        }));
        Ok(())
    }

    fn wait_raw(&mut self, timeout: Duration) -> io::Result<usize> {
        let (fd, max) = (self.epoll.as_raw_fd(), self.events.len() as i32);
        if !self.millisecond_waits {
            let ts = libc::timespec { tv_sec: timeout.as_secs() as libc::time_t, tv_nsec: timeout.subsec_nanos() as _ };
            // SAFETY: the events buffer holds `max` entries; the timespec lives across the call; a null
            // sigmask keeps the current one.
            let n = unsafe { libc::epoll_pwait2(fd, self.events.as_mut_ptr(), max, &ts, std::ptr::null()) };
            if n >= 0 {
                return Ok(n as usize);
            }
            let e = io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::ENOSYS) {
                return Err(e);
            }
            self.millisecond_waits = true;
        }
        let ms = timeout.as_micros().div_ceil(1000).min(i32::MAX as u128) as i32;
        // SAFETY: as above.
        let n = unsafe { libc::epoll_wait(fd, self.events.as_mut_ptr(), max, ms) };
        if n < 0 { Err(io::Error::last_os_error()) } else { Ok(n as usize) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::time::Instant;

    #[test]
    fn a_wait_ends_at_its_timeout_not_at_the_next_millisecond() {
        let mut readiness = Readiness::new(8).unwrap();
        let mut ready = Vec::new();
        let mut took: Vec<Duration> = (0..21)
            .map(|_| {
                let t = Instant::now();
                readiness.wait(Duration::from_micros(300), &mut ready).unwrap();
                t.elapsed()
            })
            .collect();
        took.sort();
        assert!(ready.is_empty());
        assert!(took[0] >= Duration::from_micros(300), "a wait ended early: {:?}", took[0]);
        // Rounded up to the millisecond, every wait would take ≥ 1 ms.
        assert!(took[10] < Duration::from_micros(900), "median wait {:?} for 300 µs", took[10]);
    }

    #[test]
    fn a_socket_is_reported_ready_under_its_token_and_its_close_seen() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let stream = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (mut peer, _) = listener.accept().unwrap();
        let mut readiness = Readiness::new(8).unwrap();
        readiness.register(stream.as_raw_fd(), 7).unwrap();
        let mut ready = Vec::new();
        readiness.wait(Duration::from_secs(1), &mut ready).unwrap();
        assert_eq!(ready, vec![Ready { token: 7, closed: false, readable: false }], "writable at once, nothing to read");
        ready.clear();
        peer.write_all(b"x").unwrap();
        drop(peer);
        readiness.wait(Duration::from_secs(1), &mut ready).unwrap();
        assert_eq!(ready, vec![Ready { token: 7, closed: true, readable: true }], "the byte and the close");
    }
}
