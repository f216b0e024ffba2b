//! The calls that span hosts, each split into one call per host, run at once, and merged back.
//!
//! - `fugue_wait` on panes of several hosts (this fugue's among them): one wait per host; with
//!   `mode: any` the first that is done cancels the others, which are then read as they stand
//!   (`timeout_ms: 0`). Results come grouped by host, in the order the hosts were first named.
//! - `fugue_run_parallel` with `host` on its commands: one run per host (up to 10 commands each,
//!   64 in all), results in the order asked, each remote one naming its `host`; a host that cannot
//!   be reached gives its commands status `error` with why.
//! - `fugue_list_sessions`: this fugue's sessions, then under `hosts` each reached host's.

use super::route::{forward, single};
use super::{hosts, ids};
use crate::cancel::Cancel;
use crate::error::{Error, Result};
use crate::runtime::Runtime;
use crate::tool::call::Progress;
use crate::tool::{Answer, Ctx, Registered};
use serde_json::{Map, Value, json};
use std::time::Instant;

/// The most commands one fan-out takes over all its hosts.
const MAX_FANOUT: usize = 64;

/// One part of a split call: the host (`None`: here) and its arguments.
struct Part {
    host: Option<String>,
    args: Map<String, Value>,
}

/// Runs every part at once, each with a cancel of its own; `stop` is told of each answer as it
/// comes (its index and whether it is done), and may cancel the rest. Answers in parts' order.
fn run_all(
    tool: &Registered<Runtime>,
    ctx: &Ctx<'_, Runtime>,
    parts: &[Part],
    stop: impl Fn(&Result<Answer>) -> bool,
) -> Result<Vec<Result<Answer>>> {
    let cancels: Vec<Cancel> = parts.iter().map(|_| Cancel::default()).collect();
    let (tx, rx) = crossbeam_channel::unbounded();
    let mut answers: Vec<Option<Result<Answer>>> = parts.iter().map(|_| None).collect();
    std::thread::scope(|scope| {
        for (i, (part, cancel)) in parts.iter().zip(&cancels).enumerate() {
            let tx = tx.clone();
            scope.spawn(move || {
                let _ = tx.send((i, run_part(tool, ctx, part, cancel)));
            });
        }
        drop(tx);
        let mut cancelled = ctx.cancel.receiver().clone();
        loop {
            crossbeam_channel::select! {
                recv(rx) -> got => match got {
                    Ok((i, answer)) => {
                        if stop(&answer) {
                            cancels.iter().for_each(Cancel::cancel);
                        }
                        answers[i] = Some(answer);
                    }
                    Err(_) => break,
                },
                recv(cancelled) -> _ => {
                    cancelled = crossbeam_channel::never();
                    // A task's cancel stops each part's work too, here and there.
                    let stop = if ctx.cancel.stops_work() { Cancel::stop_work } else { Cancel::cancel };
                    cancels.iter().for_each(stop);
                }
            }
        }
    });
    if ctx.cancel.is_cancelled() {
        return Err(Error::cancelled());
    }
    Ok(answers.into_iter().map(|a| a.unwrap_or_else(|| Err(Error::internal("lost")))).collect())
}

fn run_part(
    tool: &Registered<Runtime>,
    ctx: &Ctx<'_, Runtime>,
    part: &Part,
    cancel: &Cancel,
) -> Result<Answer> {
    let progress = Progress::none();
    let own = Ctx { runtime: ctx.runtime, cwd: ctx.cwd, cancel, progress: &progress };
    match &part.host {
        Some(host) => forward(host, tool.tool.name, ids::strip(&part.args)?.1, &own),
        None => tool.call(&own, &part.args),
    }
}

