//! A call on one host: the host its arguments name (`host`, or the `host:` of its ids), reached
//! through `hosts`, or this fugue when they name none; the answer's ids get the host put on.

use super::{hosts, ids, ssh, wire};
use crate::error::{Error, Result};
use crate::runtime::Runtime;
use crate::tool::{Answer, Ctx, Registered};
use serde_json::{Map, Value, json};

/// The tools that take `host`.
const HOST_TOOLS: [&str; 3] = ["fugue_exec", "fugue_create_session", "fugue_run_pipeline"];

/// A call on one host: the one its arguments name, or here.
pub(super) fn single(
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
        Some(host) => forward(&host, name, args, ctx),
        None => tool.call(ctx, &args),
    }
}

/// The host the arguments name (by `host` or by their ids), and the arguments without it.
fn host_of(args: &Map<String, Value>) -> Result<(Option<String>, Map<String, Value>)> {
    let (named, mut args) = ids::strip(args)?;
    let asked = match args.remove("host") {
        None => None,
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
pub(super) fn forward(
    host: &str,
    tool: &str,
    args: Map<String, Value>,
    ctx: &Ctx<'_, Runtime>,
) -> Result<Answer> {
    ssh::check_host(host)?;
    let link = hosts::link(host)?;
    let params =
        json!({"name": tool, "arguments": Value::Object(args), "_meta": {wire::ASKS: true}});
    let mut message = link.request("tools/call", params, ctx.cancel, ctx.progress)?;
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
    let asks = wire::asking(&result["_meta"][wire::ASKS], host);
    Ok(Answer { value, asks })
}
