//! A nonblocking UDP socket that receives and sends in batches (recvmmsg and
//! sendmmsg: one system call for up to [`BATCH`] datagrams).

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;

/// Datagrams per system call.
pub const BATCH: usize = 64;
const SLOT: usize = 1536;

/// Datagrams and bytes a socket has received and queued for sending, since it was bound.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Traffic {
    pub packets_in: u64,
    pub bytes_in: u64,
    pub packets_out: u64,
    pub bytes_out: u64,
}

impl Traffic {
    /// What happened between `earlier` and `self`.
    pub fn since(self, earlier: Traffic) -> Traffic {
        Traffic {
            packets_in: self.packets_in - earlier.packets_in,
            bytes_in: self.bytes_in - earlier.bytes_in,
            packets_out: self.packets_out - earlier.packets_out,
            bytes_out: self.bytes_out - earlier.bytes_out,
        }
    }
}

impl std::ops::AddAssign for Traffic {
    fn add_assign(&mut self, o: Self) {
        self.packets_in += o.packets_in;
        self.bytes_in += o.bytes_in;
        self.packets_out += o.packets_out;
        self.bytes_out += o.bytes_out;
    }
}

/// Waits until a datagram is waiting on any of `fds` (built with [`BatchSocket::pollfd`]) or `deadline_us`
/// (on [`crate::clock::now_us`]'s clock) passes — a deadline passed only looks; returns whether any is.
pub fn wait_readable(fds: &mut [libc::pollfd], deadline_us: u64) -> bool {
    let left = deadline_us.saturating_sub(crate::clock::now_us());
    let ts = libc::timespec { tv_sec: (left / 1_000_000) as i64, tv_nsec: ((left % 1_000_000) * 1000) as i64 };
    // SAFETY: the pollfd slice and the timespec live across the call; a null sigmask keeps the current one.
    unsafe { libc::ppoll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, &ts, std::ptr::null()) > 0 }
}

/// A socket with a receive batch and a send queue.
pub struct BatchSocket {
    sock: UdpSocket,
    rx: Vec<u8>,
    rx_len: Vec<usize>,
    rx_from: Vec<libc::sockaddr_storage>,
    rx_count: usize,
    /// With [`stamp_arrivals`](Self::stamp_arrivals): a control buffer per slot, and each datagram's
    /// arrival stamp (CLOCK_REALTIME ns, 0 if none) — empty otherwise.
    rx_control: Vec<crate::arrival::Control>,
    rx_at: Vec<u64>,
    tx: Vec<u8>,
    tx_msgs: Vec<(usize, usize, SocketAddr)>,
    /// Datagrams the kernel refused to send (buffer full); counted, not retried.
    pub send_failures: u64,
    traffic: Traffic,
    /// Time spent in sendmmsg, ns.
    send_call_ns: u64,
}

impl std::fmt::Debug for BatchSocket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BatchSocket").field("local", &self.sock.local_addr().ok()).finish()
    }
}

impl AsRawFd for BatchSocket {
    fn as_raw_fd(&self) -> std::os::fd::RawFd {
        self.sock.as_raw_fd()
    }
}

impl BatchSocket {
    /// A poll entry that waits for this socket to be readable.
    pub fn pollfd(&self) -> libc::pollfd {
        libc::pollfd { fd: self.sock.as_raw_fd(), events: libc::POLLIN, revents: 0 }
    }

    /// Binds `addr`, nonblocking, with 8 MiB socket buffers (so a frame's worth of datagrams waits while the loop sleeps).
    pub fn bind(addr: SocketAddr) -> io::Result<Self> {
        let sock = UdpSocket::bind(addr)?;
        sock.set_nonblocking(true)?;
        for opt in [libc::SO_RCVBUF, libc::SO_SNDBUF] {
            let size: libc::c_int = 8 << 20;
            // SAFETY: setsockopt reads a c_int we own; the fd is ours and open.
            unsafe { libc::setsockopt(sock.as_raw_fd(), libc::SOL_SOCKET, opt, (&raw const size).cast(), size_of::<libc::c_int>() as u32) };
        }
        Ok(Self {
            sock,
            rx: vec![0; SLOT * BATCH],
            rx_len: vec![0; BATCH],
            rx_from: vec![unsafe { std::mem::zeroed() }; BATCH],
            rx_count: 0,
            rx_control: Vec::new(),
            rx_at: Vec::new(),
            tx: Vec::with_capacity(SLOT * BATCH),
            tx_msgs: Vec::with_capacity(BATCH),
            send_failures: 0,
            traffic: Traffic::default(),
            send_call_ns: 0,
        })
    }

