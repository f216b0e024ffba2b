//! What every MCP request and answer carries, apart from what it asks: the request as a handler
//! sees it, the protocol era it came in, and the 2026-07-28 envelope of an answer.
//!
//! A leaf of `mcp`: the dispatcher (`mod.rs`) and durable calls (`tasks`) both stand on it, so
//! neither has to import the other for these.

use super::method::Method;
use crate::cancel::Cancel;
use crate::error::Error;
use crate::tool::Answer;
use crate::tool::call::Progress;
use serde_json::{Map, Value, json};
use std::sync::Arc;

pub(super) const CAPABILITIES_KEY: &str = "io.modelcontextprotocol/clientCapabilities";
const SERVER_INFO_KEY: &str = "io.modelcontextprotocol/serverInfo";
/// How long a client may cache `tools/list` and `server/discover`: the list is fixed per binary.
const TTL_MS: u64 = 300_000;

/// What one request can use while it runs.
pub(crate) struct Request<'a> {
    pub(crate) id: &'a Value,
    pub(crate) method: &'a Method,
    pub(crate) params: &'a Map<String, Value>,
    pub(crate) cancel: &'a Cancel,
    pub(crate) progress: &'a Progress,
    /// Sends a notification tied to this request (nothing once it is cancelled).
    pub(crate) notify: &'a dyn Fn(Value),
    /// Sends the client a request (method, params) and waits for its response message; `None`
    /// when this request is cancelled first or the connection cannot ask.
    pub(crate) ask: &'a dyn Fn(&str, Value) -> Option<Value>,
}

/// Sends a message to the connection's client, outside any one request (task status).
pub(crate) type Push = Arc<dyn Fn(Value) + Send + Sync>;

#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Era {
    Legacy,
    Modern,
}

pub(crate) fn server_info() -> Value {
    json!({"name": "fugue", "title": "fugue terminal multiplexer", "version": env!("CARGO_PKG_VERSION")})
}

/// The 2026-07-28 result's envelope: `resultType` (`complete`, unless the result is a task) and
/// the server's info.
pub(super) fn decorate(mut result: Value, cacheable: bool) -> Value {
    if result.get("resultType").is_none() {
        result["resultType"] = json!("complete");
    }
    if !result["_meta"].is_object() {
        result["_meta"] = json!({});
    }
    result["_meta"][SERVER_INFO_KEY] = server_info();
    if cacheable {
        result["ttlMs"] = json!(TTL_MS);
        result["cacheScope"] = json!("public");
    }
    result
}

/// A tool's answer or error as a `tools/call` result.
pub(crate) fn shaped(outcome: crate::error::Result<Answer>) -> Value {
    match outcome {
        Ok(answer) => success(answer.value),
        Err(err) => failure(&err),
    }
}

/// The result of a tool that answered: its structured content and the compact text copy.
pub(crate) fn success(value: Value) -> Value {
    let text = serde_json::to_string(&value).unwrap_or_default();
    // Built by moving the parts in: json! would copy both through Serialize, which for a large
    // result (200 panes listed, a megabyte of output) costs more than the tool itself.
    let mut block = Map::new();
    block.insert("type".into(), Value::from("text"));
    block.insert("text".into(), Value::String(text));
    let mut result = Map::new();
    result.insert("content".into(), Value::Array(vec![Value::Object(block)]));
    result.insert("structuredContent".into(), value);
    Value::Object(result)
}

/// The result of a tool that failed: the error's code and message, marked `isError`.
pub(crate) fn failure(err: &Error) -> Value {
    json!({
        "content": [{"type": "text", "text": format!("{}: {}", err.code(), err.message())}],
        "structuredContent": {"error": {"code": err.code(), "message": err.message()}},
        "isError": true,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_result_carries_its_text_copy() {
        let result = shaped(Ok(Answer { value: json!({"said": "hi"}), asks: None }));
        assert_eq!(result["structuredContent"], json!({"said": "hi"}));
        assert_eq!(result["content"][0]["text"], r#"{"said":"hi"}"#);
        assert!(result.get("isError").is_none());
        let failed = shaped(Err(Error::invalid("no")));
        assert_eq!(failed["isError"], true);
        assert_eq!(failed["structuredContent"]["error"]["code"], "invalid_argument");
    }
}
