//! The tool handlers: every tool fugue offers, one module per group, above the domain they act on
//! and the runtime that owns it.
//!
//! Each module defines its tools (`TOOL` or `TOOLS`: name, description, schemas with their
//! defaults, handler) next to the handlers; `mcp::registry` lists them in `tools/list` order. In:
//! a `Ctx` (the runtime, the caller's directory, the call's cancel and progress) and checked
//! `Args`. Out: a typed answer (`tool::Answer`) or an `Error` with a stable code. What a handler needs of the
//! domain — panes, live shells, the registry of panes, agent pipelines, searches of output — it
//! takes from `pane`, `shell`, `mux` and `agent`, none of which knows of these.
//!
//! - `answer`: the status words and the command result the answers share.
//! - `common`: what the tools that run commands share: argument checks, tails, closing a run's
//!   panes, stopping a program that asks (`asking`) and answering it from `responses`.
//! - `panes`: sessions, windows and panes, input, output, status, resize, close.
//! - `command_wait`: the wait behind `fugue_exec` and `fugue_send_input`'s `wait_ms`.
//! - `exec`: `fugue_exec`, a command in a live shell.
//! - `expect`, `wait`: waiting on output and on panes' outcomes.
//! - `parallel`, `pipeline`: the run tools.
//! - `agent`: the agent-pipeline tools.

pub(crate) mod agent;
pub(crate) mod answer;
pub(crate) mod command_wait;
pub(crate) mod common;
pub(crate) mod exec;
pub(crate) mod expect;
pub(crate) mod panes;
pub(crate) mod parallel;
pub(crate) mod pipeline;
pub(crate) mod wait;

use crate::error::{Error, Result};
use crate::pane::Pane;
use crate::sandbox::{self, CallSandbox, Mode, Policy};
use crate::tool::args::Args;
use crate::tool::params::{Param, Spec, nested, params};
use crate::words::Words;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The `sandbox` row of fugue_exec, which describes it once: a policy stricter than the
/// server's, a mode or an object (tools/list has room for no more than its keys; errors say their
/// values).
pub(crate) const SANDBOX: Spec =
    Spec::new("Tighter: read-only|workspace-write|{mode,network,writable}");
/// The `sandbox` row of the other tools that start work, which refer to fugue_exec's.
pub(crate) const SANDBOX_AS_EXECS: Spec = Spec::new("As fugue_exec's");

/// What a call asked for in its `sandbox` argument, checked; `policy` makes it a pane's policy.
#[derive(Debug, Clone)]
pub(crate) struct SandboxArg(CallSandbox);

impl Param for Option<SandboxArg> {
    fn read(args: &Args<'_>, key: &str, _: &Spec) -> Result<Self> {
        let Some(value) = args.value(key) else { return Ok(None) };
        let asked = match value {
            Value::String(word) => {
                CallSandbox { mode: Some(mode_of(word)?), ..CallSandbox::default() }
            }
            Value::Object(_) => asked_object(nested(&args.at(key), value)?)?,
            _ => return Err(Error::invalid(sandbox_forms())),
        };
        Ok(Some(SandboxArg(asked)))
    }
    fn schema(spec: &Spec) -> Value {
        spec.describe(json!({"type": ["string", "object"]}))
    }
}

/// `schema` with the `host` argument of the tools that start work: an ssh destination, where
/// `remote` sends the call (the handlers never see it). Described in fugue_exec's schema only
/// (tools/list is paid for in every agent's context); in `fugue_run_parallel`, on each command.
pub(crate) fn with_host(mut schema: Value, described: bool, per_command: bool) -> Value {
    let host = if described {
        json!({"type": "string", "description": "ssh host (ids: host:ID)"})
    } else {
        json!({"type": "string"})
    };
    let props = if per_command {
        schema["properties"]["commands"]["items"]["properties"].as_object_mut()
    } else {
        schema["properties"].as_object_mut()
    };
    if let Some(props) = props {
        props.insert("host".into(), host);
    }
    schema
}

/// `pane` for a call that asked for `sandbox`: refused when the pane runs under another policy.
pub(crate) fn check_pane(pane: Arc<Pane>, sandbox: Option<&Arc<Policy>>) -> Result<Arc<Pane>> {
    match sandbox {
        Some(policy) if !pane.sandbox.same(policy) => Err(Error::invalid(format!(
            "pane {} runs under another sandbox ({}); omit pane_id to run in a shell of fugue's \
             own under the one asked for",
            pane.id,
            sandbox::view(&pane.sandbox).map_or_else(|| "off".into(), |v| v.to_string()),
        ))),
        _ => Ok(pane),
    }
}

/// The `sandbox` a call asked for as the pane's whole policy (relative roots against `dir`, the
/// caller's directory): the `server`'s, tightened. Asking for more than it allows is
/// `invalid_argument`, naming it.
pub(crate) fn policy(
    asked: Option<&SandboxArg>,
    dir: &Path,
    server: &Policy,
) -> Result<Option<Arc<Policy>>> {
    let Some(SandboxArg(asked)) = asked else { return Ok(None) };
    sandbox::for_call(asked, dir, server).map(|policy| Some(Arc::new(policy)))
}

/// The forms `sandbox` takes, for its errors: the modes a call may ask for, by their words.
fn sandbox_forms() -> String {
    let modes: Vec<String> = Mode::VALUES
        .iter()
        .filter(|(_, m)| *m != Mode::Off)
        .map(|(w, _)| format!("{w:?}"))
        .collect();
    format!(
        "sandbox is {}, or an object {{mode, network: \"on\"|\"off\", writable: [directories]}}",
        modes.join(", ")
    )
}

params! {
    /// The object form of `sandbox`.
    struct SandboxObject {
        mode: String = Spec::new(""),
        network: Option<String> = Spec::new(""),
        writable: Vec<String> = Spec::new(""),
    }
}

fn asked_object(object: SandboxObject) -> Result<CallSandbox> {
    let mut writable = Vec::new();
    for root in object.writable {
        if root.is_empty() || root.contains('\0') {
            return Err(Error::invalid("sandbox.writable: a directory is a non-empty path"));
        }
        writable.push(PathBuf::from(root));
    }
    let network = match object.network.as_deref() {
        None => None,
        Some("on") => Some(true),
        Some("off") => Some(false),
        Some(other) => {
            return Err(Error::invalid(format!("sandbox.network {other:?}: it is on or off")));
        }
    };
    Ok(CallSandbox { mode: Some(mode_of(&object.mode)?), network, writable })
}

fn mode_of(word: &str) -> Result<Mode> {
    match Mode::from_word(word) {
        Some(mode) if mode != Mode::Off => Ok(mode),
        _ => Err(Error::invalid(format!("sandbox {word:?}: {}", sandbox_forms()))),
    }
}
