//! When the kernel received what a socket reads: `SO_TIMESTAMPNS` asks it to
//! stamp every packet on arrival, `recvmsg`/`recvmmsg` hand the stamp back as
//! a control message, and [`Clocks`] turns it (CLOCK_REALTIME) into the
//! shared monotonic clock. A swarm that reads late — busy with other bots, or
//! looking only every few milliseconds — still times a message at its
//! arrival: a datagram exactly, a TCP read at the arrival of its last segment.

use std::os::fd::RawFd;

/// Room for one control message holding a timespec (CMSG_SPACE, rounded up generously).
pub type Control = [u64; 8];

/// Asks the kernel to stamp what `fd` receives. Without it reads carry no stamp and arrivals are timed
/// when the swarm hands them over. The kernel turns arrival stamping on a moment after the first socket
/// asks (deferred work); what arrives before is stamped when read — late, never early.
pub fn stamp_arrivals(fd: RawFd) {
    let on: libc::c_int = 1;
    // SAFETY: setsockopt reads a c_int we own; the caller's fd is open.
    unsafe {
        libc::setsockopt(fd, libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, (&raw const on).cast(), size_of::<libc::c_int>() as u32);
    }
}

/// Points `msg`'s control buffer at `control`, for [`stamp_of`] to read after the call.
pub fn ask_for_stamp(msg: &mut libc::msghdr, control: &mut Control) {
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = size_of_val(control) as _;
}

/// The arrival stamp the kernel put in `msg`'s control messages (CLOCK_REALTIME ns), 0 if none.
pub fn stamp_of(msg: &libc::msghdr) -> u64 {
    if msg.msg_control.is_null() {
        return 0;
    }
    let mut at = 0;
    // SAFETY: the CMSG_* walk stays inside the control buffer the kernel filled (msg_controllen), which
    // the caller keeps alive with `msg`.
    unsafe {
        let mut cmsg = libc::CMSG_FIRSTHDR(msg);
        while !cmsg.is_null() {
            if (*cmsg).cmsg_level == libc::SOL_SOCKET && (*cmsg).cmsg_type == libc::SCM_TIMESTAMPNS {
                let ts = std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast::<libc::timespec>());
                at = ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64;
            }
            cmsg = libc::CMSG_NXTHDR(msg, cmsg);
        }
    }
    at
}

/// The offset from the kernel's receive stamps (CLOCK_REALTIME) to the shared clock (CLOCK_MONOTONIC),
/// read afresh at each receive so a wall-clock step moves no more than one batch.
#[derive(Clone, Copy, Debug, Default)]
pub struct Clocks {
    realtime_to_monotonic_ns: i64,
}

impl Clocks {
    /// Reads both clocks now.
    pub fn now() -> Self {
        let realtime = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as i64);
        Self { realtime_to_monotonic_ns: aggro_core::clock::monotonic_ns() as i64 - realtime }
    }

    /// A stamp from [`stamp_of`] on the shared clock (µs, as [`crate::clock::now_us`]); None for 0 (no stamp).
    pub fn shared_us(&self, stamp_ns: u64) -> Option<u64> {
        (stamp_ns != 0).then(|| (stamp_ns as i64 + self.realtime_to_monotonic_ns).max(0) as u64 / 1_000)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::UdpSocket;
    use std::os::fd::AsRawFd;

    #[test]
    fn a_datagram_read_late_is_stamped_when_it_arrived() {
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        stamp_arrivals(rx.as_raw_fd());
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        // Stamping on arrival starts a moment after the first socket asks for it: a few tries.
        let mut seen = Vec::new();
        for _ in 0..10 {
            let sent_us = crate::clock::now_us();
            tx.send_to(b"x", rx.local_addr().unwrap()).unwrap();
            std::thread::sleep(std::time::Duration::from_millis(30));
            let mut buf = [0u8; 16];
            let mut iov = libc::iovec { iov_base: buf.as_mut_ptr().cast(), iov_len: buf.len() };
            // SAFETY: msghdr is plain data; zeroed is a valid empty header.
            let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
            msg.msg_iov = &raw mut iov;
            msg.msg_iovlen = 1;
            let mut control = Control::default();
            ask_for_stamp(&mut msg, &mut control);
            // SAFETY: iov and control outlive the call; the fd is open.
            assert_eq!(unsafe { libc::recvmsg(rx.as_raw_fd(), &raw mut msg, 0) }, 1);
            let arrived = Clocks::now().shared_us(stamp_of(&msg)).expect("a stamp");
            let read_us = crate::clock::now_us();
            assert!(arrived + 1_000 >= sent_us, "stamped before it was sent: sent {sent_us}, arrived {arrived}");
            if arrived < sent_us + 10_000 && read_us >= arrived + 25_000 {
                return;
            }
            seen.push((sent_us, arrived, read_us));
        }
        panic!("never stamped at its arrival (sent, stamped, read µs): {seen:?}");
    }
}
