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
//! `ids` (the `host:` on ids). Nothing here listens: ssh does every connection and every
//! authentication.

pub(crate) mod cli;
mod hosts;
mod ids;
mod link;
mod merge;
mod ssh;
mod upload;

use crate::error::{Error, Result};
use crate::runtime::Runtime;
use crate::tool::{Answer, Ctx, Registered};
use serde_json::{Map, Value, json};

/// The tools that take `host`.
const HOST_TOOLS: [&str; 3] = ["fugue_exec", "fugue_create_session", "fugue_run_pipeline"];

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
    single(tool, ctx, args)
}

/// A call on one host: the one its arguments name, or here.
fn single(
    tool: &Registered<Runtime>,
    ctx: &Ctx<'_, Runtime>,
    args: &Map<String, Value>,
) -> Result<Answer> {
    let name = tool.tool.name;
    let has_host = HOST_TOOLS.contains(&name) && args.contains_key("host");
    if !has_host && !ids::names_a_host(args) {
        return tool.call(ctx, args);
    }
    let (host, args) = host_of(args)?;
    match host {
        Some(host) => forward(&host, name, args, ctx.cancel),
        None => tool.call(ctx, &args),
    }
}

/// One part of a merged call, which turned out to name one host only.
fn call_one(
    tool: &Registered<Runtime>,
    ctx: &Ctx<'_, Runtime>,
    part: &merge::Part,
) -> Result<Answer> {
    single(tool, ctx, &part.args)
}

/// The host the arguments name (by `host` or by their ids), and the arguments without it.
fn host_of(args: &Map<String, Value>) -> Result<(Option<String>, Map<String, Value>)> {
    let (named, mut args) = ids::strip(args)?;
    let asked = match args.remove("host") {
        None | Some(Value::Null) => None,
        Some(Value::String(host)) => Some(host),
        Some(_) => return Err(Error::invalid("host is a string: an ssh destination")),
    };
    match (asked, named) {
        (Some(a), Some(n)) if a != n => Err(Error::invalid(format!(
            "host is {a:?} but the ids name panes on {n:?}; give one of them"
        ))),
        (asked, named) => Ok((asked.or(named), args)),
    }
}

/// Calls `tool` on `host`'s fugue and puts the host on the ids of its answer.
pub(crate) fn forward(
    host: &str,
    tool: &str,
    args: Map<String, Value>,
    cancel: &crate::cancel::Cancel,
) -> Result<Answer> {
    ssh::check_host(host)?;
    let link = hosts::link(host)?;
    let params = json!({"name": tool, "arguments": Value::Object(args)});
    let mut message = link.request("tools/call", params, cancel)?;
    if let Some(error) = message.get("error") {
        return Err(Error::internal(format!("fugue on {host}: {}", error["message"])));
    }
    let mut result = message["result"].take();
    if result["isError"] == Value::Bool(true) {
        let error = &result["structuredContent"]["error"];
        let said = error["message"].as_str().unwrap_or("");
        return Err(Error::from_code(
            error["code"].as_str().unwrap_or(""),
            format!("{host}: {said}"),
        ));
    }
    let mut value = result["structuredContent"].take();
    ids::prefix(&mut value, host);
    Ok(Answer { value, asks: None })
}
