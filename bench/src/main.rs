//! fugue-bench: measures the release fugue binary against the physical limits it runs into.
//!
//! `make bench` runs it. It starts the real binary, talks MCP to it over stdio as an agent would,
//! and prints one Markdown table: each figure, its baseline measured in the same run (the machine
//! is shared and noisy, so a ratio says more than an absolute time), fugue's value, the ratio, the
//! target and pass/fail. Progress goes to stderr, the table to stdout. `fugue-bench emit` is the
//! helper the wake-up figures run inside a pane.

mod budget;
mod client;
mod clock;
mod dialogue;
mod figures;
mod input;
mod jobs;
mod live;
mod pty;
mod remote;
mod report;
mod sandbox;
mod shared;
mod trust;

use figures::{Bench, guard};
use report::{Row, Verdict};
use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::process::ExitCode;

const USAGE: &str = "\
fugue-bench — measure fugue against its baselines and print one table

Usage:
  fugue-bench [--fugue PATH] [--quick] [FIGURE...]
  fugue-bench emit|stamp   (the helpers run inside panes)

  --fugue PATH   the binary under test (default: $FUGUE_BIN, else target/release/fugue)
  --quick        fewer repetitions, for a quick look
  FIGURE         any of: ingest parallel wake herd input probes init memory panes exec
                 dialogue tools jobs answers trust size shared sandbox remote (default:
                 all)

Exit status: 0 when every measured figure meets its target, 1 otherwise.
";

type Figure = fn(&Bench) -> client::R<Vec<Row>>;

/// The figures in table order: (name on the command line, row name for errors, target, function).
const FIGURES: [(&str, &str, Figure); 19] = [
    ("ingest", figures::INGEST, figures::ingestion),
    ("parallel", figures::TRUE_FIG, figures::parallel),
    ("wake", figures::WAKE_FIG, figures::wake),
    ("herd", figures::HERD_FIG, figures::herd),
    ("input", input::DETECT_FIG, input::detection),
    ("probes", input::IDLE_FIG, input::cost),
    ("init", figures::INIT_FIG, figures::startup),
    ("memory", figures::MEM_FIG, figures::memory),
    ("panes", figures::PANES_FIG, figures::many_panes),
    ("exec", live::EXEC_FIG, live::exec),
    ("dialogue", dialogue::DIALOGUE_FIG, dialogue::dialogue),
    ("jobs", jobs::WAIT_FIG, jobs::jobs),
    ("answers", budget::ANSWER_FIG, budget::answers),
    ("trust", trust::PROGRESS_FIG, trust::trust),
    ("tools", figures::TOOLS_FIG, figures::tools_list),
    ("size", figures::SIZE_FIG, figures::binary_size),
    ("shared", shared::LIST_FIG, shared::shared),
    ("sandbox", sandbox::START_FIG, sandbox::sandbox),
    ("remote", remote::EXEC_FIG, remote::remote),
];

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("emit") => return emit(),
        Some("stamp") => return stamp(),
        _ => {}
    }
    let mut fugue =
        std::env::var_os("FUGUE_BIN").map_or("target/release/fugue".into(), PathBuf::from);
    let mut quick = false;
    let mut only = Vec::new();
    let mut words = args.iter();
    while let Some(word) = words.next() {
        match word.as_str() {
            "--fugue" => match words.next() {
                Some(path) => fugue = PathBuf::from(path),
                None => return usage("--fugue needs a path"),
            },
            "--quick" => quick = true,
            "-h" | "--help" => {
                print!("{USAGE}");
                return ExitCode::SUCCESS;
            }
            name if FIGURES.iter().any(|f| f.0 == name) => only.push(name.to_string()),
            other => return usage(&format!("unknown argument {other:?}")),
        }
    }
    let fugue = match std::fs::canonicalize(&fugue) {
        Ok(path) => path,
        Err(e) => {
            return usage(&format!("{}: {e}; build it first (make release)", fugue.display()));
        }
    };
    let me = match std::env::current_exe() {
        Ok(path) => path,
        Err(e) => return usage(&format!("cannot find this program's path: {e}")),
    };
    run(&Bench { fugue, me, quick }, &only)
}

fn run(bench: &Bench, only: &[String]) -> ExitCode {
    eprintln!("fugue-bench: {}", bench.fugue.display());
    eprintln!("machine: {}", report::machine());
    let mut rows = Vec::new();
    for (name, figure, measure) in FIGURES {
        if !only.is_empty() && !only.iter().any(|o| o == name) {
            continue;
        }
        eprint!("  {name:<9} ");
        let started = std::time::Instant::now();
        let measured = guard(figure, "—", measure(bench));
        eprintln!("{:>6.1} s (load {})", started.elapsed().as_secs_f64(), report::load());
        rows.extend(measured);
    }
    print!("{}", report::table(&rows));
    let failed = rows.iter().filter(|r| r.verdict == Verdict::Fail).count();
    eprintln!("{failed} of {} rows missed their target", rows.len());
    if failed == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}

fn usage(message: &str) -> ExitCode {
    eprintln!("fugue-bench: {message}\n\n{USAGE}");
    ExitCode::from(2)
}

/// The pane helper: says it is ready, then answers each input line `X` with `GOX <ns>`, `<ns>` being
/// the monotonic clock read just before the one write(2) that puts the answer on the terminal. The
/// line `exit` is answered `BYE <ns>`, the clock read just before the process exits.
fn emit() -> ExitCode {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(b"EMIT READY\n").and_then(|_| out.flush());
    let mut line = String::new();
    let mut stdin = std::io::stdin().lock();
    loop {
        line.clear();
        match stdin.read_line(&mut line) {
            Ok(0) | Err(_) => return ExitCode::SUCCESS,
            Ok(_) => {}
        }
        if line.trim() == "exit" {
            let _ = writeln!(out, "BYE {}", clock::now_ns()).and_then(|_| out.flush());
            return ExitCode::SUCCESS;
        }
        let answer = format!("GO{} {}\n", line.trim(), clock::now_ns());
        if out.write_all(answer.as_bytes()).and_then(|_| out.flush()).is_err() {
            return ExitCode::SUCCESS;
        }
    }
}

/// The `until` helper: after a moment (so the waiting call is blocked by then), prints
/// `STAMP <ns>`, the clock read just before the write, then runs on until interrupted.
fn stamp() -> ExitCode {
    std::thread::sleep(std::time::Duration::from_millis(50));
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "STAMP {}", clock::now_ns()).and_then(|_| out.flush());
    std::thread::sleep(std::time::Duration::from_secs(600));
    ExitCode::SUCCESS
}
