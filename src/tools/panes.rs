//! The ten pane tools: sessions, windows and panes, input, output, status, resize and close.
//!
//! Each tool is one `Tool` value with its schemas and handler side by side. Handlers parse their
//! arguments, call the registry or the pane, and shape a compact result; they never block longer
//! than a close takes.

use crate::config::config;
use crate::error::{Error, Result};
use crate::ids::unix_ms;
use crate::mux::{PaneArgs, Session};
use crate::orchestrate::responses::{self, Responses};
use crate::pane::Pane;
use crate::pane::budget::Budget;
use crate::pane::exit::{PaneState, SignalField, write_exit, write_fields};
use crate::pane::output::{ReadRequest, View};
use crate::runtime::{Ctx, Tool};
use crate::tool::args::Args;
use crate::tool::choice::{Choice, choice_enum};
use crate::tool::{ENDS, READS, SETS, STARTS, schema::*};
use serde_json::{Value, json};
use std::sync::Arc;

/// The most bytes the `keys` of one `fugue_send_input` may make.
const MAX_KEY_BYTES: usize = 64 << 10;

/// The largest `input` one `fugue_send_input` writes.
const MAX_INPUT_BYTES: usize = 1 << 20;

// Defaults of absent arguments, declared in the schemas and applied by the handlers.
/// `fugue_send_input` `submit`.
const SUBMIT: bool = false;
/// `fugue_get_output` `lines`.
const LINES: u64 = 100;
/// `fugue_get_output` `max_bytes`, lowered to `FUGUE_MAX_OUTPUT_BYTES` when that is smaller.
const MAX_BYTES: u64 = 64 << 10;

