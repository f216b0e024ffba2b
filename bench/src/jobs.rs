//! The jobs figures: how soon `fugue_wait` answers when a process exits (one pane, and one of 32),
//! `mode: all` over ten short sleeps against the longest of them run bare, a second `fugue_exec`
//! while the first shell is busy against a bare shell's start, how soon an `until` match answers,
//! and a task-backed `fugue_exec` (MCP Tasks: create, polls at the advised interval, result)
//! against the same call answered inline.
//!
//! Wake-ups are measured as the other latency figures are: the helper in the pane reads
//! `CLOCK_MONOTONIC` just before the event (its exit, its line), prints it, and the bench subtracts
//! it from the moment it read fugue's answer.

use crate::client::{Fugue, R};
use crate::clock::{median, ms, now_ns, quantile, show};
use crate::figures::Bench;
use crate::live;
use crate::report::Row;
use serde_json::{Value, json};
use std::process::Command;
use std::time::{Duration, Instant};

pub const WAIT_FIG: &str = "`fugue_wait` wake-up: process exit → answer";
const WAIT_TARGET: &str = "median ≤ 2 ms";
const WAIT32_FIG: &str = "`fugue_wait` on 32 panes, one exits → answer";
const WAIT32_TARGET: &str = "median ≤ 5 ms";
const ALL_FIG: &str = "`fugue_wait` `all` over 10 × `sleep 0.2`, start → answer";
const ALL_TARGET: &str = "≤ 1.1× the longest bare";
const SECOND_FIG: &str = "second `fugue_exec` while the first shell is busy, call → answer";
const SECOND_TARGET: &str = "≤ bare shell start + 5 ms";
const UNTIL_FIG: &str = "`fugue_exec` `until` matched → answer";
const UNTIL_TARGET: &str = "median ≤ 2 ms";
const TASK_FIG: &str = "task-backed `fugue_exec` of `sleep 1` (create + polls + result)";
const TASK_TARGET: &str = "≤ inline + one poll interval";

pub fn jobs(b: &Bench) -> R<Vec<Row>> {
    Ok(vec![
        wake_on_exit(b, 1)?,
        wake_on_exit(b, 32)?,
        all_sleeps(b)?,
        second_exec(b)?,
        until(b)?,
        task(b)?,
    ])
}

/// `reps` waits on `panes` panes of which one runs the `emit` helper, told to exit; from the
/// helper's last timestamp to the answer.
fn wake_on_exit(b: &Bench, panes: usize) -> R<Row> {
    let mut fugue = Fugue::start_with(&b.fugue, &[("FUGUE_MAX_PANES", "64")])?;
    let sleepers: Vec<Value> = (1..panes)
        .map(|_| {
            Ok(fugue.call("fugue_create_session", json!({"command": "sleep 600"}))?["pane_id"]
                .clone())
        })
        .collect::<R<_>>()?;
    let mut samples = Vec::new();
    for rep in 0..b.reps(if panes == 1 { 100 } else { 40 }) {
        let (pane, _) = crate::figures::emitter(b, &mut fugue, &format!("exit-{rep}"))?;
        let mut ids = sleepers.clone();
        ids.insert(ids.len() / 2, pane.clone());
        let waiting =
            fugue.submit_tool("fugue_wait", json!({"pane_ids": ids, "timeout_ms": 10_000}))?;
        // Let the call reach its wait; a call that is late still measures honestly (longer).
        std::thread::sleep(Duration::from_millis(10));
        fugue
            .call("fugue_send_input", json!({"pane_id": pane, "input": "exit", "submit": true}))?;
        let (answer, at) = fugue.wait_tool(waiting)?;
        let result =
            answer["results"].as_array().and_then(|r| r.iter().find(|r| r["pane_id"] == pane));
        let said = result.and_then(|r| r["output"].as_str()).unwrap_or_default();
        let bye =
            said.lines().find_map(|l| l.strip_prefix("BYE ")).and_then(|n| n.parse::<u64>().ok());
        let bye = bye.ok_or_else(|| format!("no exit stamp in {answer}"))?;
        if answer["fired"] != json!([pane]) {
            return Err(format!("the wait fired for another pane: {answer}"));
        }
        samples.push(Duration::from_nanos(at.saturating_sub(bye)));
        fugue.call("fugue_close_pane", json!({"pane_id": pane}))?;
    }
    fugue.close()?;
    let (med, p99) = (median(&samples), quantile(&samples, 0.99));
    let (figure, target, limit) =
        if panes == 1 { (WAIT_FIG, WAIT_TARGET, 2.0) } else { (WAIT32_FIG, WAIT32_TARGET, 5.0) };
    Ok(Row {
        fugue: format!("median {}, p99 {} (n={})", show(med), show(p99), samples.len()),
        ..Row::new(figure, target)
    }
    .judge(ms(med) <= limit))
}