    /// Asks the kernel to stamp each datagram's arrival, read back by [`received_at`](Self::received_at).
    pub fn stamp_arrivals(&mut self) {
        crate::arrival::stamp_arrivals(self.sock.as_raw_fd());
        self.rx_control = vec![Default::default(); BATCH];
        self.rx_at = vec![0; BATCH];
    }

    /// When the kernel received the i-th datagram of the last batch (CLOCK_REALTIME ns; 0 unless
    /// [`stamp_arrivals`](Self::stamp_arrivals) was asked for).
    pub fn received_at(&self, i: usize) -> u64 {
        self.rx_at.get(i).copied().unwrap_or(0)
    }

    /// Everything received and sent so far.
    pub fn traffic(&self) -> Traffic {
        self.traffic
    }

    /// Time spent in the send system calls so far, ns (on loopback this includes the receiving side's
    /// network stack, which the kernel runs in the sender's call).
    pub fn send_call_ns(&self) -> u64 {
        self.send_call_ns
    }

    /// The bound address.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.sock.local_addr()
    }

    /// Receives up to [`BATCH`] waiting datagrams without blocking; returns how many (0: none waiting).
    pub fn recv_batch(&mut self) -> io::Result<usize> {
        let mut iov: [libc::iovec; BATCH] = unsafe { std::mem::zeroed() };
        let mut msgs: [libc::mmsghdr; BATCH] = unsafe { std::mem::zeroed() };
        for i in 0..BATCH {
            iov[i] = libc::iovec { iov_base: self.rx[i * SLOT..].as_mut_ptr().cast(), iov_len: SLOT };
            msgs[i].msg_hdr.msg_iov = &raw mut iov[i];
            msgs[i].msg_hdr.msg_iovlen = 1;
            msgs[i].msg_hdr.msg_name = (&raw mut self.rx_from[i]).cast();
            msgs[i].msg_hdr.msg_namelen = size_of::<libc::sockaddr_storage>() as u32;
            if let Some(control) = self.rx_control.get_mut(i) {
                crate::arrival::ask_for_stamp(&mut msgs[i].msg_hdr, control);
            }
        }
        // SAFETY: every mmsghdr points at an iovec, a sockaddr_storage and (when stamping) a control buffer
        // that live until the call returns.
        let n = unsafe { libc::recvmmsg(self.sock.as_raw_fd(), msgs.as_mut_ptr(), BATCH as u32, libc::MSG_DONTWAIT, std::ptr::null_mut()) };
        if n < 0 {
            let e = io::Error::last_os_error();
            self.rx_count = 0;
            return if e.kind() == io::ErrorKind::WouldBlock { Ok(0) } else { Err(e) };
        }
        self.rx_count = n as usize;
        for (len, m) in self.rx_len.iter_mut().zip(&msgs[..self.rx_count]) {
            *len = m.msg_len as usize;
            self.traffic.bytes_in += *len as u64;
        }
        for (at, m) in self.rx_at.iter_mut().zip(&msgs[..self.rx_count]) {
            *at = crate::arrival::stamp_of(&m.msg_hdr);
        }
        self.traffic.packets_in += self.rx_count as u64;
        Ok(self.rx_count)
    }

    /// The i-th datagram of the last batch: sender and bytes (a datagram longer than 1,536 bytes is cut).
    pub fn received(&self, i: usize) -> (Option<SocketAddr>, &[u8]) {
        (to_socket_addr(&self.rx_from[i]), &self.rx[i * SLOT..i * SLOT + self.rx_len[i]])
    }

    /// Queues a datagram; sent by [`flush`](Self::flush), or at once when the queue holds a batch.
    pub fn send(&mut self, to: SocketAddr, bytes: &[u8]) {
        let at = self.tx.len();
        self.traffic.packets_out += 1;
        self.traffic.bytes_out += bytes.len() as u64;
        self.tx.extend_from_slice(bytes);
        self.tx_msgs.push((at, bytes.len(), to));
        if self.tx_msgs.len() == BATCH {
            self.flush();
        }
    }

    /// Sends every queued datagram.
    pub fn flush(&mut self) {
        let mut sent = 0;
        while sent < self.tx_msgs.len() {
            let chunk = &self.tx_msgs[sent..];
            let n = chunk.len().min(BATCH);
            let mut iov: [libc::iovec; BATCH] = unsafe { std::mem::zeroed() };
            let mut names: [libc::sockaddr_storage; BATCH] = unsafe { std::mem::zeroed() };
            let mut msgs: [libc::mmsghdr; BATCH] = unsafe { std::mem::zeroed() };
            for i in 0..n {
                let (at, len, to) = chunk[i];
                iov[i] = libc::iovec { iov_base: self.tx[at..].as_mut_ptr().cast(), iov_len: len };
                msgs[i].msg_hdr.msg_iov = &raw mut iov[i];
                msgs[i].msg_hdr.msg_iovlen = 1;
                msgs[i].msg_hdr.msg_namelen = from_socket_addr(to, &mut names[i]);
                msgs[i].msg_hdr.msg_name = (&raw mut names[i]).cast();
            }
            // SAFETY: every mmsghdr points at an iovec into `self.tx` and a sockaddr in `names`, alive for the call.
            let t0 = aggro_core::clock::monotonic_ns();
            let r = unsafe { libc::sendmmsg(self.sock.as_raw_fd(), msgs.as_mut_ptr(), n as u32, 0) };
            self.send_call_ns += aggro_core::clock::monotonic_ns() - t0;
            if r <= 0 {
                // The kernel's buffer is full or the destination is gone: drop this datagram, as UDP would.
                self.send_failures += 1;
                sent += 1;
            } else {
                sent += r as usize;
            }
        }
        self.tx.clear();
        self.tx_msgs.clear();
    }
}

