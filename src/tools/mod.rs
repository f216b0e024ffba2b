//! The tool handlers: every tool fugue offers, one module per group, above the domain they act on
//! and the runtime that owns it.
//!
//! Each module defines its tools (`TOOL` or `TOOLS`: name, description, schemas with their
//! defaults, handler) next to the handlers; `mcp::registry` lists them in `tools/list` order. In:
//! a `Ctx` (the runtime, the caller's directory, the call's cancel and progress) and checked
//! `Args`. Out: a result value or an `Error` with a stable code. What a handler needs of the
//! domain — panes, live shells, the registry of panes, agent pipelines, searches of output — it
//! takes from `pane`, `shell`, `mux`, `agent` and `orchestrate`, none of which knows of these.
//!
//! - `panes`: sessions, windows and panes, input, output, status, resize, close.
//! - `command_wait`: the wait behind `fugue_exec` and `fugue_send_input`'s `wait_ms`.
//! - `exec`: `fugue_exec`, a command in a live shell.
//! - `expect`, `wait`: waiting on output and on panes' outcomes.
//! - `parallel`, `pipeline`: the run tools.
//! - `agent`: the agent-pipeline tools.

pub(crate) mod agent;
pub(crate) mod command_wait;
pub(crate) mod exec;
pub(crate) mod expect;
pub(crate) mod panes;
pub(crate) mod parallel;
pub(crate) mod pipeline;
pub(crate) mod wait;
