//! What the pane tools show of panes: the listing of sessions, windows and panes, a pane's status
//! and a read of its output, each a typed answer.

use super::shared::{NoParams, PANE_ID, PaneParams};
use crate::error::{Error, Result};
use crate::ids::unix_ms;
use crate::ids::{PaneId, SessionId, WindowId};
use crate::mux::Session;
use crate::pane::Pane;
use crate::pane::activity::one_scan;
use crate::pane::budget::{self, Budget, Fitted, Omitted};
use crate::pane::exit::PaneState;
use crate::pane::output::{Captured, ReadRequest, TAIL_SCAN_LIMIT, View};
use crate::runtime::Runtime;
use crate::shell::status::Doing;
use crate::tool::params::{Spec, params};
use crate::tool::{Answer, Ctx};
use crate::tools::exec::{MAX_BYTES, MaxBytes};
use crate::words::words;
use serde::Serialize;
use serde_json::Value;
use std::sync::Arc;

words! {
    /// The output views `fugue_get_output` offers, as a call names them.
    pub(crate) enum Format {
        Text = "text",
        Raw = "raw",
        Screen = "screen",
    }
}

/// `fugue_get_output` `lines` when absent.
pub(super) const LINES: u64 = 100;

pub(super) fn list_sessions(ctx: &Ctx<'_, Runtime>, _: NoParams) -> Result<Answer> {
    let sessions = ctx.mux.with_sessions(|sessions, pane| {
        one_scan(|| sessions.iter().map(|s| ListedSession::new(s, pane)).collect::<Vec<_>>())
    });
    Answer::of(&SessionsAnswer { sessions })
}

#[derive(Serialize)]
struct SessionsAnswer {
    sessions: Vec<ListedSession>,
}

/// A session as `fugue_list_sessions` and the control socket's tree show it.
#[derive(Serialize)]
pub(crate) struct ListedSession {
    id: SessionId,
    name: String,
    created_at: u64,
    windows: Vec<ListedWindow>,
}

#[derive(Serialize)]
struct ListedWindow {
    id: WindowId,
    name: String,
    rows: u16,
    cols: u16,
    panes: Vec<ListedPane>,
}

