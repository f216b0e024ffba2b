//! MCP on top of JSON-RPC: the two protocol eras and the methods a tools-only server answers.
//!
//! A request arrives here decoded, with its method and params; the answer leaves as a result value
//! or an `RpcError`. The era is decided per request: a `_meta` envelope with a protocol version is
//! the 2026-07-28 era (checked on every request, results decorated with `resultType` and server
//! info); `initialize` opens the legacy era for the process. Both share the tool registry
//! (`registry`). The client's name, from `initialize` or the modern envelope, is kept for `fugue ls`.

mod envelope;
mod method;
pub(crate) mod registry;
pub(crate) mod tasks;

use envelope::{CAPABILITIES_KEY, decorate};
pub(crate) use envelope::{server_info, shaped};
use method::CallParams;
pub(crate) use method::Method;

use crate::error::{Error, ErrorKind};
use crate::jsonrpc::{self, INTERNAL_ERROR, INVALID_PARAMS, RpcError, UNSUPPORTED_VERSION};
use crate::runtime::Runtime;
use crate::tool;
use parking_lot::Mutex;
use serde_json::{Map, Value, json};
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

pub(crate) const MODERN: &str = "2026-07-28";
pub(crate) const LEGACY: [&str; 4] = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];
const VERSION_KEY: &str = "io.modelcontextprotocol/protocolVersion";
const SUBSCRIPTION_KEY: &str = "io.modelcontextprotocol/subscriptionId";
const CLIENT_INFO_KEY: &str = "io.modelcontextprotocol/clientInfo";
/// The longest client name or version kept: it is only ever shown to a person.
const MAX_CLIENT_FIELD: usize = 100;

/// What `initialize` tells a model, read on every start: the tools to reach for first. Short.
const INSTRUCTIONS: &str = "Run commands with fugue_exec: it answers when the command ends \
(exit_code, output); cd and export persist. For a server or long job pass `until` (regex), then \
fugue_wait on its pane_id; never sleep or poll. Status input: a program asks; reply with \
fugue_send_input (keys: names, {text}), or give `responses` up front ({regex: answer}, or a list \
by order). Output is ~4 KB at most: repeats folded; last lines, errors, warnings, `keep` matches \
kept; omitted.matter 0: none cut. Search: fugue_get_output `pattern`.";

/// The instructions, with the runtime's sandbox policy in one line when there is one.
fn instructions(runtime: &Runtime) -> String {
    let policy = &runtime.sandbox;
    match policy.mode {
        crate::sandbox::Mode::Off => INSTRUCTIONS.to_string(),
        _ => format!("{INSTRUCTIONS} {}.", crate::sandbox::report_here(policy, &runtime.holders)),
    }
}

/// Where a request runs: cheap methods on the reader thread, tool calls on a worker.
#[derive(PartialEq, Eq)]
pub(crate) enum Route {
    Inline,
    Worker,
}

pub(crate) use envelope::{Era, Push, Request};

/// Who the MCP client says it is (`clientInfo`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ClientInfo {
    pub(crate) name: String,
    pub(crate) version: String,
}

pub(crate) struct Mcp {
    pub(crate) runtime: Arc<Runtime>,
    /// The client's directory, the base of its calls' paths (`tool::Ctx::cwd`).
    pub(crate) cwd: PathBuf,
    /// The version agreed by `initialize`, once a legacy client has said hello.
    legacy: Mutex<Option<String>>,
    /// The first client name seen; set once, so reading it never takes a lock.
    client: OnceLock<ClientInfo>,
    /// The capabilities a legacy client declared in `initialize` (elicitation, for tasks).
    legacy_capabilities: Mutex<Value>,
    /// How to reach the client outside a request, once the connection has said.
    push: OnceLock<Push>,
}

impl Mcp {
    pub(crate) fn new(runtime: Arc<Runtime>, cwd: PathBuf) -> Mcp {
        Mcp {
            runtime,
            cwd,
            legacy: Mutex::new(None),
            client: OnceLock::new(),
            legacy_capabilities: Mutex::new(json!({})),
            push: OnceLock::new(),
        }
    }

    /// Gives the protocol a way to notify the client outside a request (task status changes).
    pub(crate) fn set_push(&self, push: Push) {
        let _ = self.push.set(push);
    }

    /// The MCP client's name and version, once it has told us.
    pub(crate) fn client(&self) -> Option<&ClientInfo> {
        self.client.get()
    }

