//! The bots' sockets in edge-triggered epoll sets, waited on to the
//! nanosecond (`epoll_pwait2`). mio's `Poll` rounds a timeout up to the next
//! millisecond: every tick went out up to 1 ms late, and ticks due within
//! that millisecond went out together — a bunch the server handles more
//! cheaply than independent players' sends.
//!
//! Two sets: sockets still on their way in (connecting, the WebSocket
//! handshake, an HTTP call) are *hurried* — a wait for them alone lets the
//! swarm read its open sockets seldom while a join or a login still moves at
//! once; the hurried set sits inside the main one, so one wait sees both.

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

/// Sockets in epoll sets, each known by a token (its bot).
#[derive(Debug)]
pub(super) struct Readiness {
    /// Settled sockets, and the hurried set itself (under [`HURRIED`]).
    epoll: OwnedFd,
    hurried: OwnedFd,
    events: Vec<libc::epoll_event>,
    /// The kernel has no `epoll_pwait2` (before Linux 5.11): waits round up to the millisecond.
    millisecond_waits: bool,
}

/// The main set's token for the hurried set: some hurried socket is ready.
const HURRIED: u64 = u64::MAX;

/// Read, write and the peer's close, edge-triggered.
const EDGES: u32 = (libc::EPOLLIN | libc::EPOLLOUT | libc::EPOLLRDHUP | libc::EPOLLET) as u32;

fn epoll_create() -> io::Result<OwnedFd> {
    // SAFETY: epoll_create1 takes a flag and returns a new fd or -1.
    let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` is a fresh epoll fd owned by nothing else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn epoll_ctl(epoll: &OwnedFd, op: libc::c_int, fd: RawFd, events: u32, token: u64) -> io::Result<()> {
    let mut event = libc::epoll_event { events, u64: token };
    // SAFETY: both fds are open; the kernel copies `event` (ignored by EPOLL_CTL_DEL).
    if unsafe { libc::epoll_ctl(epoll.as_raw_fd(), op, fd, &raw mut event) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

impl Readiness {
    /// Empty sets taking up to `capacity` events per wait.
    pub(super) fn new(capacity: usize) -> io::Result<Self> {
        let (epoll, hurried) = (epoll_create()?, epoll_create()?);
        epoll_ctl(&epoll, libc::EPOLL_CTL_ADD, hurried.as_raw_fd(), libc::EPOLLIN as u32, HURRIED)?;
        Ok(Self { epoll, hurried, events: vec![libc::epoll_event { events: 0, u64: 0 }; capacity.max(1)], millisecond_waits: false })
    }

    /// Watches `fd` as bot `token`, hurried until [`settle`](Self::settle)d. A socket leaves its set when it is
    /// closed.
    pub(super) fn register(&self, fd: RawFd, token: usize) -> io::Result<()> {
        epoll_ctl(&self.hurried, libc::EPOLL_CTL_ADD, fd, EDGES, token as u64)
    }

    /// Moves `fd` (bot `token`) from the hurried set to the main one: what is already ready is reported
    /// by the next wait.
    pub(super) fn settle(&self, fd: RawFd, token: usize) -> io::Result<()> {
        epoll_ctl(&self.hurried, libc::EPOLL_CTL_DEL, fd, 0, 0)?;
        epoll_ctl(&self.epoll, libc::EPOLL_CTL_ADD, fd, EDGES, token as u64)
    }

    /// Waits at most `timeout` for any socket to become ready; appends each ready one to `ready`.
    /// Returns whether a settled socket was among them.
    pub(super) fn wait(&mut self, timeout: Duration, ready: &mut Vec<Ready>) -> io::Result<bool> {
        let n = self.wait_raw(self.epoll.as_raw_fd(), timeout)?;
        let hurried = self.events[..n].iter().any(|e| e.u64 == HURRIED);
        let settled = n > usize::from(hurried);
        self.take(n, ready);
        if hurried {
            self.wait_hurried(Duration::ZERO, ready)?;
        }
        Ok(settled)
    }

    /// Waits at most `timeout` for a hurried socket to become ready; appends each ready one to `ready`.
    pub(super) fn wait_hurried(&mut self, timeout: Duration, ready: &mut Vec<Ready>) -> io::Result<()> {
        let n = self.wait_raw(self.hurried.as_raw_fd(), timeout)?;
        self.take(n, ready);
        Ok(())
    }

    fn take(&self, n: usize, ready: &mut Vec<Ready>) {
        let closed = (libc::EPOLLRDHUP | libc::EPOLLHUP | libc::EPOLLERR) as u32;
        ready.extend(self.events[..n].iter().filter(|e| e.u64 != HURRIED).map(|e| Ready {
            token: e.u64 as usize,
            closed: e.events & closed != 0,
            readable: e.events & (libc::EPOLLIN as u32 | closed) != 0,
        }));
    }

    fn wait_raw(&mut self, fd: RawFd, timeout: Duration) -> io::Result<usize> {
        let max = self.events.len() as i32;
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
        // Rounded up to the millisecond, every wait would take ≥ 1 ms; the quickest of 21 tells, however
        // busy the machine (a median under 900 µs was a timing assertion a loaded CI could fail).
        assert!(took[0] < Duration::from_micros(900), "the quickest wait {:?} for 300 µs", took[0]);
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

    #[test]
    fn a_hurried_wait_sees_only_sockets_on_their_way_in_and_a_full_wait_sees_both() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let (joining, playing) = (
            std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap(),
            std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap(),
        );
        let (mut peers, _): (Vec<_>, Vec<_>) = (0..2).map(|_| listener.accept().unwrap()).unzip();
        let mut readiness = Readiness::new(8).unwrap();
        readiness.register(joining.as_raw_fd(), 1).unwrap();
        readiness.register(playing.as_raw_fd(), 2).unwrap();
        readiness.settle(playing.as_raw_fd(), 2).unwrap();
        for peer in &mut peers {
            peer.write_all(b"x").unwrap();
        }
        let mut ready = Vec::new();
        readiness.wait_hurried(Duration::from_secs(1), &mut ready).unwrap();
        assert_eq!(ready.iter().map(|r| r.token).collect::<Vec<_>>(), vec![1], "the settled socket waits for a full wait");
        ready.clear();
        assert!(readiness.wait(Duration::from_secs(1), &mut ready).unwrap(), "a settled socket was ready");
        assert_eq!(ready, vec![Ready { token: 2, closed: false, readable: true }]);
        ready.clear();
        peers[0].write_all(b"y").unwrap();
        assert!(!readiness.wait(Duration::from_secs(1), &mut ready).unwrap(), "only a hurried socket was");
        assert_eq!(ready, vec![Ready { token: 1, closed: false, readable: true }], "seen through the main set");
    }
}