/// A pane as the listings show it.
#[derive(Serialize)]
struct ListedPane {
    id: PaneId,
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

impl ListedSession {
    pub(crate) fn new(
        session: &Session,
        pane: &dyn Fn(&str) -> Option<Arc<Pane>>,
    ) -> ListedSession {
        let windows = session
            .windows
            .iter()
            .map(|w| ListedWindow {
                id: w.id.clone(),
                name: w.name.clone(),
                rows: w.rows,
                cols: w.cols,
                panes: w
                    .panes
                    .iter()
                    .filter_map(|id| pane(id))
                    .map(|p| ListedPane::new(&p))
                    .collect(),
            })
            .collect();
        ListedSession {
            id: session.id.clone(),
            name: session.name.clone(),
            created_at: unix_ms(session.created_at),
            windows,
        }
    }
}

impl ListedPane {
    fn new(pane: &Pane) -> ListedPane {
        let (rows, cols) = pane.size();
        // How it ended, before what it does: one that ends in between shows no activity beside
        // `exited`.
        let state = PaneState::new(pane.output().exit());
        let mut live = crate::shell::status::doing(pane);
        ListedPane {
            id: pane.id.clone(),
            name: pane.name.clone(),
            command: pane.command.clone(),
            // Where it works now, when known; else where it started.
            cwd: live.cwd.take().unwrap_or_else(|| pane.cwd.to_string_lossy().into_owned()),
            pid: pane.own_pid(),
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
    serde_json::to_value(ListedSession::new(session, pane)).unwrap_or_default()
}

/// `sandbox` (mode, writable roots, network) of a sandboxed pane; none otherwise.
fn sandbox(pane: &Pane) -> Option<Value> {
    crate::sandbox::view(&pane.sandbox)
}

/// What `fugue_get_output` answers.
#[derive(Serialize)]
struct OutputAnswer {
    output: String,
    offset: u64,
    truncated: bool,
    #[serde(flatten)]
    omitted: Omitted,
    #[serde(skip_serializing_if = "Option::is_none")]
    cursor: Option<ScreenCursor>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    alternate_screen: bool,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    dropped: bool,
    #[serde(flatten)]
    state: PaneState,
}

#[derive(Serialize)]
struct ScreenCursor {
    row: u16,
    col: u16,
}

params! {
    /// `fugue_get_output`'s arguments.
    pub(super) struct OutputParams {
        pane_id: String = Spec::new(PANE_ID),
        lines: usize = Spec::new("Lines (screen: the last rows)").range(1, 1_000_000).or(LINES),
        format: Format = Spec::new("View"),
        since: Option<u64> = Spec::new("Read on from this offset"),
        pattern: Option<String> = Spec::new("Regex"),
        context: usize = Spec::new("Lines around a match").range(0, 100).or(1),
        until: Option<u64> = Spec::new("Search to this offset"),
        max_bytes: MaxBytes = MAX_BYTES.range(1, u64::MAX),
    }
}

/// A read within the answers' budget (`budget::default_bytes`; `max_bytes` asks for more, up to
/// `FUGUE_MAX_OUTPUT_BYTES`). The last lines and the screen are fitted as every answer is
/// (`pane::budget`: the end, the lines that matter, a note in each gap, `omitted`); a
/// read `since` an offset is a page, cut at its back, that says how many lines follow it.
pub(super) fn get_output(ctx: &Ctx<'_, Runtime>, args: OutputParams) -> Result<Answer> {
    let pane = ctx.mux.pane(&args.pane_id)?;
    let format = args.format;
    let view = if format == Format::Raw { View::Raw } else { View::Text };
    let max_output = ctx.config.max_output_bytes;
    let req = ReadRequest {
        view,
        lines: args.lines,
        since: args.since,
        max_bytes: args.max_bytes.within(max_output)?,
    };
    if let Some(pattern) = &args.pattern {
        if format == Format::Screen {
            return Err(Error::invalid("pattern searches the text or raw view, not the screen"));
        }
        let range = (args.since, args.until);
        return super::find::search(
            ctx,
            &pane,
            (pattern, args.context, range),
            (view, req.max_bytes),
        );
    }
    if args.until.is_some() {
        return Err(Error::invalid("until bounds a search: give pattern too"));
    }
    let read = match (format, req.since) {
        (Format::Screen, _) => screen(&pane, &req),
        (_, Some(_)) => page(&pane, &req)?,
        (_, None) => last_lines(&pane, &req),
    };
    Answer::of(&read)
}

/// The last `lines` lines, fitted to the budget as a tail: the end, and what matters before it.
fn last_lines(pane: &Pane, req: &ReadRequest) -> OutputAnswer {
    let (from, held_from, to) = pane.output().with(|s| {
        let (end, _) = complete_end(s);
        (s.ring.tail_start(req.lines, TAIL_SCAN_LIMIT).min(end), s.ring.start(), end)
    });
    let budget = Budget::tail(req.max_bytes, req.lines, None);
    let lines = match req.view {
        View::Raw => budget::raw_lines(pane, from, to),
        View::Text => budget::lines(pane, from, to, &budget),
    };
    let budget = if req.view == View::Raw { budget.raw() } else { budget };
    let fitted = budget::fit(&lines, &budget);
    let truncated = fitted.omitted.lines > 0 || from > held_from;
    OutputAnswer { truncated, ..OutputAnswer::of(pane, fitted, to) }
}

/// The screen's last `lines` rows, fitted to the budget as every screen an answer shows.
fn screen(pane: &Pane, req: &ReadRequest) -> OutputAnswer {
    let grid = pane.output().grid();
    let rows = crate::pane::screen::without_trailing_blanks(&grid.rows);
    let first = rows.len().saturating_sub(req.lines);
    let fitted = budget::screen(&rows[first..], &Budget::whole(req.max_bytes, None));
    let truncated = fitted.omitted.lines > 0 || first > 0;
    OutputAnswer {
        truncated,
        cursor: Some(ScreenCursor { row: grid.cursor.0, col: grid.cursor.1 }),
        alternate_screen: grid.alternate,
        ..OutputAnswer::of(pane, fitted, pane.output().end())
    }
}

/// A page of what came after `since`, and how many lines follow it (`omitted`, read on from
/// `offset`).
fn page(pane: &Pane, req: &ReadRequest) -> Result<OutputAnswer> {
    let read = pane.output().read(req)?;
    let (end, ends_a_line) = pane.output().with(complete_end);
    let after = pane.output().with(|s| s.ring.newlines(read.offset, end));
    let after = after + usize::from(end > read.offset && !ends_a_line);
    let matter = crate::pane::budget::raw_lines(pane, read.offset, end)
        .text
        .iter()
        .filter(|l| crate::pane::matter::weight(l, None) > 0)
        .count();
    let omitted = Omitted { lines: after, since: (after > 0).then_some(read.offset), matter };
    Ok(OutputAnswer {
        output: read.output,
        offset: read.offset,
        truncated: read.truncated,
        omitted,
        cursor: None,
        alternate_screen: false,
        dropped: read.dropped,
        state: PaneState::new(pane.output().exit()),
    })
}

/// The end of the output but for a character still arriving, and whether the output ends a line.
fn complete_end(s: &Captured) -> (u64, bool) {
    let end = s.ring.end();
    let (last, at) = s.ring.copy(end.saturating_sub(4), end);
    let keep = crate::pane::text::complete_len(&last);
    (at + keep as u64, last[..keep].last().is_none_or(|b| *b == b'\n'))
}

impl OutputAnswer {
    /// A read of `fitted`, up to `offset`.
    fn of(pane: &Pane, fitted: Fitted, offset: u64) -> OutputAnswer {
        OutputAnswer {
            omitted: fitted.omitted(),
            output: fitted.text,
            offset,
            truncated: false,
            cursor: None,
            alternate_screen: false,
            dropped: false,
            state: PaneState::new(pane.output().exit()),
        }
    }
}

/// What `fugue_get_status` answers.
#[derive(Serialize)]
struct StatusAnswer {
    pane_id: PaneId,
    name: Option<String>,
    session_id: SessionId,
    window_id: WindowId,
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

pub(super) fn get_status(ctx: &Ctx<'_, Runtime>, args: PaneParams) -> Result<Answer> {
    let pane = ctx.mux.pane(&args.pane_id)?;
    let (rows, cols) = pane.size();
    let (offset, exited_at) = pane.output().with(|s| (s.ring.end(), s.life.exited_at()));
    let runtime = exited_at.unwrap_or_else(std::time::Instant::now) - pane.started;
    // How it ended, before what it does (see `ListedPane::new`).
    let state = PaneState::new(pane.output().exit());
    let mut live = crate::shell::status::doing(&pane);
    Answer::of(&StatusAnswer {
        pane_id: pane.id.clone(),
        name: pane.name.clone(),
        session_id: pane.session_id.clone(),
        window_id: pane.window_id.clone(),
        pid: pane.own_pid(),
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
