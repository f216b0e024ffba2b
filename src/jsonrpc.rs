//! JSON-RPC's error answer and the codes fugue answers with.
//!
//! A leaf below both the line loop (`rpc`), which answers protocol faults, and MCP (`mcp`), which
//! answers unknown methods and versions: each imports it, and neither imports the other for it.

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

/// The JSON-RPC error codes fugue answers with (the last is MCP's, for an unknown protocol version).
pub(crate) const PARSE_ERROR: i64 = -32700;
pub(crate) const INVALID_REQUEST: i64 = -32600;
pub(crate) const METHOD_NOT_FOUND: i64 = -32601;
pub(crate) const INVALID_PARAMS: i64 = -32602;
pub(crate) const INTERNAL_ERROR: i64 = -32603;
pub(crate) const UNSUPPORTED_VERSION: i64 = -32022;
/// MCP's answer to a request that needs a capability the client did not declare (2026-07-28).
pub(crate) const MISSING_CAPABILITY: i64 = -32021;