pub(crate) static TOOLS: &[Tool] = &[
    Tool {
        name: "fugue_list_sessions",
        title: "List sessions",
        description: "List sessions -> windows -> panes. Each pane: id, name, command, cwd, pid, \
                      status (running/exited), exit_code, signal, rows, cols.",
        hints: READS,
        input: || object(&[], &[]),
        output: || result(&[("sessions", typed("array"))]),
        call: list_sessions,
    },
    Tool {
        name: "fugue_create_session",
        title: "Create session",
        description: "Create a session with one window and one pane. Without command the pane runs \
                      an interactive shell; with command it runs `$SHELL -c command` and the pane \
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
                    ("sandbox", super::sandbox_arg()),
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
        call: create_session,
    },
    Tool {
        name: "fugue_create_window",
        title: "Create window",
        description: "Create a window with one pane in a session (id or name).",
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
                    ("sandbox", super::sandbox_arg()),
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
                    ("sandbox", super::sandbox_arg()),
                    ("name", string("Unique pane name, usable as pane_id")),
                ],
                &["session_id", "window_id"],
            )
        },
        output: || result(&[("pane_id", typed("string")), ("pid", typed("integer"))]),
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
                    crate::orchestrate::keep_schema(),
                ],
                &["pane_id"],
            )
        },
        output: || {
            result(&[
                ("bytes", typed("integer")),
                ("offset", typed("integer")),
                ("status", typed("string")),
                ("program", typed("string")),
            ])
        },
        call: send_input,
    },
    Tool {
        name: "fugue_get_output",
        title: "Get output",
        description: "Read a pane. format: text (what a person sees: \\r and cursor moves resolved, \
                      colours dropped; the main screen only, not a full-screen program's), raw \
                      (bytes as printed), screen (visible grid + cursor). Without since: the last \
                      `lines` lines. With since (an offset from send_input or an earlier read): \
                      the first `lines` lines after it; continue from the returned offset. \
                      max_bytes caps it.",
        hints: READS,
        input: || {
            object(
                &[
                    ("pane_id", string("Pane id or name")),
                    ("lines", integer_or("Lines to return (screen: the grid's last rows)", LINES)),
                    ("format", Format::schema("View")),
                    ("since", integer("Return only output after this offset")),
                    (
                        "max_bytes",
                        integer_or("Byte cap (at most FUGUE_MAX_OUTPUT_BYTES, 1 MiB)", MAX_BYTES),
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
        call: get_output,
    },
    Tool {
        name: "fugue_get_status",
        title: "Get pane status",
        description: "A pane's status (running/exited), exit_code, signal, pid, command, size, \
                      output offset and timings; while running: activity (prompt/busy/input), \
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
        call: close_pane,
    },
    Tool {
        name: "fugue_close_session",
        title: "Close session",
        description: "Close every pane of a session at once and remove it.",
        hints: ENDS,
        input: || object(&[("session_id", string("Session id or name"))], &["session_id"]),
        output: || result(&[("closed", typed("integer")), ("pane_ids", typed("array"))]),
        call: close_session,
    },
];

fn list_sessions(ctx: &Ctx<'_>, _: &Args<'_>) -> Result<Value> {
    let sessions = ctx.mux.with_sessions(|sessions, pane| {
        sessions.iter().map(|s| session_json(s, pane)).collect::<Vec<_>>()
    });
    let mut value = json!({});
    value["sessions"] = Value::Array(sessions);
    Ok(value)
}

pub(crate) fn session_json(session: &Session, pane: &dyn Fn(&str) -> Option<Arc<Pane>>) -> Value {
    let windows: Vec<Value> = session
        .windows
        .iter()
        .map(|w| {
            let panes: Vec<Value> =
                w.panes.iter().filter_map(|id| pane(id)).map(|p| pane_json(&p)).collect();
            let mut window = json!({"id": w.id, "name": w.name, "rows": w.rows, "cols": w.cols});
            window["panes"] = Value::Array(panes);
            window
        })
        .collect();
    let mut value = json!({"id": session.id, "name": session.name,
                           "created_at": unix_ms(session.created_at)});
    // Moved in, not passed to json!, which would copy the whole tree through Serialize.
    value["windows"] = Value::Array(windows);
    value
}

fn pane_json(pane: &Pane) -> Value {
    let (rows, cols) = pane.size();
    let mut value = json!({
        "id": pane.id,
        "name": pane.name,
        "command": pane.command,
        "cwd": pane.cwd,
        "pid": pane.pid,
        "rows": rows,
        "cols": cols,
    });
    add_sandbox(&mut value, pane);
    add_exit(&mut value, pane);
    crate::shell::status::add_live(&mut value, pane);
    value
}

/// Adds `sandbox` (mode, writable roots, network) for a sandboxed pane; nothing otherwise.
fn add_sandbox(value: &mut Value, pane: &Pane) {
    if let Some(view) = crate::sandbox::view(pane.sandbox, pane.roots.as_deref()) {
        value["sandbox"] = view;
    }
}

/// Adds `status`, `exit_code` and `signal` to a result object.
pub(crate) fn add_exit(value: &mut Value, pane: &Pane) {
    write_fields(value, &PaneState::new(pane.output().exit()));
}

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
        sandbox: super::asked_sandbox(args)?,
        roots: None,
    })
}

/// The `integration` argument of the create tools.
fn integration() -> Value {
    boolean_or("fugue_exec support", INTEGRATION)
}

/// Interactive shells get fugue's shell integration unless asked not to.
const INTEGRATION: bool = true;

fn create_session(ctx: &Ctx<'_>, args: &Args<'_>) -> Result<Value> {
    let name = args.name("name")?;
    let (session_id, window_id, pane) =
        ctx.mux.create_session(name, pane_args(ctx, args, None)?)?;
    Ok(
        json!({"session_id": session_id, "window_id": window_id, "pane_id": pane.id, "pid": pane.pid}),
    )
}

fn create_window(ctx: &Ctx<'_>, args: &Args<'_>) -> Result<Value> {
    let session = args.required_str("session_id")?;
    let name = args.name("name")?;
    let pane = ctx.mux.create_window(session, name, pane_args(ctx, args, None)?)?;
    Ok(json!({"window_id": pane.window_id, "pane_id": pane.id, "pid": pane.pid}))
}

