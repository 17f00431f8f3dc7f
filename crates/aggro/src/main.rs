//! `aggro`: a capacity lab for online game backends.
//!
//! The binary is thin: it parses arguments and runs a command from the
//! library modules below, mapping errors to exit codes (2 for bad input,
//! 3 for a report whose thresholds failed, 4 for a verify whose ledger is
//! incomplete — runs without result files — while the store holds up, 5 for a
//! store another process holds (nothing was done), 130 for a run a signal
//! stopped, 1 for everything else, a store that broke its invariants included).
//!
//! # Layout
//! - [`cli`]: the command line: the commands, shared argument groups, every flag's value parser; each
//!   command's own arguments live beside its handler (`mmo/args.rs`, …).
//! - [`run`]: one run of loaders through the executor into a record, for every command.
//! - [`mmo`]: `aggro mmo populate|login|play|verify` (the Versant paper).
//! - [`mobile`]: `aggro mobile populate|run|find-max|verify` (after the DynamoDB/Spanner tool).
//! - [`arena`]: `aggro arena serve|swarm|bench` (after the PUBG server article).
//! - [`session`]: runtime, result records and files, shared by every run.
//! - [`console`]: interval lines and the progress bar.
//! - [`tour`]: `aggro run`, the main job.
//! - [`results`]: `aggro report|compare|merge`, reading result files.
//! - [`live`]: `--live`, the report served while a run goes.
//! - [`world`]: the store's world record: written by populate, read by runs and verifies.

mod arena;
mod cli;
mod console;
mod drive;
mod find_max;
mod live;
mod mmo;
mod mobile;
mod pgbench;
mod plan;
mod results;
mod run;
mod scenario;
mod session;
#[cfg(feature = "stackdb")]
mod store;
mod tour;
mod world;

use clap::Parser;
use clap::error::ErrorKind;

/// mimalloc rather than the C library's allocator: in the main job's zone threads glibc's malloc and free
/// were 7.6 % of the samples (the change sets of game pushes, transactions' key tables, batches).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// An error caused by what the user typed or gave (exit code 2).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct BadInput(pub String);

/// A store another process holds — a stackdb directory's lock, a world's players leased to a running
/// game server, a database that answers "locked": nothing was done, and nothing is wrong with the store
/// (exit code 5; try again once the other process ends).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Busy(pub String);

/// A store's error, after what was being done (`context`): a busy store is [`Busy`], the rest plain
/// errors.
pub fn store_error(context: impl std::fmt::Display, e: aggro_core::StoreError) -> anyhow::Error {
    let text = format!("{context}: {}", e.message);
    match e.class {
        aggro_core::ErrorClass::Locked => Busy(text).into(),
        _ => anyhow::anyhow!(text),
    }
}

/// A populate's store error: what it cannot take for a store of its own (files another program wrote where
/// the store goes, a database file of another kind) is where the user pointed it, exit 2, not a failure of
/// the store.
pub fn populate_error(context: impl std::fmt::Display, e: aggro_core::StoreError) -> anyhow::Error {
    match e.class {
        aggro_core::ErrorClass::Data => BadInput(format!("{context}: {}", e.message)).into(),
        _ => store_error(context, e),
    }
}

/// A run stopped by SIGINT or SIGTERM, its result file written (exit code 130, as a shell reports a
/// command Ctrl-C ended).
#[derive(Debug, thiserror::Error)]
#[error("stopped by a signal (the result file was written)")]
pub struct Interrupted;

fn main() {
    refuse_huge_pages();
    end_quietly_when_stdout_closes();
    let args = cli::Cli::try_parse().unwrap_or_else(|e| refuse(e));
    let result = match args.command {
        cli::Command::Mmo(m) => mmo::main(*m),
        cli::Command::Mobile(m) => mobile::main(*m),
        cli::Command::Scenario(s) => scenario::main(*s),
        cli::Command::Pgbench(p) => pgbench::main(*p),
        cli::Command::Run(t) => tour::main(t),
        cli::Command::Arena(a) => arena::main(*a),
        cli::Command::Plan(p) => plan::main(p),
        cli::Command::Report(r) => results::report(r),
        cli::Command::Compare(c) => results::compare(c),
        cli::Command::Merge(m) => results::merge(m),
        #[cfg(feature = "stackdb")]
        cli::Command::Store(s) => store::main(s),
        #[cfg(not(feature = "stackdb"))]
        cli::Command::Store(_) => Err(BadInput("this aggro was built without stackdb (the `stackdb` feature)".into()).into()),
    };
    if let Err(e) = result {
        let code = match () {
            _ if e.downcast_ref::<BadInput>().is_some() => 2,
            _ if e.downcast_ref::<Interrupted>().is_some() => 130,
            _ if e.downcast_ref::<results::ThresholdsFailed>().is_some() => 3,
            _ if e.downcast_ref::<world::LedgerIncomplete>().is_some() => 4,
            _ if e.downcast_ref::<Busy>().is_some() => 5,
            _ => 1,
        };
        if is_broken_pipe(&e) {
            std::process::exit(0);
        }
        eprintln!("aggro: {e:#}");
        std::process::exit(code);
    }
}

/// A command line clap refused, as every bad input is reported: one line naming the flag, exit 2. Help and
/// the version print as clap prints them.
fn refuse(e: clap::Error) -> ! {
    if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand) {
        e.exit();
    }
    let text = e.render().to_string();
    let said: Vec<&str> =
        text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with("Usage:") && !l.starts_with("For more information")).collect();
    eprintln!("aggro: {}", said.join(" ").trim_start_matches("error: "));
    std::process::exit(2);
}

/// Turns transparent huge pages off for this process (`PR_SET_THP_DISABLE`, which also overrides
/// mimalloc's `MADV_HUGEPAGE` on its arenas). With them, a fresh 2 MiB page was zeroed in a page fault
/// each time the allocator touched new or purged memory: 5.4 % of the main job's samples in
/// `clear_page_erms`, inside commits and game periods. Without them (measured with
/// `MIMALLOC_ALLOW_THP=0`, which makes the same call; two alternating rounds on copies of one world),
/// one zone ran 15,238 / 15,399 → 18,857 / 18,057 player-minutes per minute and its Checkpoint p99
/// fell from 5.9 / 4.0 to 3.2 / 2.7 ms. A refusal (an old kernel) changes nothing else. Children inherit
/// the setting: a peer's server gets the system's back ([`with_system_huge_pages`]).
fn refuse_huge_pages() {
    // SAFETY: prctl with integer arguments only; no memory is passed.
    unsafe { libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0) };
}

/// Runs `cmd`'s process with the system's transparent huge pages, not this process's refusal of them:
/// a peer is measured as it would run by itself.
pub fn with_system_huge_pages(cmd: &mut std::process::Command) {
    // SAFETY: the hook only makes a system call (async-signal-safe) between fork and exec.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(cmd, || {
            libc::prctl(libc::PR_SET_THP_DISABLE, 0, 0, 0, 0);
            Ok(())
        })
    };
}

/// A print to a closed standard output (piped into `head`) ends the program quietly, as a command
/// that SIGPIPE ended (status 141), not with a panic's backtrace. A run's progress lines go on to
/// /dev/null instead ([`console::say`]), so a run still writes its result file.
fn end_quietly_when_stdout_closes() {
    let panic = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let message = info.payload().downcast_ref::<String>().map(String::as_str).unwrap_or_default();
        if message.starts_with("failed printing to stdout") && message.contains("Broken pipe") {
            std::process::exit(141);
        }
        panic(info);
    }));
}

/// Piping into `head` is not an error.
fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| c.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe))
}
