//! The ten pane tools: sessions, windows and panes, input, output, status, resize and close.
//!
//! Each tool is one `Tool` value with its schemas and handler side by side. Handlers parse their
//! arguments, call the registry or the pane, and shape a compact result; they never block longer
//! than a close takes, but for `fugue_send_input` with `wait_ms`. What they show of panes (the
//! listing, a pane's status, a read of its output) is in `view`; typing into a pane in `input`.

use crate::error::{Error, Result};
use crate::ids::{PaneId, SessionId, WindowId};
use crate::mux::PaneArgs;
use crate::pane::Pane;
use crate::pane::exit::{Exit, ExitFields, SignalField};
use crate::runtime::Runtime;
use crate::tool::params::{Name, Params, Spec, params};
use crate::tool::{Answer, ENDS, READS, SETS, STARTS, schema::*};
use crate::tool::{Ctx, Tool, choice::Choice};
use crate::tools::{SANDBOX_AS_EXECS, SandboxArg};
use serde::Serialize;
use serde_json::Value;
use std::path::PathBuf;
use std::sync::Arc;

mod find;
mod input;
mod shared;
mod view;

// The defaults of absent arguments, declared in the schemas here, are the handlers' own.
pub(crate) use input::type_answer;
use input::{SendParams, send_input};
pub(crate) use shared::{ENV, PANE_ID};
use shared::{NoParams, PaneParams, SESSION_ID};
pub(crate) use view::session_json;
use view::{OutputParams, get_output, get_status, list_sessions};

