//! A bot's TCP stream as the transport reads it: its bytes counted, whether
//! it was drained, and when the kernel received its last bytes (`SO_TIMESTAMPNS`).

use aggro_arena::arrival;
use mio::net::TcpStream;
use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;

/// A TCP stream that counts its bytes, knows when it was drained, and when its last bytes arrived.
#[derive(Debug)]
pub(super) struct Counted {
    pub(super) stream: TcpStream,
    pub(super) read: u64,
    pub(super) written: u64,
    /// When the kernel received the last bytes read (CLOCK_REALTIME ns, its `SO_TIMESTAMPNS`), 0 if it
    /// did not say.
    pub(super) arrived_ns: u64,
    /// The last read came back short: the socket held no more, so the next read would only say
    /// "would block" — it says so without the system call (half of all reads otherwise). Data that
    /// arrives later raises a new edge on the epoll set, and the socket is read again.
    pub(super) drained: bool,
    /// The peer has closed its side (or the socket failed): reads go on to the end, no shortcut, since
    /// no further edge would come.
    pub(super) closing: bool,
}

impl Read for Counted {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if std::mem::take(&mut self.drained) {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        let (n, arrived_ns) = receive_stamped(&self.stream, buf)?;
        self.read += n as u64;
        if arrived_ns != 0 {
            self.arrived_ns = arrived_ns;
        }
        self.drained = !self.closing && n > 0 && n < buf.len();
        Ok(n)
    }
}

impl Write for Counted {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.stream.write(buf)?;
        self.written += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.stream.flush()
    }
}

impl Counted {
    /// A fresh stream; the kernel is asked to stamp what it receives.
    pub(super) fn new(stream: TcpStream) -> Self {
        arrival::stamp_arrivals(stream.as_raw_fd());
        Self { stream, read: 0, written: 0, arrived_ns: 0, drained: false, closing: false }
    }

    /// The kernel sent some segment of this connection twice (its `TCP_INFO` total): read once the
    /// server has answered, a SYN or the first request resent — a listen queue that overflowed drops both.
    pub(super) fn retransmitted(&self) -> bool {
        // SAFETY: tcp_info is plain data; zeroed is valid.
        let mut info: libc::tcp_info = unsafe { std::mem::zeroed() };
        let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
        // SAFETY: the fd is ours and open; `info` has `len` bytes, which the kernel may shorten.
        let got = unsafe { libc::getsockopt(self.stream.as_raw_fd(), libc::IPPROTO_TCP, libc::TCP_INFO, (&raw mut info).cast(), &raw mut len) };
        got == 0 && info.tcpi_total_retrans > 0
    }
}

/// `recvmsg` into `buf`: the bytes read, and when the kernel received the last of them (CLOCK_REALTIME
/// ns; 0 if no stamp came).
fn receive_stamped(stream: &TcpStream, buf: &mut [u8]) -> io::Result<(usize, u64)> {
    let mut iov = libc::iovec { iov_base: buf.as_mut_ptr().cast(), iov_len: buf.len() };
    // SAFETY: msghdr is plain data; zeroed is a valid empty header, filled in below.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &raw mut iov;
    msg.msg_iovlen = 1;
    let mut control = arrival::Control::default();
    arrival::ask_for_stamp(&mut msg, &mut control);
    // SAFETY: the iovec points into `buf` and the control buffer into `control`, both alive and as long
    // as stated; the fd is ours and open.
    let n = unsafe { libc::recvmsg(stream.as_raw_fd(), &raw mut msg, 0) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((n as usize, arrival::stamp_of(&msg)))
}