fn create_pane(ctx: &Ctx<'_>, args: &Args<'_>) -> Result<Value> {
    let session = args.required_str("session_id")?;
    let window = args.required_str("window_id")?;
    let pane = ctx.mux.create_pane(session, window, pane_args(ctx, args, Some("name"))?)?;
    Ok(json!({"pane_id": pane.id, "pid": pane.pid}))
}

fn send_input(ctx: &Ctx<'_>, args: &Args<'_>) -> Result<Value> {
    let started = std::time::Instant::now();
    let pane = ctx.mux.pane(args.required_str("pane_id")?)?;
    // A wait's answer names the pane and how long it took, as fugue_exec's does.
    let waited = |mut value: Value| {
        value["pane_id"] = json!(pane.id);
        value["duration_ms"] = json!(started.elapsed().as_millis() as u64);
        value
    };
    let input = args.str("input")?.unwrap_or("");
    let keys = args.array("keys")?.map_or(&[][..], Vec::as_slice);
    let submit = args.bool("submit")?.unwrap_or(SUBMIT);
    let wait = crate::tools::command_wait::wait_ms(args)?;
    let max_bytes = crate::tools::exec::max_bytes(args)?;
    let keep = crate::orchestrate::keep(args)?;
    let budget = Budget::whole(max_bytes, keep.as_ref());
    let responses = Responses::parse(args)?;
    if responses.is_some() && wait.is_none() {
        return Err(Error::invalid("responses are used while waiting: give wait_ms too"));
    }
    if input.is_empty() && keys.is_empty() && !submit {
        if let Some(wait) = wait {
            let after = crate::tools::command_wait::after_input;
            return after(ctx, &pane, None, wait, &budget, responses).map(waited);
        }
        return Err(Error::invalid(
            "nothing to send: give input, keys, or submit: true (or wait_ms to only wait)",
        ));
    }
    if input.len() > MAX_INPUT_BYTES {
        return Err(Error::invalid(format!(
            "input is {} bytes; the limit is {MAX_INPUT_BYTES} per call",
            input.len()
        )));
    }
    let application_cursor = !keys.is_empty() && pane.application_cursor();
    let items = keys
        .iter()
        .enumerate()
        .map(|(i, item)| crate::pane::keys::item(i, item, application_cursor))
        .collect::<Result<Vec<_>>>()?;
    let key_bytes: usize = items.iter().map(Vec::len).sum();
    if key_bytes > MAX_KEY_BYTES {
        return Err(Error::invalid(format!(
            "keys make {key_bytes} bytes; the limit is {MAX_KEY_BYTES} per call"
        )));
    }
    // Each key item and Enter go in writes of their own, in order, so a program that reads the
    // typed text in one read sees Enter as a key press and not as part of a paste.
    let parts: Vec<&[u8]> = std::iter::once(input.as_bytes())
        .chain(items.iter().map(Vec::as_slice))
        .chain(submit.then_some(&b"\r"[..]))
        .filter(|part| !part.is_empty())
        .collect();
    let seen = crate::shell::live::Live::of(&pane).map(|live| live.shell.with(|st| st.prompts));
    let (offset, pending) = pane.send(&parts)?;
    let written: usize = parts.iter().map(|p| p.len()).sum();
    if let Some(wait) = wait {
        let mut value = crate::tools::command_wait::after_input(
            ctx,
            &pane,
            Some((offset, seen)),
            wait,
            &budget,
            responses,
        )?;
        value["bytes"] = json!(written);
        return Ok(waited(value));
    }
    let mut value = json!({"bytes": written, "offset": offset});
    if pending > 0 {
        // The program is not reading its input (yet); the rest goes in when it does.
        value["pending"] = json!(pending);
    }
    Ok(value)
}

choice_enum! {
    /// The output views `fugue_get_output` offers, as a call names them.
    pub(crate) enum Format {
        Text = "text",
        Raw = "raw",
        Screen = "screen",
    }
}