    fn note_client(&self, info: Option<&Value>) {
        if self.client.get().is_none()
            && let Some(name) = info.and_then(|i| i.get("name")).and_then(Value::as_str)
        {
            let version = info.and_then(|i| i.get("version")).and_then(Value::as_str);
            let _ = self.client.set(ClientInfo {
                name: name.chars().take(MAX_CLIENT_FIELD).collect(),
                version: version.unwrap_or("").chars().take(MAX_CLIENT_FIELD).collect(),
            });
        }
    }

    pub(crate) fn route(method: &Method) -> Route {
        match method {
            // A task's result and a legacy task's cancel wait for the work.
            Method::ToolsCall
            | Method::SubscriptionsListen
            | Method::TasksResult
            | Method::TasksCancel => Route::Worker,
            _ => Route::Inline,
        }
    }

    pub(crate) fn handle(&self, req: &Request<'_>) -> Result<Value, RpcError> {
        let era = self.era(req.method, req.params)?;
        if era == Era::Modern && self.client.get().is_none() {
            let meta = req.params.get("_meta");
            self.note_client(meta.and_then(|m| m.get(CLIENT_INFO_KEY)));
        }
        let store = &self.runtime.tasks;
        let (result, cacheable) = match (req.method, era) {
            (Method::Initialize, _) => (self.initialize(req.params), false),
            (Method::Ping, Era::Legacy) => (json!({}), false),
            (Method::Discover, _) => (discover(&self.runtime), true),
            (Method::ToolsList, _) => (list_tools(req.params)?, true),
            (Method::ToolsCall, _) => (self.call_tool(req)?, false),
            (Method::SubscriptionsListen, Era::Modern) => (listen(req), false),
            (Method::TasksGet, _) => {
                tasks::check_declared(era, req.params)?;
                (tasks::get(store, era, req.params)?, false)
            }
            (Method::TasksCancel, _) => {
                tasks::check_declared(era, req.params)?;
                (tasks::cancel(store, era, req.params)?, false)
            }
            (Method::TasksUpdate, _) => {
                tasks::check_declared(era, req.params)?;
                match era {
                    Era::Modern => (tasks::update(store, req.params)?, false),
                    Era::Legacy => return Err(req.method.not_found()),
                }
            }
            (Method::TasksResult, Era::Legacy) => (tasks::result(store, req)?, false),
            (Method::TasksList, Era::Legacy) => (tasks::list(store), false),
            (other, _) => return Err(other.not_found()),
        };
        Ok(match era {
            Era::Modern => decorate(result, cacheable),
            Era::Legacy => result,
        })
    }

    /// Decides the era of one request, and checks the modern envelope when there is one.
    fn era(&self, method: &Method, params: &Map<String, Value>) -> Result<Era, RpcError> {
        let meta = params.get("_meta").and_then(Value::as_object);
        if let Some(version) = meta.and_then(|m| m.get(VERSION_KEY)) {
            if *method == Method::Initialize {
                return Ok(Era::Legacy);
            }
            return check_modern(version, meta);
        }
        let hello = matches!(method, Method::Initialize | Method::Ping);
        if hello || self.legacy.lock().is_some() {
            return Ok(Era::Legacy);
        }
        Err(RpcError::new(
            INVALID_PARAMS,
            format!(
                "_meta is missing required {VERSION_KEY}: send initialize first (MCP up to \
                 2025-11-25), or give the 2026-07-28 envelope in params._meta on every request"
            ),
        ))
    }

