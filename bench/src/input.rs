//! The activity figures: how soon a question is answered `input`, and what watching for questions
//! costs.
//!
//! Detection: a bash pane is typed `read -p 'ok? ' x`; one `fugue_expect` waits for the prompt to
//! show (fugue's own wake-up on output) and a second, with `on_input: "return"`, waits for fugue
//! to call it a question. The figure is the time between the two: blocked reading the terminal
//! with no timeout, the kernel vouches for the question and fugue answers at once. The baseline,
//! in the same run and pane, is the same question read with `read -t 3600`, whose timeout the
//! kernel cannot vouch for: the quiet period's path, which every question took before.
//!
//! Cost: fugue logs each look at /proc at debug level, and the bench counts those lines on its
//! stderr; the read(2) calls of the whole server (`syscr` in /proc/PID/io) show that nothing else
//! reads either. Both are counts, not times, so the busy machine cannot blur them.

use crate::client::{Fugue, R, read_calls};
use crate::clock::{median, ms, now_ns, quantile, show};
use crate::figures::Bench;
use crate::report::Row;
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

pub const DETECT_FIG: &str = "question → `input`: `read -p 'ok? '` shown → answered";
const DETECT_TARGET: &str = "median ≤ 300 ms";
pub const IDLE_FIG: &str = "/proc looks while nothing waits (5 panes asking, 3 s)";
/// A stray read(2) (the stdin thread, a pane's exit watch) may land in either window; a poll of
/// the five panes would read at least once per pane, so the slack is one read short of that.
const IDLE_SLACK: u64 = 4;
const IDLE_TARGET: &str = "0 looks, reads ≤ baseline + 4 (< 1 per pane)";
pub const WATCH_FIG: &str = "/proc looks while one call waits on one quiet busy pane (5 s)";
const WATCH_TARGET: &str = "≤ 10 a second";

/// The line fugue logs for each look.
const PROBE_LINE: &str = "activity probe";

fn answered_after(fugue: &mut Fugue, id: u64, sent: u64) -> R<(Value, Duration)> {
    let (value, at) = fugue.wait_tool(id)?;
    Ok((value, Duration::from_nanos(at.saturating_sub(sent))))
}

pub fn detection(b: &Bench) -> R<Vec<Row>> {
    let mut fugue = b.start()?;
    let created = fugue.call(
        "fugue_create_session",
        json!({"name": "ask", "command": "exec bash --norc --noprofile"}),
    )?;
    let pane = created["pane_id"].clone();
    let reps = b.reps(12);
    // The same question, read with no timeout (the kernel vouches for it: answered at once) and
    // with a timeout of an hour (it cannot: the quiet period's path, as every question had before).
    let at_once = ask_times(&mut fugue, &pane, "read -p 'ok? ' x", reps)?;
    let after_quiet = ask_times(&mut fugue, &pane, "read -t 3600 -p 'ok? ' x", reps.min(6))?;
    fugue.close()?;
    let (base, got) = (median(&after_quiet), median(&at_once));
    let p95 = quantile(&at_once, 0.95);
    Ok(vec![
        Row {
            baseline: format!(
                "quiet period (`read -t 3600`): median {}, p95 {}",
                show(base),
                show(quantile(&after_quiet, 0.95))
            ),
            fugue: format!("median {}, p95 {} (n={})", show(got), show(p95), at_once.len()),
            ratio: format!("{:.2}×", ms(got) / ms(base)),
            ..Row::new(DETECT_FIG, DETECT_TARGET)
        }
        .judge(ms(got) <= 300.0),
    ])
}