fn get_output(ctx: &Ctx<'_>, args: &Args<'_>) -> Result<Value> {
    let pane = ctx.mux.pane(args.required_str("pane_id")?)?;
    let view = match Format::parse(args, "format")? {
        Format::Text => View::Text,
        Format::Raw => View::Raw,
        Format::Screen => View::Screen,
    };
    let max_output = config().max_output_bytes as u64;
    let req = ReadRequest {
        view,
        lines: args.u64("lines", 1, 1_000_000)?.unwrap_or(LINES) as usize,
        since: args.u64("since", 0, u64::MAX)?,
        max_bytes: args.u64("max_bytes", 1, max_output)?.unwrap_or(MAX_BYTES.min(max_output))
            as usize,
    };
    let read = pane.output().read(&req)?;
    let mut value =
        json!({"output": read.output, "offset": read.offset, "truncated": read.truncated});
    if let Some((row, col)) = read.cursor {
        value["cursor"] = json!({"row": row, "col": col});
    }
    if read.alternate {
        value["alternate_screen"] = json!(true);
    }
    if read.dropped {
        value["dropped"] = json!(true);
    }
    add_exit(&mut value, &pane);
    Ok(value)
}

fn get_status(ctx: &Ctx<'_>, args: &Args<'_>) -> Result<Value> {
    let pane = ctx.mux.pane(args.required_str("pane_id")?)?;
    let (rows, cols) = pane.size();
    let (offset, exited_at) = pane.output().with(|s| (s.ring.end(), s.exited_at));
    let runtime = exited_at.unwrap_or_else(std::time::Instant::now) - pane.started;
    let mut value = json!({
        "pane_id": pane.id,
        "name": pane.name,
        "session_id": pane.session_id,
        "window_id": pane.window_id,
        "pid": pane.pid,
        "command": pane.command,
        "cwd": pane.cwd,
        "rows": rows,
        "cols": cols,
        "offset": offset,
        "started_at": unix_ms(pane.created_at),
        "runtime_ms": runtime.as_millis() as u64,
    });
    add_sandbox(&mut value, &pane);
    add_exit(&mut value, &pane);
    crate::shell::status::add_live(&mut value, &pane);
    Ok(value)
}

fn resize_pane(ctx: &Ctx<'_>, args: &Args<'_>) -> Result<Value> {
    let pane = ctx.mux.pane(args.required_str("pane_id")?)?;
    let rows =
        args.u64("rows", 2, 1000)?.ok_or_else(|| Error::invalid("argument 'rows' is required"))?;
    let cols =
        args.u64("cols", 10, 1000)?.ok_or_else(|| Error::invalid("argument 'cols' is required"))?;
    crate::pane::check_size(rows as u16, cols as u16)?;
    pane.resize(rows as u16, cols as u16)?;
    Ok(json!({"pane_id": pane.id, "rows": rows, "cols": cols}))
}

fn close_pane(ctx: &Ctx<'_>, args: &Args<'_>) -> Result<Value> {
    let ended = |pane: &Pane, exit| {
        let mut value = json!({"pane_id": pane.id});
        write_exit(&mut value, exit, SignalField::Always);
        value
    };
    match (args.str("pane_id")?, args.has("pane_ids")) {
        (Some(key), false) => {
            let (pane, exit) = ctx.mux.close_pane(key)?;
            let mut value = ended(&pane, exit);
            value["closed"] = json!(true);
            Ok(value)
        }
        (None, true) => {
            let keys = args.strings("pane_ids")?;
            if keys.is_empty() {
                return Err(Error::invalid("pane_ids is empty; name at least one pane"));
            }
            let closed = ctx.mux.close_panes(&keys)?;
            let results: Vec<Value> =
                closed.iter().map(|(pane, exit)| ended(pane, *exit)).collect();
            Ok(json!({"closed": true, "results": results}))
        }
        _ => Err(Error::invalid("give pane_id or pane_ids (one of them)")),
    }
}

fn close_session(ctx: &Ctx<'_>, args: &Args<'_>) -> Result<Value> {
    let closed = ctx.mux.close_session(args.required_str("session_id")?)?;
    let ids: Vec<&str> = closed.iter().map(|(p, _)| p.id.as_str()).collect();
    Ok(json!({"closed": ids.len(), "pane_ids": ids}))
}
