//! JSON-RPC's messages as fugue writes them — the envelope of a result, an error, a request and a
//! notification, built here only — its error answer, and the codes fugue answers with.
//!
//! A leaf below the line loop (`rpc`), which answers protocol faults and sends requests and
//! progress, MCP (`mcp`), which answers unknown methods and versions and notifies, and the shared
//! server's front (`server/front.rs`), which answers for a server that is gone: each imports it,
//! and none imports another for it.

use serde_json::{Value, json};

/// A JSON-RPC error answer.
#[derive(Debug)]
pub(crate) struct RpcError {
    pub(crate) code: i64,
    pub(crate) message: String,
    pub(crate) data: Option<Value>,
}

impl RpcError {
    pub(crate) fn new(code: i64, message: impl Into<String>) -> RpcError {
        RpcError { code, message: message.into(), data: None }
    }

    pub(crate) fn to_json(&self) -> Value {
        let mut error = json!({"code": self.code, "message": self.message});
        if let Some(data) = &self.data {
            error["data"] = data.clone();
        }
        error
    }
}

/// The version every message carries.
const VERSION: &str = "2.0";

/// The answer to request `id`: its `result`.
pub(crate) fn result(id: &Value, result: Value) -> Value {
    // Moved in: json! would copy the whole result through Serialize.
    let mut message = json!({"jsonrpc": VERSION, "id": id});
    message["result"] = result;
    message
}

/// The error answer to request `id` (`null` when the request's id is unknown).
pub(crate) fn error(id: &Value, error: &RpcError) -> Value {
    json!({"jsonrpc": VERSION, "id": id, "error": error.to_json()})
}

/// A request of `method` with `params` (none when `Value::Null`), answered under `id`.
pub(crate) fn request(id: &Value, method: &str, params: Value) -> Value {
    let mut message = json!({"jsonrpc": VERSION, "id": id, "method": method});
    if !params.is_null() {
        message["params"] = params;
    }
    message
}

/// A notification of `method` with `params` (none when `Value::Null`): no answer comes.
pub(crate) fn notification(method: &str, params: Value) -> Value {
    let mut message = json!({"jsonrpc": VERSION, "method": method});
    if !params.is_null() {
        message["params"] = params;
    }
    message
}

/// The JSON-RPC error codes fugue answers with (the last is MCP's, for an unknown protocol version).
pub(crate) const PARSE_ERROR: i64 = -32700;
pub(crate) const INVALID_REQUEST: i64 = -32600;
pub(crate) const METHOD_NOT_FOUND: i64 = -32601;
pub(crate) const INVALID_PARAMS: i64 = -32602;
pub(crate) const INTERNAL_ERROR: i64 = -32603;
pub(crate) const UNSUPPORTED_VERSION: i64 = -32022;
/// MCP's answer to a request that needs a capability the client did not declare (2026-07-28).
pub(crate) const MISSING_CAPABILITY: i64 = -32021;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_message_carries_the_version_and_its_parts() {
        let id = json!(7);
        assert_eq!(
            result(&id, json!({"a": 1})),
            json!({"jsonrpc": "2.0", "id": 7, "result": {"a": 1}})
        );
        let err = RpcError::new(INVALID_REQUEST, "no");
        assert_eq!(
            error(&Value::Null, &err),
            json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32600, "message": "no"}})
        );
        assert_eq!(
            request(&id, "ping", Value::Null),
            json!({"jsonrpc": "2.0", "id": 7, "method": "ping"})
        );
        assert_eq!(
            notification("notifications/x", json!({"b": 2})),
            json!({"jsonrpc": "2.0", "method": "notifications/x", "params": {"b": 2}})
        );
    }
}
