//! The ten pane tools: sessions, windows and panes, input, output, status, resize and close.
//!
//! Each tool is one `Tool` value with its schemas and handler side by side. Handlers parse their
//! arguments, call the registry or the pane, and shape a compact result; they never block longer
//! than a close takes, but for `fugue_send_input` with `wait_ms`. What they show of panes (the
//! listing, a pane's status, a read of its output) is in `view`; typing into a pane in `input`.

use crate::error::{Error, Result};
use crate::mux::PaneArgs;
use crate::pane::Pane;
use crate::pane::exit::{Exit, ExitFields, SignalField};
use crate::runtime::{Ctx, Tool};
use crate::tool::args::Args;
use crate::tool::choice::Choice;
use crate::tool::{Answer, ENDS, READS, SETS, STARTS, schema::*};
use crate::tools::common::responses;
use serde::Serialize;
use serde_json::{Value, json};
use std::sync::Arc;

mod input;
mod view;

// The defaults of absent arguments, declared in the schemas here, are the handlers' own.
pub(crate) use input::type_answer;
use input::{SUBMIT, send_input};
pub(crate) use view::session_json;
use view::{Format, LINES, get_output, get_status, list_sessions};

pub(crate) static TOOLS: &[Tool] = &[
    Tool {
        name: "fugue_list_sessions",
        title: "List sessions",
        description: "List sessions -> windows -> panes. Each pane: id, name, command, cwd, pid, \
                      status (running/exited), exit_code, signal, rows, cols.",
        hints: READS,
        input: || object(&[], &[]),
        output: || result(&[("sessions", typed("array"))]),
        durable: false,
        asks: false,
        call: list_sessions,
    },
    Tool {
        name: "fugue_create_session",
        title: "Create session",
        description: "Create a session with one window and one pane. With command it runs `$SHELL -c command` and the pane \
                      keeps its output and exit code after it ends.",
        hints: STARTS,
        input: || {
            object(
                &[
                    ("name", string("Unique session name (default: a number)")),
                    ("command", string("Command for the first pane (default: interactive shell)")),
                    ("cwd", string("Working directory (default: fugue's)")),
                    ("env", env()),
                    ("integration", integration()),
                    ("sandbox", super::sandbox_ref()),
                    ("host", super::host_ref()),
                ],
                &[],
            )
        },
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
        call: create_session,
    },
    Tool {
        name: "fugue_create_window",
        title: "Create window",
        description: "Create a window with one pane in a session.",
        hints: STARTS,
        input: || {
            object(
                &[
                    ("session_id", string("Session id or name")),
                    ("name", string("Window name, unique in the session")),
                    ("command", string("Command (default: interactive shell)")),
                    ("cwd", string("Working directory")),
                    ("env", env()),
                    ("integration", integration()),
                    ("sandbox", super::sandbox_ref()),
                ],
                &["session_id"],
            )
        },
        output: || {
            result(&[
                ("window_id", typed("string")),
                ("pane_id", typed("string")),
                ("pid", typed("integer")),
            ])
        },
        durable: false,
        asks: false,
        call: create_window,
    },
    Tool {
        name: "fugue_create_pane",
        title: "Create pane",
        description: "Add a pane to a window; the window's panes are re-tiled to share its size.",
        hints: STARTS,
        input: || {
            object(
                &[
                    ("session_id", string("Session id or name")),
                    ("window_id", string("Window id or name")),
                    ("command", string("Command (default: interactive shell)")),
                    ("cwd", string("Working directory")),
                    ("env", env()),
                    ("integration", integration()),
                    ("sandbox", super::sandbox_ref()),
                    ("name", string("Unique pane name, usable as pane_id")),
                ],
                &["session_id", "window_id"],
            )
        },
        output: || result(&[("pane_id", typed("string")), ("pid", typed("integer"))]),
        durable: false,
        asks: false,
        call: create_pane,
    },
    Tool {
        name: "fugue_send_input",
        title: "Send input",
        description: "Type into a pane in this order: `input` as-is, then `keys` items in turn (a \
                      key name: Enter, Tab, Escape, Backspace, Up/Down/Left/Right, Home, End, \
                      PageUp, PageDown, F1-F12, C-a..C-z, C-\\; or {\"text\": \"...\"} typed as-is), \
                      then Enter if `submit`. Returns the output offset before the write: \
                      pass it as `since` to read or expect only what the input caused. `pending`: \
                      bytes the program has not read yet. wait_ms: then wait as fugue_exec does \
                      (alone: only wait).",
        hints: STARTS,
        input: || {
            object(
                &[
                    ("pane_id", string("Pane id or name")),
                    ("input", string("Text to type")),
                    (
                        "keys",
                        json!({"type": "array", "items": {"oneOf": [{"type": "string"},
                                   {"type": "object", "properties": {"text": {"type": "string"}},
                                    "required": ["text"]}]},
                               "description": "After input, in order: key names and {text}"}),
                    ),
                    ("submit", boolean_or("Press Enter at the end", SUBMIT)),
                    ("wait_ms", integer("Then wait this long for the outcome")),
                    responses::schema_ref("With wait_ms: as fugue_exec's"),
                    (
                        "max_bytes",
                        integer_or(
                            "Output budget with wait_ms",
                            crate::tools::exec::DEFAULT_MAX_BYTES,
                        ),
                    ),
                    crate::tools::common::keep_schema(),
                ],
                &["pane_id"],
            )
        },
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
        call: send_input,
    },
    Tool {
        name: "fugue_get_output",
        title: "Get output",
        description: "Read a pane. format: text (what a person sees: \\r and cursor moves resolved, \
                      colours dropped; main screen only), raw (bytes as printed), screen (visible \
                      grid + cursor). Without since: the last `lines` lines, fitted to max_bytes \
                      like other answers (errors kept; omitted_lines). With since (an offset from \
                      an earlier answer): the next `lines` lines; continue from the returned \
                      offset.",
        hints: READS,
        input: || {
            object(
                &[
                    ("pane_id", string("Pane id or name")),
                    ("lines", integer_or("Lines (screen: the last rows)", LINES)),
                    ("format", Format::schema("View")),
                    ("since", integer("Read on from this offset")),
                    (
                        "max_bytes",
                        integer_or("Output budget", crate::tools::exec::DEFAULT_MAX_BYTES),
                    ),
                ],
                &["pane_id"],
            )
        },
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
        call: get_output,
    },
    Tool {
        name: "fugue_get_status",
        title: "Get pane status",
        description: "A pane's status (running/exited), exit_code, signal, pid, command, size, \
                      offset, timings; while running: activity (prompt/busy/input + program), \
                      cwd, last_exit_code, current_command.",
        hints: READS,
        input: || object(&[("pane_id", string("Pane id or name"))], &["pane_id"]),
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
        call: get_status,
    },
    Tool {
        name: "fugue_resize_pane",
        title: "Resize pane",
        description: "Set a pane's terminal size (at most 250000 cells); the program gets \
                      SIGWINCH.",
        hints: SETS,
        input: || {
            object(
                &[
                    ("pane_id", string("Pane id or name")),
                    ("rows", integer("Rows, 2-1000")),
                    ("cols", integer("Columns, 10-1000")),
                ],
                &["pane_id", "rows", "cols"],
            )
        },
        output: || {
            result(&[
                ("pane_id", typed("string")),
                ("rows", typed("integer")),
                ("cols", typed("integer")),
            ])
        },
        durable: false,
        asks: false,
        call: resize_pane,
    },
    Tool {
        name: "fugue_close_pane",
        title: "Close pane",
        description: "Close a pane: hang-up, then SIGTERM, then SIGKILL to every process it started; \
                      its output is discarded. Closing a window's last pane removes the window, and \
                      a session's last pane the session (its id and name are gone). Returns how it \
                      ended. pane_ids closes several at once: results, one per pane.",
        hints: ENDS,
        input: || {
            object(
                &[
                    ("pane_id", string("Pane id or name")),
                    (
                        "pane_ids",
                        json!({"type": "array", "items": {"type": "string"}, "minItems": 1,
                               "description": "Several panes, closed together"}),
                    ),
                ],
                &[],
            )
        },
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
        call: close_pane,
    },
    Tool {
        name: "fugue_close_session",
        title: "Close session",
        description: "Close every pane of a session at once and remove it.",
        hints: ENDS,
        input: || object(&[("session_id", string("Session id or name"))], &["session_id"]),
        output: || result(&[("closed", typed("integer")), ("pane_ids", typed("array"))]),
        durable: false,
        asks: false,
        call: close_session,
    },
];