/// `fugue_list_sessions` here and on every host reached.
pub(super) fn list(
    tool: &Registered<Runtime>,
    ctx: &Ctx<'_, Runtime>,
    args: &Map<String, Value>,
) -> Result<Answer> {
    let mut parts = vec![Part { host: None, args: args.clone() }];
    parts.extend(hosts::known().into_iter().map(|h| Part { host: Some(h), args: args.clone() }));
    let mut answers = run_all(tool, ctx, &parts, |_| false)?.into_iter();
    let mut answer = answers.next().expect("the local part")?;
    let remote: Vec<Value> = parts[1..]
        .iter()
        .zip(answers)
        .map(|(part, got)| {
            let host = part.host.as_deref().unwrap_or("");
            match got {
                Ok(mut a) => json!({"host": host, "sessions": a.value["sessions"].take()}),
                Err(e) => {
                    json!({"host": host, "error": {"code": e.code(), "message": e.message()}})
                }
            }
        })
        .collect();
    answer.value["hosts"] = Value::Array(remote);
    Ok(answer)
}

/// `fugue_wait` over panes of several hosts.
pub(super) fn wait(
    tool: &Registered<Runtime>,
    ctx: &Ctx<'_, Runtime>,
    args: &Map<String, Value>,
) -> Result<Answer> {
    let started = Instant::now();
    let Some(asked) = args.get("pane_ids").and_then(Value::as_array) else {
        return tool.call(ctx, args);
    };
    let parts = split_by_host(args, "pane_ids", asked, |id| {
        id.as_str().and_then(ids::split).map(|(h, _)| h.to_string())
    });
    if parts.len() == 1 {
        return single(tool, ctx, &parts[0].args);
    }
    let all = args.get("mode").and_then(Value::as_str) == Some("all");
    let done = |a: &Result<Answer>| a.as_ref().is_ok_and(|a| a.value["status"] == "done");
    let mut answers = run_all(tool, ctx, &parts, |a| !all && done(a))?;
    for (part, answer) in parts.iter().zip(answers.iter_mut()) {
        if answer.as_ref().is_err_and(|e| e.code() == "cancelled") {
            let mut now = part.args.clone();
            now.insert("timeout_ms".into(), json!(0));
            let part = Part { host: part.host.clone(), args: now };
            *answer = run_part(tool, ctx, &part, &Cancel::default());
        }
    }
    let mut fired = Vec::new();
    let mut results = Vec::new();
    let mut done_parts = 0;
    for answer in answers {
        let mut answer = answer?;
        done_parts += usize::from(answer.value["status"] == "done");
        fired.extend(answer.value["fired"].as_array_mut().map(std::mem::take).unwrap_or_default());
        results
            .extend(answer.value["results"].as_array_mut().map(std::mem::take).unwrap_or_default());
    }
    let done = if all { done_parts == parts.len() } else { done_parts > 0 };
    Answer::of(&json!({
        "status": if done { "done" } else { "timeout" },
        "fired": fired,
        "results": results,
        "duration_ms": started.elapsed().as_millis() as u64,
    }))
}

/// The parts of a call whose list `key` (`asked`) names items on several hosts: one part per
/// host, in the order first named, each with its items.
fn split_by_host(
    args: &Map<String, Value>,
    key: &str,
    asked: &[Value],
    host_of: impl Fn(&Value) -> Option<String>,
) -> Vec<Part> {
    let mut parts: Vec<Part> = Vec::new();
    for item in asked {
        let host = host_of(item);
        let at = match parts.iter().position(|p| p.host == host) {
            Some(at) => at,
            None => {
                let mut args = args.clone();
                args.insert(key.into(), json!([]));
                parts.push(Part { host, args });
                parts.len() - 1
            }
        };
        if let Some(Value::Array(items)) = parts[at].args.get_mut(key) {
            items.push(item.clone());
        }
    }
    parts
}

/// Whether a `fugue_run_parallel` call gives a host to any command.
pub(super) fn fans_out(args: &Map<String, Value>) -> bool {
    args.get("commands")
        .and_then(Value::as_array)
        .is_some_and(|c| c.iter().any(|item| item.get("host").is_some()))
}