fn to_socket_addr(s: &libc::sockaddr_storage) -> Option<SocketAddr> {
    match s.ss_family as i32 {
        libc::AF_INET => {
            // SAFETY: the family says this storage holds a sockaddr_in.
            let a: &libc::sockaddr_in = unsafe { &*(s as *const libc::sockaddr_storage).cast() };
            Some(SocketAddr::from((u32::from_be(a.sin_addr.s_addr).to_be_bytes(), u16::from_be(a.sin_port))))
        }
        libc::AF_INET6 => {
            // SAFETY: the family says this storage holds a sockaddr_in6.
            let a: &libc::sockaddr_in6 = unsafe { &*(s as *const libc::sockaddr_storage).cast() };
            Some(SocketAddr::from((a.sin6_addr.s6_addr, u16::from_be(a.sin6_port))))
        }
        _ => None,
    }
}

fn from_socket_addr(addr: SocketAddr, s: &mut libc::sockaddr_storage) -> u32 {
    match addr {
        SocketAddr::V4(v4) => {
            // SAFETY: sockaddr_storage is large enough and aligned for a sockaddr_in.
            let a: &mut libc::sockaddr_in = unsafe { &mut *(s as *mut libc::sockaddr_storage).cast() };
            a.sin_family = libc::AF_INET as libc::sa_family_t;
            a.sin_port = v4.port().to_be();
            a.sin_addr.s_addr = u32::from_be_bytes(v4.ip().octets()).to_be();
            size_of::<libc::sockaddr_in>() as u32
        }
        SocketAddr::V6(v6) => {
            // SAFETY: sockaddr_storage is large enough and aligned for a sockaddr_in6.
            let a: &mut libc::sockaddr_in6 = unsafe { &mut *(s as *mut libc::sockaddr_storage).cast() };
            a.sin6_family = libc::AF_INET6 as libc::sa_family_t;
            a.sin6_port = v6.port().to_be();
            a.sin6_addr.s6_addr = v6.ip().octets();
            size_of::<libc::sockaddr_in6>() as u32
        }
    }
}
