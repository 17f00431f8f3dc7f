//! Transparent huge pages: refused by this process, given back to the peers it starts.

/// Turns transparent huge pages off for this process (`PR_SET_THP_DISABLE`, which also overrides
/// mimalloc's `MADV_HUGEPAGE` on its arenas). With them, a fresh 2 MiB page was zeroed in a page fault
/// each time the allocator touched new or purged memory: 5.4 % of the main job's samples in
/// `clear_page_erms`, inside commits and game periods. Without them (measured with
/// `MIMALLOC_ALLOW_THP=0`, which makes the same call; two alternating rounds on copies of one world),
/// one zone ran 15,238 / 15,399 → 18,857 / 18,057 player-minutes per minute and its Checkpoint p99
/// fell from 5.9 / 4.0 to 3.2 / 2.7 ms. A refusal (an old kernel) changes nothing else. Children inherit
/// the setting: a peer's server gets the system's back ([`released_for`]).
pub fn refuse() {
    // SAFETY: prctl with integer arguments only; no memory is passed.
    unsafe { libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0) };
}

/// Runs `cmd`'s process with the system's transparent huge pages, not this process's refusal of them:
/// a peer is measured as it would run by itself.
pub fn released_for(cmd: &mut std::process::Command) {
    // SAFETY: the hook only makes a system call (async-signal-safe) between fork and exec.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(cmd, || {
            libc::prctl(libc::PR_SET_THP_DISABLE, 0, 0, 0, 0);
            Ok(())
        })
    };
}
