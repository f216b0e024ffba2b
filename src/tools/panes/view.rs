//! What the pane tools show of panes: the listing of sessions, windows and panes, a pane's status
//! and a read of its output, each a typed answer.

use crate::error::Result;
use crate::ids::unix_ms;
use crate::mux::Session;
use crate::pane::Pane;
use crate::pane::activity::one_scan;
use crate::pane::exit::PaneState;
use crate::pane::output::{ReadRequest, View};
use crate::runtime::Ctx;
use crate::shell::status::Doing;
use crate::tool::Answer;
use crate::tool::args::Args;
use crate::tool::choice::{Choice, choice_enum};
use serde::Serialize;
use serde_json::Value;
use std::sync::Arc;

choice_enum! {
    /// The output views `fugue_get_output` offers, as a call names them.
    pub(crate) enum Format {
        Text = "text",
        Raw = "raw",
        Screen = "screen",
    }
}

/// `fugue_get_output` `lines` when absent.
pub(super) const LINES: u64 = 100;
/// `fugue_get_output` `max_bytes` when absent, lowered to `FUGUE_MAX_OUTPUT_BYTES` when that is
/// smaller.
pub(super) const MAX_BYTES: u64 = 64 << 10;

pub(super) fn list_sessions(ctx: &Ctx<'_>, _: &Args<'_>) -> Result<Answer> {
    let sessions = ctx.mux.with_sessions(|sessions, pane| {
        one_scan(|| sessions.iter().map(|s| SessionView::new(s, pane)).collect::<Vec<_>>())
    });
    Answer::of(&Sessions { sessions })
}

#[derive(Serialize)]
struct Sessions {
    sessions: Vec<SessionView>,
}

/// A session as `fugue_list_sessions` and the control socket's tree show it.
#[derive(Serialize)]
pub(crate) struct SessionView {
    id: String,
    name: String,
    created_at: u64,
    windows: Vec<WindowView>,
}

#[derive(Serialize)]
struct WindowView {
    id: String,
    name: String,
    rows: u16,
    cols: u16,
    panes: Vec<PaneView>,
}

/// A pane as the listings show it.
#[derive(Serialize)]
struct PaneView {
    id: String,
    name: Option<String>,
    command: Option<String>,
    cwd: String,
    pid: u32,
    rows: u16,
    cols: u16,
    #[serde(skip_serializing_if = "Option::is_none")]
    sandbox: Option<Value>,
    #[serde(flatten)]
    state: PaneState,
    #[serde(flatten)]
    live: Doing,
}

impl SessionView {
    pub(crate) fn new(session: &Session, pane: &dyn Fn(&str) -> Option<Arc<Pane>>) -> SessionView {
        let windows = session
            .windows
            .iter()
            .map(|w| WindowView {
                id: w.id.clone(),
                name: w.name.clone(),
                rows: w.rows,
                cols: w.cols,
                panes: w
                    .panes
                    .iter()
                    .filter_map(|id| pane(id))
                    .map(|p| PaneView::new(&p))
                    .collect(),
            })
            .collect();
        SessionView {
            id: session.id.clone(),
            name: session.name.clone(),
            created_at: unix_ms(session.created_at),
            windows,
        }
    }
}

impl PaneView {
    fn new(pane: &Pane) -> PaneView {
        let (rows, cols) = pane.size();
        // How it ended, before what it does: one that ends in between shows no activity beside
        // `exited`.
        let state = PaneState::new(pane.output().exit());
        let mut live = crate::shell::status::doing(pane);
        PaneView {
            id: pane.id.clone(),
            name: pane.name.clone(),
            command: pane.command.clone(),
            // Where it works now, when known; else where it started.
            cwd: live.cwd.take().unwrap_or_else(|| pane.cwd.to_string_lossy().into_owned()),
            pid: pane.pid,
            rows,
            cols,
            sandbox: sandbox(pane),
            state,
            live,
        }
    }
}

/// The session as the control socket's tree shows it.
pub(crate) fn session_json(session: &Session, pane: &dyn Fn(&str) -> Option<Arc<Pane>>) -> Value {
    serde_json::to_value(SessionView::new(session, pane)).unwrap_or_default()
}

/// `sandbox` (mode, writable roots, network) of a sandboxed pane; none otherwise.
fn sandbox(pane: &Pane) -> Option<Value> {
    crate::sandbox::view(pane.sandbox, pane.roots.as_deref())
}

/// What `fugue_get_output` answers.
#[derive(Serialize)]
struct Read {
    output: String,
    offset: u64,
    truncated: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    cursor: Option<Cursor>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    alternate_screen: bool,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    dropped: bool,
    #[serde(flatten)]
    state: PaneState,
}

#[derive(Serialize)]
struct Cursor {
    row: u16,
    col: u16,
}

pub(super) fn get_output(ctx: &Ctx<'_>, args: &Args<'_>) -> Result<Answer> {
    let pane = ctx.mux.pane(args.required_str("pane_id")?)?;
    let view = match Format::parse(args, "format")? {
        Format::Text => View::Text,
        Format::Raw => View::Raw,
        Format::Screen => View::Screen,
    };
    let max_output = ctx.config.max_output_bytes as u64;
    let req = ReadRequest {
        view,
        lines: args.u64("lines", 1, 1_000_000)?.unwrap_or(LINES) as usize,
        since: args.u64("since", 0, u64::MAX)?,
        max_bytes: args.u64("max_bytes", 1, max_output)?.unwrap_or(MAX_BYTES.min(max_output))
            as usize,
    };
    let read = pane.output().read(&req)?;
    Answer::of(&Read {
        output: read.output,
        offset: read.offset,
        truncated: read.truncated,
        cursor: read.cursor.map(|(row, col)| Cursor { row, col }),
        alternate_screen: read.alternate,
        dropped: read.dropped,
        state: PaneState::new(pane.output().exit()),
    })
}

/// What `fugue_get_status` answers.
#[derive(Serialize)]
struct StatusAnswer {
    pane_id: String,
    name: Option<String>,
    session_id: String,
    window_id: String,
    pid: u32,
    command: Option<String>,
    cwd: String,
    rows: u16,
    cols: u16,
    offset: u64,
    started_at: u64,
    runtime_ms: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    sandbox: Option<Value>,
    #[serde(flatten)]
    state: PaneState,
    #[serde(flatten)]
    live: Doing,
}

pub(super) fn get_status(ctx: &Ctx<'_>, args: &Args<'_>) -> Result<Answer> {
    let pane = ctx.mux.pane(args.required_str("pane_id")?)?;
    let (rows, cols) = pane.size();
    let (offset, exited_at) = pane.output().with(|s| (s.ring.end(), s.exited_at));
    let runtime = exited_at.unwrap_or_else(std::time::Instant::now) - pane.started;
    // How it ended, before what it does (see `PaneView::new`).
    let state = PaneState::new(pane.output().exit());
    let mut live = crate::shell::status::doing(&pane);
    Answer::of(&StatusAnswer {
        pane_id: pane.id.clone(),
        name: pane.name.clone(),
        session_id: pane.session_id.clone(),
        window_id: pane.window_id.clone(),
        pid: pane.pid,
        command: pane.command.clone(),
        // Where it works now, when known; else where it started.
        cwd: live.cwd.take().unwrap_or_else(|| pane.cwd.to_string_lossy().into_owned()),
        rows,
        cols,
        offset,
        started_at: unix_ms(pane.created_at),
        runtime_ms: runtime.as_millis() as u64,
        sandbox: sandbox(&pane),
        state,
        live,
    })
}