/// `fugue_run_parallel` with commands on several hosts.
pub(super) fn parallel(
    tool: &Registered<Runtime>,
    ctx: &Ctx<'_, Runtime>,
    args: &Map<String, Value>,
) -> Result<Answer> {
    let started = Instant::now();
    let asked = args.get("commands").and_then(Value::as_array).cloned().unwrap_or_default();
    if asked.len() > MAX_FANOUT {
        return Err(Error::invalid(format!(
            "'commands' has {} items; a fan-out over hosts takes up to {MAX_FANOUT} (10 a host)",
            asked.len()
        )));
    }
    if let Some(i) = asked.iter().position(|c| c.get("host").is_some_and(|h| !h.is_string())) {
        return Err(Error::invalid(format!("commands[{i}].host is a string: an ssh destination")));
    }
    let host_of = |item: &Value| item.get("host").and_then(Value::as_str).map(str::to_string);
    for host in asked.iter().filter_map(host_of) {
        super::ssh::check_host(&host)?;
    }
    let mut parts = split_by_host(args, "commands", &asked, host_of);
    for part in &mut parts {
        if let Some(Value::Array(items)) = part.args.get_mut("commands") {
            items.iter_mut().filter_map(Value::as_object_mut).for_each(|i| drop(i.remove("host")));
        }
    }
    let answers = run_all(tool, ctx, &parts, |_| false)?;
    // A bad call is the call's error, as it is with no host; a host that fails is its commands'.
    if let Some(Err(bad)) = answers.iter().find(|a| {
        a.as_ref().is_err_and(|e| matches!(e.code(), "invalid_argument" | "invalid_regex"))
    }) {
        return Err(bad.clone());
    }
    let mut merged = Merged::default();
    for (part, answer) in parts.iter().zip(answers) {
        merged.add(part, answer);
    }
    let order: Vec<(Option<String>, usize)> = order_of(&asked, host_of);
    let results: Vec<Value> = order.iter().filter_map(|key| merged.take(key)).collect();
    Answer::of(&json!({
        "status": merged.status(),
        "results": results,
        "total_duration_ms": started.elapsed().as_millis() as u64,
    }))
}

/// Each command's host and its place among that host's commands.
fn order_of(
    asked: &[Value],
    host_of: impl Fn(&Value) -> Option<String>,
) -> Vec<(Option<String>, usize)> {
    let mut seen: Vec<(Option<String>, usize)> = Vec::new();
    asked
        .iter()
        .map(|item| {
            let host = host_of(item);
            let n = seen.iter().filter(|(h, _)| *h == host).count();
            seen.push((host.clone(), n));
            (host, n)
        })
        .collect()
}

/// The results of a fan-out's parts, by host, and the worst status among them.
#[derive(Default)]
struct Merged {
    results: Vec<((Option<String>, usize), Value)>,
    statuses: Vec<String>,
}

impl Merged {
    fn add(&mut self, part: &Part, answer: Result<Answer>) {
        let commands = part.args["commands"].as_array().cloned().unwrap_or_default();
        let (status, results) = match answer {
            Ok(mut a) => {
                let results = a.value["results"].as_array_mut().map(std::mem::take);
                (
                    a.value["status"].as_str().unwrap_or("failed").to_string(),
                    results.unwrap_or_default(),
                )
            }
            Err(e) => ("partial".to_string(), unstarted(&commands, &e)),
        };
        self.statuses.push(status);
        for (n, mut result) in results.into_iter().enumerate() {
            if let Some(host) = &part.host {
                result["host"] = json!(host);
            }
            self.results.push(((part.host.clone(), n), result));
        }
    }

    fn take(&mut self, key: &(Option<String>, usize)) -> Option<Value> {
        let at = self.results.iter().position(|(k, _)| k == key)?;
        Some(self.results.swap_remove(at).1)
    }

    /// `completed` when every part completed, else the first of input, timeout, partial, failed
    /// that a part has.
    fn status(&self) -> &str {
        let worst = ["input", "timeout", "partial", "failed"];
        if self.statuses.iter().all(|s| s == "completed") {
            return "completed";
        }
        worst.into_iter().find(|w| self.statuses.iter().any(|s| s == w)).unwrap_or("failed")
    }
}

/// The results of commands that never started because their host failed.
fn unstarted(commands: &[Value], error: &Error) -> Vec<Value> {
    commands
        .iter()
        .enumerate()
        .map(|(i, c)| {
            json!({
                "name": c.get("name").cloned().unwrap_or_else(|| json!(format!("task-{}", i + 1))),
                "command": c["command"],
                "status": "error",
                "error": {"code": error.code(), "message": error.message()},
            })
        })
        .collect()
}
