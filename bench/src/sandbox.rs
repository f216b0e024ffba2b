//! What a sandbox costs: a sandboxed pane's start and a sandboxed `fugue_exec` of `true`, each
//! beside the same unsandboxed, in the same run, interleaved.

use crate::client::{Fugue, R};
use crate::clock::{median, ms, quantile};
use crate::figures::Bench;
use crate::report::Row;
use serde_json::{Value, json};
use std::time::Duration;

pub const START_FIG: &str =
    "sandboxed pane start: `fugue_run_parallel` of one `true` under workspace-write";
const START_TARGET: &str = "median ≤ unsandboxed + 3 ms";
const START_BOUND: Duration = Duration::from_millis(3);
pub const EXEC_FIG: &str = "sandboxed `fugue_exec` of `true` in fugue's own shell";
const EXEC_TARGET: &str = "median ≤ unsandboxed + 0.5 ms";
const EXEC_BOUND: Duration = Duration::from_micros(500);

pub fn sandbox(b: &Bench) -> R<Vec<Row>> {
    let mut plain = Fugue::start(&b.fugue)?;
    let mut boxed = Fugue::start_with(&b.fugue, &[("FUGUE_SANDBOX", "workspace-write")])?;
    let parallel = json!({"commands": [{"command": "true"}]});
    let exec = json!({"command": "true"});
    // The first calls start the shells (and the sandbox's network holder); not measured.
    for fugue in [&mut plain, &mut boxed] {
        check(fugue.call("fugue_run_parallel", parallel.clone())?)?;
        check(fugue.call("fugue_exec", exec.clone())?)?;
    }
    let (mut starts, mut execs) = ((Vec::new(), Vec::new()), (Vec::new(), Vec::new()));
    for _ in 0..b.reps(100) {
        starts.0.push(timed(&mut plain, "fugue_run_parallel", &parallel)?);
        starts.1.push(timed(&mut boxed, "fugue_run_parallel", &parallel)?);
        execs.0.push(timed(&mut plain, "fugue_exec", &exec)?);
        execs.1.push(timed(&mut boxed, "fugue_exec", &exec)?);
    }
    plain.close()?;
    boxed.close()?;
    Ok(vec![
        row(START_FIG, START_TARGET, START_BOUND, &starts),
        row(EXEC_FIG, EXEC_TARGET, EXEC_BOUND, &execs),
    ])
}

fn timed(fugue: &mut Fugue, tool: &str, args: &Value) -> R<Duration> {
    let (answer, took) = fugue.call_timed(tool, args.clone())?;
    check(answer)?;
    Ok(took)
}

/// An answer whose command (or only command) exited 0.
fn check(answer: Value) -> R<()> {
    let code = answer.get("exit_code").unwrap_or(&answer["results"][0]["exit_code"]);
    if *code != 0 {
        return Err(format!("`true` did not exit 0: {answer}"));
    }
    Ok(())
}

/// The row of one figure: the sandboxed median may exceed the unsandboxed one by `bound`.
fn row(
    figure: &str,
    target: &str,
    bound: Duration,
    (plain, boxed): &(Vec<Duration>, Vec<Duration>),
) -> Row {
    let (m_plain, m_boxed) = (median(plain), median(boxed));
    let p99 = |s: &[Duration]| ms(quantile(s, 0.99));
    Row {
        baseline: format!("unsandboxed: median {:.2} ms, p99 {:.2} ms", ms(m_plain), p99(plain)),
        fugue: format!("median {:.2} ms, p99 {:.2} ms", ms(m_boxed), p99(boxed)),
        ratio: format!("+{:.2} ms", ms(m_boxed) - ms(m_plain)),
        ..Row::new(figure, target)
    }
    .judge(m_boxed <= m_plain + bound)
}