/// Types `command` (which asks `ok? `) into the bash pane `reps` times and answers it each time;
/// returns, for each, the time from the question showing (fugue's own wake on output) to fugue
/// calling it one.
fn ask_times(fugue: &mut Fugue, pane: &Value, command: &str, reps: usize) -> R<Vec<Duration>> {
    let prompt = r"[$#] ?$";
    let mut offset = expect(fugue, pane, prompt, None)?;
    let mut times = Vec::new();
    for _ in 0..reps {
        let sent = now_ns();
        fugue
            .call("fugue_send_input", json!({"pane_id": pane, "input": command, "submit": true}))?;
        let seen = fugue.submit_tool(
            "fugue_expect",
            json!({"pane_id": pane, "pattern": r"^ok\? ?$", "since": offset, "timeout_ms": 10_000}),
        )?;
        let question = fugue.submit_tool(
            "fugue_expect",
            json!({"pane_id": pane, "pattern": "^NEVER$", "since": offset, "on_input": "return",
                   "timeout_ms": 10_000}),
        )?;
        let (seen, seen_after) = answered_after(fugue, seen, sent)?;
        let (question, asked_after) = answered_after(fugue, question, sent)?;
        if seen["status"] != "matched" || question["status"] != "input" {
            return Err(format!("no question seen: {seen} / {question}"));
        }
        times.push(asked_after.saturating_sub(seen_after));
        fugue.call("fugue_send_input", json!({"pane_id": pane, "input": "y", "submit": true}))?;
        offset = expect(fugue, pane, prompt, question["offset"].as_u64())?;
    }
    Ok(times)
}

/// Waits for `pattern` after `since`; returns the offset after its line.
fn expect(fugue: &mut Fugue, pane: &Value, pattern: &str, since: Option<u64>) -> R<u64> {
    let mut args = json!({"pane_id": pane, "pattern": pattern, "timeout_ms": 10_000});
    if let Some(since) = since {
        args["since"] = json!(since);
    }
    let found = fugue.call("fugue_expect", args)?;
    if found["status"] != "matched" {
        return Err(format!("{pattern:?} did not appear: {found}"));
    }
    found["offset"].as_u64().ok_or_else(|| format!("no offset in {found}"))
}

pub fn cost(b: &Bench) -> R<Vec<Row>> {
    let probes = Arc::new(AtomicU64::new(0));
    let count = Some((PROBE_LINE, probes.clone()));
    let mut fugue = Fugue::start_counting(&b.fugue, &[], count)?;
    let pid = fugue.pid();
    let idle = Duration::from_secs(3);

    // The baseline: the same server with no pane at all.
    let base_reads = reads_during(pid, idle)?;
    for i in 0..5 {
        let created = fugue.call(
            "fugue_create_session",
            json!({"name": format!("asking-{i}"), "command": "read -p 'ok? ' x"}),
        )?;
        expect(&mut fugue, &created["pane_id"], r"^ok\?", None)?;
    }
    let looks_before = probes.load(Ordering::SeqCst);
    let idle_reads = reads_during(pid, idle)?;
    let idle_looks = probes.load(Ordering::SeqCst) - looks_before;

    let created =
        fugue.call("fugue_create_session", json!({"name": "busy", "command": "sleep 600"}))?;
    let window = Duration::from_secs(5);
    let looks_before = probes.load(Ordering::SeqCst);
    let answer = fugue.call(
        "fugue_expect",
        json!({"pane_id": created["pane_id"], "pattern": "^NEVER$", "on_input": "return",
               "timeout_ms": window.as_millis() as u64}),
    )?;
    let watch_looks = probes.load(Ordering::SeqCst) - looks_before;
    if answer["status"] != "timeout" {
        return Err(format!("a sleeping pane was called a question: {answer}"));
    }
    fugue.close()?;
    let per_second = watch_looks as f64 / window.as_secs_f64();
    Ok(vec![
        Row {
            baseline: format!("no panes: {base_reads} reads"),
            fugue: format!("{idle_looks} looks, {idle_reads} reads"),
            ..Row::new(IDLE_FIG, IDLE_TARGET)
        }
        .judge(idle_looks == 0 && idle_reads <= base_reads + IDLE_SLACK),
        Row {
            baseline: "limit: 10 a second".into(),
            fugue: format!("{watch_looks} looks = {per_second:.1} a second"),
            ratio: format!("{:.2}×", per_second / 10.0),
            ..Row::new(WATCH_FIG, WATCH_TARGET)
        }
        .judge(per_second <= 10.0),
    ])
}

/// The read(2) calls `pid` makes during `window`.
fn reads_during(pid: u32, window: Duration) -> R<u64> {
    let before = read_calls(pid).ok_or("cannot read /proc/PID/io")?;
    std::thread::sleep(window);
    let after = read_calls(pid).ok_or("cannot read /proc/PID/io")?;
    Ok(after - before)
}
