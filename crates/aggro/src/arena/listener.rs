//! Which process serves a port, so `--server-pid` is checked before a run reads its CPU: a shell's
//! `(cd dir && node server.js) & … --server-pid $!` gives the subshell's pid, whose CPU stays at 0 while
//! its child serves — and the verdict could then never find the server's limit. The sockets bound to the
//! port are found in /proc/net (TCP listening, UDP bound), their owners by the processes' descriptors.

use crate::exit::BadInput;
use std::collections::HashSet;

/// The process whose CPU the run should read for `--server-pid pid` of a server on `port`: `pid` itself
/// when it holds the port (or when no holder can be seen: another user's process, another network
/// namespace); the holder when it descends from `pid` (a wrapper, a subshell), said on stderr; otherwise
/// bad input naming the holder.
pub fn measured_pid(pid: u32, port: u16) -> Result<u32, BadInput> {
    if !std::path::Path::new(&format!("/proc/{pid}")).exists() {
        return Err(BadInput(format!("--server-pid {pid}: no such process")));
    }
    let holders = holders_of(port);
    if holders.is_empty() || holders.contains(&pid) {
        return Ok(pid);
    }
    let mut holders: Vec<u32> = holders.into_iter().collect();
    holders.sort_unstable();
    if let Some(&child) = holders.iter().find(|&&h| descends_from(h, pid)) {
        eprintln!(
            "aggro: --server-pid {pid} ({}) does not hold port {port}; its descendant {child} ({}) does: reading {child}'s CPU",
            name_of(pid),
            name_of(child)
        );
        return Ok(child);
    }
    let named: Vec<String> = holders.iter().map(|h| format!("{h} ({})", name_of(*h))).collect();
    Err(BadInput(format!(
        "--server-pid {pid} ({}) is not the process serving port {port}: that is {} — pass --server-pid {}",
        name_of(pid),
        named.join(", "),
        holders[0]
    )))
}

/// Pids holding a TCP socket listening on `port` or a UDP socket bound to it.
fn holders_of(port: u16) -> HashSet<u32> {
    let mut inodes = HashSet::new();
    for (table, wanted_state) in [("tcp", "0A"), ("tcp6", "0A"), ("udp", "07"), ("udp6", "07")] {
        let Ok(text) = std::fs::read_to_string(format!("/proc/net/{table}")) else { continue };
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split_whitespace().collect();
            let (Some(local), Some(state), Some(inode)) = (f.get(1), f.get(3), f.get(9)) else { continue };
            let bound = local.rsplit(':').next().and_then(|p| u16::from_str_radix(p, 16).ok());
            if bound == Some(port) && *state == wanted_state && *inode != "0" {
                inodes.insert(format!("socket:[{inode}]"));
            }
        }
    }
    if inodes.is_empty() {
        return HashSet::new();
    }
    let mut pids = HashSet::new();
    let Ok(procs) = std::fs::read_dir("/proc") else { return pids };
    for p in procs.flatten() {
        let Some(pid) = p.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
        let Ok(fds) = std::fs::read_dir(p.path().join("fd")) else { continue };
        if fds.flatten().any(|fd| std::fs::read_link(fd.path()).is_ok_and(|l| inodes.contains(l.to_string_lossy().as_ref()))) {
            pids.insert(pid);
        }
    }
    pids
}

/// Whether `pid`'s chain of parents reaches `ancestor`.
fn descends_from(mut pid: u32, ancestor: u32) -> bool {
    for _ in 0..64 {
        match parent_of(pid) {
            Some(p) if p == ancestor => return true,
            Some(p) if p > 1 => pid = p,
            _ => return false,
        }
    }
    false
}

/// A process's parent, from /proc/PID/stat (the field after the parenthesised name).
fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?.1.split_whitespace().nth(1)?.parse().ok()
}

/// A process's command name, for messages.
fn name_of(pid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/comm")).map_or_else(|_| "gone".into(), |n| n.trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_holder_of_a_port_is_found_and_a_wrong_pid_is_refused_naming_it() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let me = std::process::id();
        assert_eq!(measured_pid(me, port).unwrap(), me);
        // A child that holds nothing of the port: refused, naming this process.
        let mut child = std::process::Command::new("sleep").arg("10").spawn().unwrap();
        let refused = measured_pid(child.id(), port).unwrap_err().0;
        assert!(refused.contains(&format!("pass --server-pid {me}")), "{refused}");
        child.kill().unwrap();
        child.wait().unwrap();
        // This process's parent (the test harness's shell or cargo) is an ancestor of the holder.
        let parent = parent_of(me).unwrap();
        if parent > 1 {
            assert_eq!(measured_pid(parent, port).unwrap(), me);
        }
        assert!(measured_pid(u32::MAX - 1, port).unwrap_err().0.contains("no such process"));
    }
}