/// Ten `sleep 0.2` panes made one after another and one `mode: all` wait, from the first create
/// to the answer; against ten bare `sleep 0.2` processes started and waited for.
fn all_sleeps(b: &Bench) -> R<Row> {
    let (mut bare, mut ours) = (Vec::new(), Vec::new());
    for _ in 0..b.reps(8) {
        let started = Instant::now();
        let mut children: Vec<_> = (0..10)
            .map(|_| Command::new("sleep").arg("0.2").spawn().map_err(|e| e.to_string()))
            .collect::<R<_>>()?;
        for child in &mut children {
            child.wait().map_err(|e| e.to_string())?;
        }
        bare.push(started.elapsed());
        let mut fugue = b.start()?;
        let sent = now_ns();
        let ids: Vec<Value> = (0..10)
            .map(|_| {
                Ok(fugue.call("fugue_create_session", json!({"command": "sleep 0.2"}))?["pane_id"]
                    .clone())
            })
            .collect::<R<_>>()?;
        let id = fugue.submit_tool("fugue_wait", json!({"pane_ids": ids, "mode": "all"}))?;
        let (answer, at) = fugue.wait_tool(id)?;
        if answer["status"] != "done" {
            return Err(format!("the wait did not end: {answer}"));
        }
        ours.push(Duration::from_nanos(at.saturating_sub(sent)));
        fugue.close()?;
    }
    let (bare, ours) = (median(&bare), median(&ours));
    Ok(Row {
        baseline: format!("10 bare `sleep 0.2`: {}", show(bare)),
        fugue: format!("median {}", show(ours)),
        ratio: format!("{:.2}×", ms(ours) / ms(bare)),
        ..Row::new(ALL_FIG, ALL_TARGET)
    }
    .judge(ms(ours) <= 1.1 * ms(bare)))
}

/// A `fugue_exec` of `true` while fugue's only shell runs `sleep 600`: a new shell starts and
/// runs it. Against a bare bash on a PTY from start to its first prompt, with the same rc files.
fn second_exec(b: &Bench) -> R<Row> {
    let bash = live::find("bash").ok_or("bash is not installed")?;
    let home = live::bench_home()?;
    let home_str = home.to_str().ok_or("temp dir is not UTF-8")?;
    let mut fugue = Fugue::start_with(&b.fugue, &[("FUGUE_SHELL", &bash), ("HOME", home_str)])?;
    let busy = fugue.call("fugue_exec", json!({"command": "sleep 600", "timeout_ms": 50}))?;
    if busy["status"] != "running" {
        return Err(format!("the first shell is not busy: {busy}"));
    }
    let (mut bare, mut ours) = (Vec::new(), Vec::new());
    for _ in 0..b.reps(20) {
        let started = Instant::now();
        drop(live::Bare::start(&bash, &home)?);
        bare.push(started.elapsed());
        let (answer, took) = fugue.call_timed("fugue_exec", json!({"command": "true"}))?;
        if answer["status"] != "ok" || answer["pane_id"] == busy["pane_id"] {
            return Err(format!("the second exec: {answer}"));
        }
        ours.push(took);
        // Closed, so that the next round starts a shell again.
        fugue.call("fugue_close_pane", json!({"pane_id": answer["pane_id"]}))?;
    }
    fugue.close()?;
    let _ = std::fs::remove_dir_all(&home);
    let (bare, ours) = (median(&bare), median(&ours));
    Ok(Row {
        baseline: format!("bare bash start → prompt: {}", show(bare)),
        fugue: format!("median {}", show(ours)),
        ratio: format!("{:.2}× (+{:.2} ms)", ms(ours) / ms(bare), ms(ours) - ms(bare)),
        ..Row::new(SECOND_FIG, SECOND_TARGET)
    }
    .judge(ours <= bare + Duration::from_millis(5)))
}