pub(crate) static TOOLS: &[Tool<Runtime>] = &[
    Tool {
        name: "fugue_list_sessions",
        title: "List sessions",
        description: "List sessions -> windows -> panes. Each pane: id, name, command, cwd, pid, \
                      status (running/exited), exit_code, signal, rows, cols.",
        hints: READS,
        input: NoParams::schema,
        output: || result(&[("sessions", typed("array"))]),
        durable: false,
        asks: false,
        call: |ctx, args| list_sessions(ctx, Params::read(args)?),
    },
    Tool {
        name: "fugue_create_session",
        title: "Create session",
        description: "Create a session with one window and one pane. With command it runs `$SHELL -c \
                      command`; the pane keeps its output and exit code once it ends.",
        hints: STARTS,
        input: || super::with_host(NewSession::schema(), false, false),
        output: || {
            result(&[
                ("session_id", typed("string")),
                ("window_id", typed("string")),
                ("pane_id", typed("string")),
                ("pid", typed("integer")),
            ])
        },
        durable: false,
        asks: false,
        call: |ctx, args| create_session(ctx, Params::read(args)?),
    },
    Tool {
        name: "fugue_create_window",
        title: "Create window",
        description: "Create a window with one pane in a session.",
        hints: STARTS,
        input: NewWindow::schema,
        output: || {
            result(&[
                ("window_id", typed("string")),
                ("pane_id", typed("string")),
                ("pid", typed("integer")),
            ])
        },
        durable: false,
        asks: false,
        call: |ctx, args| create_window(ctx, Params::read(args)?),
    },
    Tool {
        name: "fugue_create_pane",
        title: "Create pane",
        description: "Add a pane to a window; the window's panes are re-tiled to share its size.",
        hints: STARTS,
        input: NewPane::schema,
        output: || result(&[("pane_id", typed("string")), ("pid", typed("integer"))]),
        durable: false,
        asks: false,
        call: |ctx, args| create_pane(ctx, Params::read(args)?),
    },
    Tool {
        name: "fugue_send_input",
        title: "Send input",
        description: "Type into a pane in this order: `input` as-is, then `keys` items in turn (a \
                      key name: Enter, Tab, Escape, Backspace, Up/Down/Left/Right, Home, End, \
                      PageUp, PageDown, F1-F12, C-a..C-z, C-\\; or {\"text\": \"...\"} typed as-is), \
                      then Enter if `submit`. Returns offset (before the write): pass it as \
                      `since` to see only what the input caused. `pending`: \
                      bytes the program has not read yet. wait_ms: then wait as fugue_exec does \
                      (alone: only wait).",
        hints: STARTS,
        input: SendParams::schema,
        output: || {
            result(&[
                ("bytes", typed("integer")),
                ("offset", typed("integer")),
                ("status", crate::tools::answer::ExecStatus::words()),
                ("program", typed("string")),
            ])
        },
        durable: true,
        asks: true,
        call: |ctx, args| send_input(ctx, Params::read(args)?),
    },
    Tool {
        name: "fugue_get_output",
        title: "Get output",
        description: "Read a pane. format: text (as seen: \\r, cursor moves resolved; main \
                      screen only), raw (bytes as printed), screen (grid + cursor). Last `lines` \
                      lines, or the next after since. pattern: matching lines, groups (offsets), \
                      matches (count). Answers fold repeats, keep the end and what matters \
                      (errors, warnings, keep matches); omitted {lines, since, matter}.",
        hints: READS,
        input: OutputParams::schema,
        output: || {
            result(&[
                ("output", typed("string")),
                ("offset", typed("integer")),
                ("truncated", typed("boolean")),
                ("status", typed("string")),
                ("exit_code", nullable("integer")),
                ("signal", nullable("string")),
            ])
        },
        durable: false,
        asks: false,
        call: |ctx, args| get_output(ctx, Params::read(args)?),
    },
    Tool {
        name: "fugue_get_status",
        title: "Get pane status",
        description: "A pane's status, exit_code, signal, pid, command, size, \
                      offset, timings; while running: activity (prompt/busy/input + program), \
                      cwd, last_exit_code, current_command.",
        hints: READS,
        input: PaneParams::schema,
        output: || {
            result(&[
                ("pane_id", typed("string")),
                ("status", typed("string")),
                ("exit_code", nullable("integer")),
                ("signal", nullable("string")),
                ("pid", typed("integer")),
                ("offset", typed("integer")),
                ("rows", typed("integer")),
                ("cols", typed("integer")),
                ("runtime_ms", typed("integer")),
                ("activity", typed("string")),
            ])
        },
        durable: false,
        asks: false,
        call: |ctx, args| get_status(ctx, Params::read(args)?),
    },
    Tool {
        name: "fugue_resize_pane",
        title: "Resize pane",
        description: "Set a pane's terminal size (at most 250000 cells); the program gets \
                      SIGWINCH.",
        hints: SETS,
        input: ResizeParams::schema,
        output: || {
            result(&[
                ("pane_id", typed("string")),
                ("rows", typed("integer")),
                ("cols", typed("integer")),
            ])
        },
        durable: false,
        asks: false,
        call: |ctx, args| resize_pane(ctx, Params::read(args)?),
    },
    Tool {
        name: "fugue_close_pane",
        title: "Close pane",
        description: "Close a pane: hang-up, SIGTERM, then SIGKILL to every process it started; its \
                      output is discarded. Closing a window's last pane removes it, a session's \
                      last pane the session. Returns how it ended; pane_ids closes several \
                      (results, one per pane).",
        hints: ENDS,
        input: CloseParams::schema,
        output: || {
            result(&[
                ("closed", typed("boolean")),
                ("pane_id", typed("string")),
                ("exit_code", nullable("integer")),
                ("signal", nullable("string")),
                ("results", typed("array")),
            ])
        },
        durable: false,
        asks: false,
        call: |ctx, args| close_pane(ctx, Params::read(args)?),
    },
    Tool {
        name: "fugue_close_session",
        title: "Close session",
        description: "Close every pane of a session at once and remove it.",
        hints: ENDS,
        input: SessionParams::schema,
        output: || result(&[("closed", typed("integer")), ("pane_ids", typed("array"))]),
        durable: false,
        asks: false,
        call: |ctx, args| close_session(ctx, Params::read(args)?),
    },
];

/// The rows every create tool has.
const CWD: Spec = Spec::new("Working directory");
const COMMAND: Spec = Spec::new("Command (default: interactive shell)");
/// Interactive shells get fugue's shell integration unless asked not to.
const INTEGRATION: Spec = Spec::new("fugue_exec support").or_bool(true);

