//! The methods fugue knows, parsed once where a message arrives (`rpc`), so routing, the era
//! check, the busy refusal and the handler dispatch on one `enum Method` instead of each matching
//! strings; and the params of `tools/call`, read once as a type.

use crate::jsonrpc::{INVALID_PARAMS, METHOD_NOT_FOUND, RpcError};
use serde_json::{Map, Value};

/// A request's or notification's method.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Method {
    Initialize,
    Ping,
    Discover,
    ToolsList,
    ToolsCall,
    SubscriptionsListen,
    TasksGet,
    TasksCancel,
    TasksUpdate,
    TasksResult,
    TasksList,
    /// `notifications/cancelled`: stop a call in flight.
    Cancelled,
    /// Any other method, kept by name to say it is not found (or, for a notification, ignored).
    Other(String),
}

/// Every known method with its name on the wire.
const NAMES: &[(&str, Method)] = &[
    ("initialize", Method::Initialize),
    ("ping", Method::Ping),
    ("server/discover", Method::Discover),
    ("tools/list", Method::ToolsList),
    ("tools/call", Method::ToolsCall),
    ("subscriptions/listen", Method::SubscriptionsListen),
    ("tasks/get", Method::TasksGet),
    ("tasks/cancel", Method::TasksCancel),
    ("tasks/update", Method::TasksUpdate),
    ("tasks/result", Method::TasksResult),
    ("tasks/list", Method::TasksList),
    ("notifications/cancelled", Method::Cancelled),
];

impl Method {
    pub(crate) fn parse(name: &str) -> Method {
        let known = NAMES.iter().find(|(wire, _)| *wire == name);
        known.map_or_else(|| Method::Other(name.to_string()), |(_, method)| method.clone())
    }

    /// The method's name on the wire.
    pub(crate) fn name(&self) -> &str {
        match self {
            Method::Other(name) => name,
            known => NAMES.iter().find(|(_, m)| m == known).map_or("", |(wire, _)| wire),
        }
    }

    /// The error for a method fugue does not answer (in this era).
    pub(crate) fn not_found(&self) -> RpcError {
        RpcError::new(METHOD_NOT_FOUND, format!("Method not found: {}", self.name()))
    }
}

/// The params of `tools/call`: the tool's name and its arguments (none when absent or null).
pub(crate) struct CallParams<'a> {
    pub(crate) name: &'a str,
    pub(crate) arguments: &'a Map<String, Value>,
}

impl<'a> CallParams<'a> {
    /// Reads `params`; arguments absent or null are `empty`.
    pub(crate) fn read(
        params: &'a Map<String, Value>,
        empty: &'a Map<String, Value>,
    ) -> Result<CallParams<'a>, RpcError> {
        let name = params.get("name").and_then(Value::as_str).ok_or_else(|| {
            RpcError::new(
                INVALID_PARAMS,
                "tools/call needs params.name, the tool's name (a string)",
            )
        })?;
        let arguments = match params.get("arguments") {
            None | Some(Value::Null) => empty,
            Some(Value::Object(map)) => map,
            Some(_) => {
                return Err(RpcError::new(
                    INVALID_PARAMS,
                    "tools/call params.arguments must be an object",
                ));
            }
        };
        Ok(CallParams { name, arguments })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_method_is_parsed_once_and_named_as_it_came() {
        for (wire, method) in NAMES {
            assert_eq!(&Method::parse(wire), method);
            assert_eq!(method.name(), *wire);
        }
        let other = Method::parse("prompts/list");
        assert_eq!(other, Method::Other("prompts/list".into()));
        assert_eq!(other.not_found().message, "Method not found: prompts/list");
    }

    #[test]
    fn call_params_name_what_is_wrong() {
        let empty = Map::new();
        let params = |v: Value| v.as_object().unwrap().clone();
        let ok = params(serde_json::json!({"name": "t"}));
        let read = CallParams::read(&ok, &empty).unwrap();
        assert_eq!((read.name, read.arguments.len()), ("t", 0));
        let bad = params(serde_json::json!({"name": "t", "arguments": [1]}));
        assert!(CallParams::read(&bad, &empty).err().unwrap().message.contains("an object"));
        let none = params(serde_json::json!({}));
        assert!(CallParams::read(&none, &empty).err().unwrap().message.contains("params.name"));
    }
}