/// A `fugue_exec` whose command prints a timestamped line after a moment and runs on; `until`
/// matches the line. From the helper's timestamp to the answer.
fn until(b: &Bench) -> R<Row> {
    let mut fugue = b.start()?;
    let command = format!("'{}' stamp", b.me.display());
    let mut samples = Vec::new();
    let mut pane: Option<Value> = None;
    for _ in 0..b.reps(100) {
        let mut args =
            json!({"command": command, "until": "^STAMP ([0-9]+)$", "timeout_ms": 10_000});
        if let Some(pane) = &pane {
            args["pane_id"] = pane.clone();
        }
        let (answer, at) = {
            let id = fugue.submit_tool("fugue_exec", args)?;
            fugue.wait_tool(id)?
        };
        if answer["status"] != "ready" {
            return Err(format!("until did not match: {answer}"));
        }
        let stamp: u64 =
            answer["groups"][0].as_str().and_then(|s| s.parse().ok()).ok_or("no stamp")?;
        samples.push(Duration::from_nanos(at.saturating_sub(stamp)));
        pane = Some(answer["pane_id"].clone());
        // Stopped, so the same shell takes the next round.
        fugue.call(
            "fugue_send_input",
            json!({"pane_id": answer["pane_id"], "keys": ["C-c"], "wait_ms": 10_000}),
        )?;
    }
    fugue.close()?;
    let (med, p99) = (median(&samples), quantile(&samples, 0.99));
    Ok(Row {
        fugue: format!("median {}, p99 {} (n={})", show(med), show(p99), samples.len()),
        ..Row::new(UNTIL_FIG, UNTIL_TARGET)
    }
    .judge(ms(med) <= 2.0))
}

/// The 2026-07-28 envelope of a client that declares the Tasks extension.
fn declaring() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}},
        "io.modelcontextprotocol/clientInfo": {"name": "fugue-bench", "version": "0"},
    })
}

/// A task-backed `fugue_exec` of `sleep 1` as a client runs it: the call, `tasks/get` at the
/// interval the task advises until it has ended, its result. Against the inline call.
fn task(b: &Bench) -> R<Row> {
    let mut fugue = b.start()?;
    let args = json!({"command": "sleep 1"});
    fugue.call("fugue_exec", json!({"command": "true"}))?;
    let (mut inline, mut tasked) = (Vec::new(), Vec::new());
    for _ in 0..b.reps(8) {
        inline.push(fugue.call_timed("fugue_exec", args.clone())?.1);
        let started = Instant::now();
        let params = json!({"_meta": declaring(), "name": "fugue_exec", "arguments": args});
        let id = fugue.submit("tools/call", params)?;
        let handle = fugue.wait(id)?.value["result"].clone();
        let task = handle["taskId"].as_str().ok_or_else(|| format!("not a task: {handle}"))?;
        let poll = Duration::from_millis(handle["pollIntervalMs"].as_u64().unwrap_or(500));
        loop {
            std::thread::sleep(poll);
            let get = json!({"_meta": declaring(), "taskId": task});
            let id = fugue.submit("tasks/get", get)?;
            let state = fugue.wait(id)?.value["result"].clone();
            if state["status"] == "completed" {
                if state["result"]["structuredContent"]["status"] != "ok" {
                    return Err(format!("the task's result: {state}"));
                }
                break;
            }
            if state["status"] != "working" {
                return Err(format!("the task: {state}"));
            }
        }
        tasked.push(started.elapsed());
    }
    fugue.close()?;
    let (inline, tasked) = (median(&inline), median(&tasked));
    Ok(Row {
        baseline: format!("inline call: {}", show(inline)),
        fugue: format!("median {} (polled every 500 ms)", show(tasked)),
        ratio: format!("{:.2}×", ms(tasked) / ms(inline)),
        ..Row::new(TASK_FIG, TASK_TARGET)
    }
    .judge(tasked <= inline + Duration::from_millis(550)))
}