params! {
    /// `fugue_create_session`'s arguments.
    struct NewSession {
        name: Option<Name> = Spec::new("Unique session name (default: a number)"),
        command: Option<String> = COMMAND,
        cwd: Option<PathBuf> = CWD,
        env: Vec<(String, String)> = ENV,
        integration: bool = INTEGRATION,
        sandbox: Option<SandboxArg> = SANDBOX_AS_EXECS,
    }
}

params! {
    /// `fugue_create_window`'s arguments.
    struct NewWindow {
        session_id: String = Spec::new(SESSION_ID),
        name: Option<Name> = Spec::new("Window name, unique in the session"),
        command: Option<String> = COMMAND,
        cwd: Option<PathBuf> = CWD,
        env: Vec<(String, String)> = ENV,
        integration: bool = INTEGRATION,
        sandbox: Option<SandboxArg> = SANDBOX_AS_EXECS,
    }
}

params! {
    /// `fugue_create_pane`'s arguments.
    struct NewPane {
        session_id: String = Spec::new(SESSION_ID),
        window_id: String = Spec::new("Window id or name"),
        command: Option<String> = COMMAND,
        cwd: Option<PathBuf> = CWD,
        env: Vec<(String, String)> = ENV,
        integration: bool = INTEGRATION,
        sandbox: Option<SandboxArg> = SANDBOX_AS_EXECS,
        name: Option<Name> = Spec::new("Unique pane name, usable as pane_id"),
    }
}

/// What every create tool takes for its pane.
struct NewPaneOf {
    name: Option<Name>,
    command: Option<String>,
    cwd: Option<PathBuf>,
    env: Vec<(String, String)>,
    integration: bool,
    sandbox: Option<SandboxArg>,
}

impl NewPaneOf {
    /// The pane to make, for a caller working in `ctx.cwd`.
    fn args(self, ctx: &Ctx<'_, Runtime>) -> Result<PaneArgs> {
        if self.command.as_deref().is_some_and(|c| c.trim().is_empty()) {
            return Err(Error::invalid(
                "argument 'command' is empty; omit it for an interactive shell",
            ));
        }
        Ok(PaneArgs {
            name: self.name.map(|n| n.0),
            command: self.command,
            cwd: ctx.dir(self.cwd),
            env: self.env,
            integration: self.integration,
            sandbox: super::policy(self.sandbox.as_ref(), ctx.cwd, &ctx.sandbox)?,
            roots: None,
        })
    }
}

/// What a create tool answers: the new pane, and the window and session made with it.
#[derive(Serialize)]
struct Created {
    #[serde(skip_serializing_if = "Option::is_none")]
    session_id: Option<SessionId>,
    #[serde(skip_serializing_if = "Option::is_none")]
    window_id: Option<WindowId>,
    pane_id: PaneId,
    pid: u32,
    /// The pane's whole sandbox policy, when the call asked for one.
    #[serde(skip_serializing_if = "Option::is_none")]
    sandbox: Option<Value>,
}

impl Created {
    fn of(pane: &crate::pane::Pane, asked: bool) -> Created {
        Created {
            session_id: None,
            window_id: None,
            pane_id: pane.id.clone(),
            pid: pane.own_pid(),
            sandbox: asked.then(|| crate::sandbox::view(&pane.sandbox)).flatten(),
        }
    }
}

fn create_session(ctx: &Ctx<'_, Runtime>, args: NewSession) -> Result<Answer> {
    let asked = args.sandbox.is_some();
    let pane = NewPaneOf {
        name: None,
        command: args.command,
        cwd: args.cwd,
        env: args.env,
        integration: args.integration,
        sandbox: args.sandbox,
    };
    let new = ctx.mux.create_session(args.name.map(|n| n.0), pane.args(ctx)?)?;
    let created = Created::of(&new.pane, asked);
    let (session_id, window_id) = (Some(new.session_id), Some(new.window_id));
    Answer::of(&Created { session_id, window_id, ..created })
}