    fn initialize(&self, params: &Map<String, Value>) -> Value {
        let asked = params.get("protocolVersion").and_then(Value::as_str).unwrap_or("");
        let version = if LEGACY.contains(&asked) { asked } else { LEGACY[0] };
        self.note_client(params.get("clientInfo"));
        *self.legacy.lock() = Some(version.to_string());
        if let Some(capabilities) = params.get("capabilities").filter(|c| c.is_object()) {
            *self.legacy_capabilities.lock() = capabilities.clone();
        }
        json!({
            "protocolVersion": version,
            "capabilities": {
                "tools": {"listChanged": false},
                "tasks": {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}},
            },
            "serverInfo": server_info(),
            "instructions": instructions(&self.runtime),
        })
    }

    /// The answer to a request refused because too many calls are running. For `tools/call` it is
    /// a tool error with code `limit_reached`, which the model sees and can retry; clients tend to
    /// treat a JSON-RPC error as the server failing. Other methods get -32603.
    pub(crate) fn refuse_busy(
        &self,
        method: &Method,
        params: &Map<String, Value>,
        message: &str,
    ) -> Result<Value, RpcError> {
        let era = self.era(method, params)?;
        if *method != Method::ToolsCall {
            return Err(RpcError::new(INTERNAL_ERROR, message));
        }
        let result = envelope::failure(&Error::new(ErrorKind::LimitReached, message));
        Ok(match era {
            Era::Modern => decorate(result, false),
            Era::Legacy => result,
        })
    }

    fn call_tool(&self, req: &Request<'_>) -> Result<Value, RpcError> {
        let empty = Map::new();
        let CallParams { name, arguments } = CallParams::read(req.params, &empty)?;
        let tool = registry::find(name).ok_or_else(|| {
            RpcError::new(
                INVALID_PARAMS,
                format!("Unknown tool: {name}; tools/list shows the tools"),
            )
        })?;
        let era = self.era(req.method, req.params)?;
        let legacy = self.legacy_capabilities.lock().clone();
        if tool.tool.durable
            && let Some(mode) = tasks::mode(era, req.params, &legacy)
        {
            let origin = tasks::Origin {
                runtime: &self.runtime,
                cwd: &self.cwd,
                push: self.push.get().cloned(),
            };
            return tasks::start(origin, req, tool, arguments, mode);
        }
        let ctx = tool::Ctx {
            runtime: &*self.runtime,
            cwd: &self.cwd,
            cancel: req.cancel,
            progress: req.progress,
        };
        let outcome = crate::remote::call(tool, &ctx, arguments);
        // Another fugue calling for a durable call of its own asks what a program asks.
        let meta = req.params.get("_meta").and_then(|m| m.get(crate::remote::ASKS));
        let asks = outcome.as_ref().ok().and_then(|a| a.asks.as_ref()).filter(|_| meta.is_some());
        let asks = asks.map(crate::remote::asks_meta);
        let mut result = shaped(outcome);
        if let Some(asks) = asks {
            result["_meta"][crate::remote::ASKS] = asks;
        }
        Ok(result)
    }
}

fn check_modern(version: &Value, meta: Option<&Map<String, Value>>) -> Result<Era, RpcError> {
    if version.as_str() != Some(MODERN) {
        let mut err = RpcError::new(UNSUPPORTED_VERSION, "Unsupported protocol version");
        err.data = Some(json!({"supported": supported_versions(), "requested": version}));
        return Err(err);
    }
    if !meta.and_then(|m| m.get(CAPABILITIES_KEY)).is_some_and(Value::is_object) {
        return Err(RpcError::new(
            INVALID_PARAMS,
            format!("_meta is missing required {CAPABILITIES_KEY} (an object, possibly empty)"),
        ));
    }
    Ok(Era::Modern)
}

fn supported_versions() -> Vec<&'static str> {
    std::iter::once(MODERN).chain(LEGACY).collect()
}

fn discover(runtime: &Runtime) -> Value {
    json!({
        "supportedVersions": supported_versions(),
        "capabilities": {
            "tools": {"listChanged": false},
            "extensions": {tasks::EXTENSION: {}},
        },
        "serverInfo": server_info(),
        "instructions": instructions(runtime),
    })
}

fn list_tools(params: &Map<String, Value>) -> Result<Value, RpcError> {
    // Every tool fits in one page, so no cursor is ever handed out, and any cursor is bogus.
    if params.get("cursor").is_some_and(|c| !c.is_null()) {
        return Err(RpcError::new(INVALID_PARAMS, "Invalid cursor"));
    }
    let mut result = json!({});
    result["tools"] = registry::list().clone();
    Ok(result)
}

/// `subscriptions/listen`: nothing here ever changes, so the acknowledgement honours no
/// notification types, and the request stays open until the client cancels it.
fn listen(req: &Request<'_>) -> Value {
    (req.notify)(jsonrpc::notification(
        "notifications/subscriptions/acknowledged",
        json!({"_meta": {SUBSCRIPTION_KEY: req.id}, "notifications": {}}),
    ));
    let _ = req.cancel.receiver().recv();
    json!({"_meta": {SUBSCRIPTION_KEY: req.id}})
}
