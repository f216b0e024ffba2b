//! Remote hosts: every tool on another machine, through the user's own ssh.
//!
//! This is the one place a tool call is routed. A call that names a host — `host` on
//! `fugue_exec`, `fugue_create_session` and `fugue_run_pipeline`, or an id argument such as
//! `web1:7f3c2a1b` — is forwarded whole to that host's fugue, and the ids of its answer come back
//! with the host put on. `fugue_wait` on panes of several hosts, `fugue_run_parallel` with a
//! `host` per command, and `fugue_list_sessions` once a host has been reached, are merged here
//! (`merge`). Everything else is the local tool, untouched.
//!
//! Below this: `ssh` (the user's ssh, one master connection per host, errors by kind), `upload`
//! (fugue's own binary on the host, checked by hash), `link` (the MCP channel to the host's
//! shared fugue server over the master), `hosts` (connections by host, made again after a drop),
//! `ids` (the `host:` on ids), `wire` (what two fugues say beyond MCP: what a program asks, a
//! cancel that stops the work). Nothing here listens: ssh does every connection and every
//! authentication.

pub(crate) mod cli;
pub(crate) mod hosts;
mod ids;
mod link;
mod merge;
mod route;
mod ssh;
mod upload;
mod wire;

pub(crate) use wire::{ASKS, STOP_WORK, asks_meta};

use crate::error::Result;
use crate::runtime::Runtime;
use crate::tool::{Answer, Ctx, Registered};
use serde_json::{Map, Value, json};
use std::time::Duration;

/// Runs `tool` with `args`: here, on the host they name, or merged over several.
pub(crate) fn call(
    tool: &Registered<Runtime>,
    ctx: &Ctx<'_, Runtime>,
    args: &Map<String, Value>,
) -> Result<Answer> {
    let name = tool.tool.name;
    match name {
        "fugue_list_sessions" if !hosts::known().is_empty() => return merge::list(tool, ctx, args),
        "fugue_wait" if ids::names_a_host(args) => return merge::wait(tool, ctx, args),
        "fugue_run_parallel" if merge::fans_out(args) => return merge::parallel(tool, ctx, args),
        _ => {}
    }
    route::single(tool, ctx, args)
}

/// Answers a program that asks (a durable call's question): types `text` and Enter into pane
/// `pane_id`, here or on its host, and waits as `fugue_send_input` with `wait_ms` does.
pub(crate) fn type_answer(
    ctx: &Ctx<'_, Runtime>,
    pane_id: &str,
    text: &str,
    wait: Duration,
) -> Result<Answer> {
    let Some((host, pane)) = ids::split(pane_id) else {
        return crate::tools::panes::type_answer(ctx, pane_id, text, wait);
    };
    let args = json!({"pane_id": pane, "input": text, "submit": true,
                      "wait_ms": wait.as_millis() as u64});
    route::forward(host, "fugue_send_input", object(args), ctx)
}

/// Interrupts what runs in pane `pane_id` (a cancelled durable call's program that asks) and
/// waits for its shell's prompt: here, or on its host as C-c typed there.
pub(crate) fn interrupt(ctx: &Ctx<'_, Runtime>, pane_id: &str) {
    let Some((host, pane)) = ids::split(pane_id) else {
        if let Ok(pane) = ctx.runtime.mux.pane(pane_id) {
            crate::shell::live::interrupt(&pane);
        }
        return;
    };
    let wait = crate::shell::live::INTERRUPT_WAIT.as_millis() as u64;
    let args = json!({"pane_id": pane, "keys": ["C-c"], "wait_ms": wait});
    let _ = route::forward(host, "fugue_send_input", object(args), ctx);
}

fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}