fn create_window(ctx: &Ctx<'_, Runtime>, args: NewWindow) -> Result<Answer> {
    let asked = args.sandbox.is_some();
    let pane = NewPaneOf {
        name: None,
        command: args.command,
        cwd: args.cwd,
        env: args.env,
        integration: args.integration,
        sandbox: args.sandbox,
    };
    let name = args.name.map(|n| n.0);
    let pane = ctx.mux.create_window(&args.session_id, name, pane.args(ctx)?)?;
    let created = Created::of(&pane, asked);
    Answer::of(&Created { window_id: Some(pane.window_id.clone()), ..created })
}

fn create_pane(ctx: &Ctx<'_, Runtime>, args: NewPane) -> Result<Answer> {
    let asked = args.sandbox.is_some();
    let pane = NewPaneOf {
        name: args.name,
        command: args.command,
        cwd: args.cwd,
        env: args.env,
        integration: args.integration,
        sandbox: args.sandbox,
    };
    let pane = ctx.mux.create_pane(&args.session_id, &args.window_id, pane.args(ctx)?)?;
    Answer::of(&Created::of(&pane, asked))
}

params! {
    /// `fugue_resize_pane`'s arguments.
    struct ResizeParams {
        pane_id: String = Spec::new(PANE_ID),
        rows: u16 = Spec::new("Rows").range(2, 1000),
        cols: u16 = Spec::new("Columns").range(10, 1000),
    }
}

#[derive(Serialize)]
struct Resized {
    pane_id: PaneId,
    rows: u16,
    cols: u16,
}

fn resize_pane(ctx: &Ctx<'_, Runtime>, args: ResizeParams) -> Result<Answer> {
    let pane = ctx.mux.pane(&args.pane_id)?;
    crate::pane::check_size(args.rows, args.cols)?;
    pane.resize(args.rows, args.cols)?;
    Answer::of(&Resized { pane_id: pane.id.clone(), rows: args.rows, cols: args.cols })
}

/// One pane `fugue_close_pane` closed, and how its process ended.
#[derive(Serialize)]
struct ClosedPane {
    pane_id: PaneId,
    #[serde(flatten)]
    exit: ExitFields,
}

/// What `fugue_close_pane` answers: the one pane, or each of `pane_ids`.
#[derive(Serialize)]
struct Closed {
    closed: bool,
    #[serde(flatten)]
    one: Option<ClosedPane>,
    #[serde(skip_serializing_if = "Option::is_none")]
    results: Option<Vec<ClosedPane>>,
}

params! {
    /// `fugue_close_pane`'s arguments: one of them.
    struct CloseParams {
        pane_id: Option<String> = Spec::new(PANE_ID),
        pane_ids: Vec<String> = Spec::new("Several panes, closed together").range(1, u64::MAX),
    }
}

fn close_pane(ctx: &Ctx<'_, Runtime>, args: CloseParams) -> Result<Answer> {
    let ended = |(pane, exit): &(Arc<Pane>, Option<Exit>)| ClosedPane {
        pane_id: pane.id.clone(),
        exit: ExitFields::new(*exit, SignalField::Always),
    };
    match (args.pane_id, args.pane_ids.is_empty()) {
        (Some(key), true) => {
            let one = Some(ended(&ctx.mux.close_pane(&key)?));
            Answer::of(&Closed { closed: true, one, results: None })
        }
        (None, false) => {
            let results = ctx.mux.close_panes(&args.pane_ids)?.iter().map(ended).collect();
            Answer::of(&Closed { closed: true, one: None, results: Some(results) })
        }
        _ => Err(Error::invalid("give pane_id or pane_ids (one of them)")),
    }
}

#[derive(Serialize)]
struct SessionClosed<'a> {
    closed: usize,
    pane_ids: Vec<&'a str>,
}

params! {
    /// `fugue_close_session`'s arguments.
    struct SessionParams {
        session_id: String = Spec::new(SESSION_ID),
    }
}

fn close_session(ctx: &Ctx<'_, Runtime>, args: SessionParams) -> Result<Answer> {
    let closed = ctx.mux.close_session(&args.session_id)?;
    let pane_ids: Vec<&str> = closed.iter().map(|(p, _)| &p.id[..]).collect();
    Answer::of(&SessionClosed { closed: pane_ids.len(), pane_ids })
}
