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
use crate::sandbox::{self, Mode};
use crate::tool::args::Args;
use serde_json::{Value, json};

/// The `sandbox` argument of the tools that start work: a policy stricter than the server's.
pub(crate) fn sandbox_arg() -> Value {
    json!({"type": "string", "enum": ["read-only", "workspace-write"],
           "description": "Stricter than the server's sandbox"})
}

/// `pane` for a call that asked for `sandbox`: refused when the pane runs under another one.
pub(crate) fn check_pane(
    pane: std::sync::Arc<crate::pane::Pane>,
    sandbox: Option<Mode>,
) -> Result<std::sync::Arc<crate::pane::Pane>> {
    match sandbox {
        Some(mode) if pane.sandbox != mode => Err(Error::invalid(format!(
            "pane {} runs under sandbox {}, not {}; omit pane_id to run in a shell of fugue's \
             own under {}",
            pane.id,
            pane.sandbox.name(),
            mode.name(),
            mode.name()
        ))),
        _ => Ok(pane),
    }
}

/// The `sandbox` a call asked for, checked against the server's policy: asking for more than
/// it allows is `invalid_argument`, naming it.
pub(crate) fn asked_sandbox(args: &Args<'_>) -> Result<Option<Mode>> {
    let Some(text) = args.str("sandbox")? else { return Ok(None) };
    let mode = match Mode::parse(text) {
        Some(mode) if mode != Mode::Off => mode,
        _ => {
            return Err(Error::invalid(format!(
                "sandbox {text:?}: it is read-only or workspace-write"
            )));
        }
    };
    sandbox::effective(Some(mode)).map(Some)
}