/// The pane arguments shared by the create tools.
fn pane_args(ctx: &Ctx<'_>, args: &Args<'_>, name_key: Option<&str>) -> Result<PaneArgs> {
    let command = args.str("command")?.map(str::to_string);
    if command.as_deref().is_some_and(|c| c.trim().is_empty()) {
        return Err(Error::invalid(
            "argument 'command' is empty; omit it for an interactive shell",
        ));
    }
    Ok(PaneArgs {
        name: match name_key {
            Some(key) => args.name(key)?,
            None => None,
        },
        command,
        cwd: ctx.dir(args.path("cwd")?),
        env: args.env("env")?,
        integration: args.bool("integration")?.unwrap_or(INTEGRATION),
        sandbox: super::asked_sandbox(args, ctx.cwd)?,
        roots: None,
    })
}

/// The `integration` argument of the create tools.
fn integration() -> Value {
    boolean_or("fugue_exec support", INTEGRATION)
}

/// Interactive shells get fugue's shell integration unless asked not to.
const INTEGRATION: bool = true;

/// What a create tool answers: the new pane, and the window and session made with it.
#[derive(Serialize)]
struct Created {
    #[serde(skip_serializing_if = "Option::is_none")]
    session_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    window_id: Option<String>,
    pane_id: String,
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

fn create_session(ctx: &Ctx<'_>, args: &Args<'_>) -> Result<Answer> {
    let name = args.name("name")?;
    let (session_id, window_id, pane) =
        ctx.mux.create_session(name, pane_args(ctx, args, None)?)?;
    let created = Created::of(&pane, args.has("sandbox"));
    Answer::of(&Created { session_id: Some(session_id), window_id: Some(window_id), ..created })
}

fn create_window(ctx: &Ctx<'_>, args: &Args<'_>) -> Result<Answer> {
    let session = args.required_str("session_id")?;
    let name = args.name("name")?;
    let pane = ctx.mux.create_window(session, name, pane_args(ctx, args, None)?)?;
    let created = Created::of(&pane, args.has("sandbox"));
    Answer::of(&Created { window_id: Some(pane.window_id.clone()), ..created })
}

fn create_pane(ctx: &Ctx<'_>, args: &Args<'_>) -> Result<Answer> {
    let session = args.required_str("session_id")?;
    let window = args.required_str("window_id")?;
    let pane = ctx.mux.create_pane(session, window, pane_args(ctx, args, Some("name"))?)?;
    Answer::of(&Created::of(&pane, args.has("sandbox")))
}

#[derive(Serialize)]
struct Resized {
    pane_id: String,
    rows: u64,
    cols: u64,
}

fn resize_pane(ctx: &Ctx<'_>, args: &Args<'_>) -> Result<Answer> {
    let pane = ctx.mux.pane(args.required_str("pane_id")?)?;
    let rows =
        args.u64("rows", 2, 1000)?.ok_or_else(|| Error::invalid("argument 'rows' is required"))?;
    let cols =
        args.u64("cols", 10, 1000)?.ok_or_else(|| Error::invalid("argument 'cols' is required"))?;
    crate::pane::check_size(rows as u16, cols as u16)?;
    pane.resize(rows as u16, cols as u16)?;
    Answer::of(&Resized { pane_id: pane.id.clone(), rows, cols })
}

/// One pane `fugue_close_pane` closed, and how its process ended.
#[derive(Serialize)]
struct Ended {
    pane_id: String,
    #[serde(flatten)]
    exit: ExitFields,
}

/// What `fugue_close_pane` answers: the one pane, or each of `pane_ids`.
#[derive(Serialize)]
struct Closed {
    closed: bool,
    #[serde(flatten)]
    one: Option<Ended>,
    #[serde(skip_serializing_if = "Option::is_none")]
    results: Option<Vec<Ended>>,
}

fn close_pane(ctx: &Ctx<'_>, args: &Args<'_>) -> Result<Answer> {
    let ended = |(pane, exit): &(Arc<Pane>, Option<Exit>)| Ended {
        pane_id: pane.id.clone(),
        exit: ExitFields::new(*exit, SignalField::Always),
    };
    match (args.str("pane_id")?, args.has("pane_ids")) {
        (Some(key), false) => {
            let one = Some(ended(&ctx.mux.close_pane(key)?));
            Answer::of(&Closed { closed: true, one, results: None })
        }
        (None, true) => {
            let keys = args.strings("pane_ids")?;
            if keys.is_empty() {
                return Err(Error::invalid("pane_ids is empty; name at least one pane"));
            }
            let results = ctx.mux.close_panes(&keys)?.iter().map(ended).collect();
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

fn close_session(ctx: &Ctx<'_>, args: &Args<'_>) -> Result<Answer> {
    let closed = ctx.mux.close_session(args.required_str("session_id")?)?;
    let pane_ids: Vec<&str> = closed.iter().map(|(p, _)| p.id.as_str()).collect();
    Answer::of(&SessionClosed { closed: pane_ids.len(), pane_ids })
}
