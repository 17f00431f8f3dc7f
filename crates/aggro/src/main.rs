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
//! - [`run`]: the run layer every command goes through — the runtime, Ctrl-C and the result file
//!   (`run::session`), one run of loaders through the executor (`run::Run`), the rate-driven
//!   commands' flags (`run::drive`) and the capacity search (`run::find_max`).
//! - [`mmo`]: `aggro mmo populate|login|play|verify` (the Versant paper).
//! - [`mobile`]: `aggro mobile populate|run|find-max|verify` (after the DynamoDB/Spanner tool).
//! - [`scenario`]: `aggro scenario …`, the user's own workload; [`pgbench`]: `aggro pgbench`, pgbench's
//!   scripts and options on it.
//! - [`arena`]: `aggro arena serve|swarm|bench` (after the PUBG server article).
//! - [`plan`]: `aggro plan`, the capacity planner (after Photon's load tests).
//! - [`store`]: `aggro store check|salvage`, a stackdb store's integrity and repair.
//! - [`exit`]: what a failure means — the error types that choose the exit code, and the code.
//! - [`huge_pages`]: the process's refusal of transparent huge pages, and its children's release.
//! - [`console`]: interval lines and the progress bar.
//! - [`tour`]: `aggro run`, the main job.
//! - [`results`]: `aggro report|compare|merge`, reading result files.
//! - [`live`]: `--live`, the report served while a run goes.
//! - [`world`]: the store's world record: written by populate, read by runs and verifies.

mod arena;
mod cli;
mod console;
mod exit;
mod huge_pages;
mod live;
mod mmo;
mod mobile;
mod pgbench;
mod plan;
mod results;
mod run;
mod scenario;
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

fn main() {
    huge_pages::refuse();
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
        cli::Command::Store(_) => Err(exit::BadInput("this aggro was built without stackdb (the `stackdb` feature)".into()).into()),
    };
    if let Err(e) = result {
        let code = exit::code(&e);
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
