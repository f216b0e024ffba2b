//! What the control socket shows of the registry: the tree, and one window as a person sees it.
//!
//! A `WindowRef` names the window to show; parts left out mean "the newest", so an attach without
//! arguments follows the agent to each window it opens. The registry lock is held only to collect
//! the window's panes and their rects (from `layout::tile`); the grids are read after it is
//! released. A `fingerprint` sums up everything a view shows — the list of windows, the panes, how
//! far each pane's output has come and whether it has exited — so a watcher can tell, without
//! drawing anything, whether a view it sent is out of date.

use crate::ids::{PaneId, SessionId, WindowId};
use crate::layout::{self, Rect};
use crate::mux::{Mux, ORCHESTRATION_SESSION, Session};
use crate::pane::Pane;
use crate::pane::activity::Activity;
use crate::pane::exit::{PaneState, PaneStatus};
use crate::shell::status::Doing;
use crate::words::Words;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Arc;

/// Which window to show: a session and a window, each by id or name; `None` means the newest.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct WindowRef {
    pub(crate) session: Option<String>,
    pub(crate) window: Option<String>,
}

/// One window view, as the control socket's `window` answer gives it and `fugue attach` reads it:
/// one type for both ends of the wire.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct WindowView {
    pub(crate) windows: Vec<WindowInfo>,
    /// Index in `windows` of the window shown.
    pub(crate) current: Option<usize>,
    /// The target no longer exists; `current` is the newest window instead.
    #[serde(default)]
    pub(crate) missing: bool,
    /// The terminal body the panes' rows were cut to.
    pub(crate) view: Size,
    pub(crate) panes: Vec<PaneView>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Size {
    pub(crate) rows: u16,
    pub(crate) cols: u16,
}

/// One window in the list of all windows.
#[derive(Clone, Debug, Hash, Serialize, Deserialize)]
pub(crate) struct WindowInfo {
    pub(crate) session_id: SessionId,
    pub(crate) session: String,
    pub(crate) window_id: WindowId,
    pub(crate) window: String,
    pub(crate) rows: u16,
    pub(crate) cols: u16,
    /// How many panes it has.
    #[serde(default)]
    pub(crate) panes: usize,
}

/// One pane of the view: what it is, how it is doing, where it goes and its rows.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct PaneView {
    pub(crate) id: PaneId,
    pub(crate) name: Option<String>,
    pub(crate) command: Option<String>,
    #[serde(flatten)]
    pub(crate) state: PaneState,
    #[serde(flatten)]
    pub(crate) doing: Doing,
    pub(crate) rect: Area,
    pub(crate) cursor: Cursor,
    pub(crate) application_cursor: bool,
    pub(crate) lines: Vec<String>,
    /// The sandbox mode of a sandboxed pane; absent otherwise (and from older servers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) sandbox: Option<String>,
}

/// The registry's tree as the control socket's `tree` answer gives it and `fugue ls` reads it: each
/// session with its windows and their panes. Fields `fugue ls` does not show are left unread.
#[derive(Clone, Debug, Default, Deserialize)]
pub(crate) struct TreeSession {
    pub(crate) name: String,
    #[serde(default)]
    pub(crate) windows: Vec<TreeWindow>,
}

/// One window of the tree.
#[derive(Clone, Debug, Default, Deserialize)]
pub(crate) struct TreeWindow {
    pub(crate) name: String,
    pub(crate) rows: u16,
    pub(crate) cols: u16,
    #[serde(default)]
    pub(crate) panes: Vec<TreePane>,
}

/// One pane of the tree: what it is and how it is doing, as a `PaneView` says it.
#[derive(Clone, Debug, Deserialize)]
pub(crate) struct TreePane {
    pub(crate) id: PaneId,
    pub(crate) name: Option<String>,
    pub(crate) command: Option<String>,
    pub(crate) pid: Option<u32>,
    #[serde(flatten)]
    pub(crate) state: PaneState,
    #[serde(flatten)]
    pub(crate) doing: Doing,
}

/// A pane's state in a few words, as `fugue ls` and `fugue attach` show it: `exited 3`, `killed by
/// SIGTERM` or `exited` once it ended; while it runs, its activity (`prompt`, `busy`, `input`, or
/// `running` where fugue cannot tell), with the shell's last exit code at its prompt and the
/// program that asks at `input` (`input (python3)`).
pub(crate) fn state_words(state: &PaneState, doing: &Doing) -> String {
    match (state.status, state.exit.exit_code, &state.exit.signal) {
        (PaneStatus::Running, _, _) => match (doing.activity, doing.last_exit_code) {
            (Some(Activity::Prompt), Some(code)) => format!("prompt (last exit {code})"),
            (Some(Activity::Input), _) if doing.program.is_some() => {
                format!("input ({})", doing.program.as_deref().unwrap_or_default())
            }
            (Some(activity), _) => activity.name().to_string(),
            (None, _) => "running".to_string(),
        },
        (_, Some(code), _) => format!("exited {code}"),
        (_, None, Some(signal)) => format!("killed by {signal}"),
        _ => "exited".to_string(),
    }
}

/// Where a pane's tile lies in the window.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Area {
    pub(crate) row: u16,
    pub(crate) col: u16,
    pub(crate) rows: u16,
    pub(crate) cols: u16,
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub(crate) struct Cursor {
    pub(crate) row: u16,
    pub(crate) col: u16,
    pub(crate) visible: bool,
}

impl WindowView {
    /// The window shown, if any.
    pub(crate) fn window(&self) -> Option<&WindowInfo> {
        self.windows.get(self.current?)
    }

    /// The part of a pane's rect inside the view, as (rows, cols).
    pub(crate) fn visible(&self, pane: &PaneView) -> (u16, u16) {
        visible(pane.rect, self.view)
    }
}

/// The part of `rect` inside a terminal body of `view`, as (rows, cols).
fn visible(rect: Area, view: Size) -> (u16, u16) {
    let rows = rect.rows.min(view.rows.saturating_sub(rect.row));
    let cols = rect.cols.min(view.cols.saturating_sub(rect.col));
    (rows, cols)
}

/// The target window and its panes, collected under the registry lock.
struct Frame {
    windows: Vec<WindowInfo>,
    /// Index in `windows` of the window shown.
    current: Option<usize>,
    /// The target no longer exists; `current` is the newest window instead.
    missing: bool,
    panes: Vec<(Arc<Pane>, Rect)>,
}

/// Every session with its windows and panes, as `fugue_list_sessions` gives them.
pub(crate) fn tree(mux: &Mux) -> Value {
    let sessions = mux.with_sessions(|sessions, pane| {
        let each = || sessions.iter().map(|s| crate::tools::panes::session_json(s, pane)).collect();
        crate::pane::activity::one_scan::<Vec<_>>(each)
    });
    json!({ "sessions": sessions })
}

/// The view of the target window, each pane's rows cut to fit a terminal body of `view` (rows,
/// cols), and the fingerprint of what it shows.
pub(crate) fn window(mux: &Mux, target: &WindowRef, view: (u16, u16)) -> (Value, u64) {
    let layout = collect(mux, target);
    // Taken before the grids are read: a change in between makes the watcher send one more
    // `changed`, never one fewer.
    let print = fingerprint_of(&layout);
    let size = Size { rows: view.0, cols: view.1 };
    let panes = crate::pane::activity::one_scan(|| {
        layout.panes.iter().map(|(pane, rect)| pane_view(pane, *rect, size)).collect()
    });
    let view = WindowView {
        windows: layout.windows,
        current: layout.current,
        missing: layout.missing,
        view: size,
        panes,
    };
    let value = serde_json::to_value(view).unwrap_or_default();
    (value, print)
}

/// The fingerprint of the target's view, as `window` computes it.
pub(crate) fn fingerprint(mux: &Mux, target: &WindowRef) -> u64 {
    fingerprint_of(&collect(mux, target))
}

/// The ids of the panes the target's view shows.
pub(crate) fn pane_ids(mux: &Mux, target: &WindowRef) -> Vec<(PaneId, Arc<Pane>)> {
    collect(mux, target).panes.into_iter().map(|(p, _)| (p.id.clone(), p)).collect()
}

fn collect(mux: &Mux, target: &WindowRef) -> Frame {
    mux.with_sessions(|sessions, lookup| {
        let (place, missing) = resolve(sessions, target);
        let mut windows = Vec::new();
        let mut current = None;
        let mut panes = Vec::new();
        for (s, session) in sessions.iter().enumerate() {
            for (w, window) in session.windows.iter().enumerate() {
                if place == Some((s, w)) {
                    current = Some(windows.len());
                    let rects = layout::tile(window.panes.len(), window.rows, window.cols);
                    panes = window
                        .panes
                        .iter()
                        .zip(rects)
                        .filter_map(|(id, rect)| Some((lookup(id)?, rect)))
                        .collect();
                }
                windows.push(WindowInfo {
                    session_id: session.id.clone(),
                    session: session.name.clone(),
                    window_id: window.id.clone(),
                    window: window.name.clone(),
                    rows: window.rows,
                    cols: window.cols,
                    panes: window.panes.len(),
                });
            }
        }
        Frame { windows, current, missing, panes }
    })
}

/// The (session, window) indexes the target names, and whether it named something gone.
fn resolve(sessions: &[Session], target: &WindowRef) -> (Option<(usize, usize)>, bool) {
    let Some(key) = &target.session else { return (newest(sessions), false) };
    let by_id = sessions.iter().position(|s| s.id == *key);
    let Some(s) = by_id.or_else(|| sessions.iter().position(|s| s.name == *key)) else {
        return (newest(sessions), true);
    };
    let windows = &sessions[s].windows;
    match &target.window {
        // A session that has no window yet is shown empty until one comes.
        None => (windows.len().checked_sub(1).map(|w| (s, w)), false),
        Some(key) => {
            let by_id = windows.iter().position(|w| w.id == *key);
            match by_id.or_else(|| windows.iter().position(|w| w.name == *key)) {
                Some(w) => (Some((s, w)), false),
                None => (newest(sessions), true),
            }
        }
    }
}

/// The newest window of the newest session; the hidden orchestration session only when nothing
/// else has a window.
fn newest(sessions: &[Session]) -> Option<(usize, usize)> {
    let with_windows = |s: &&Session| !s.windows.is_empty();
    let pick = |s: &Session| s.windows.len() - 1;
    let visible = sessions
        .iter()
        .enumerate()
        .rev()
        .find(|(_, s)| s.name != ORCHESTRATION_SESSION && with_windows(s));
    let any = || sessions.iter().enumerate().rev().find(|(_, s)| with_windows(s));
    visible.or_else(any).map(|(i, s)| (i, pick(s)))
}

fn fingerprint_of(layout: &Frame) -> u64 {
    let mut hasher = DefaultHasher::new();
    layout.windows.hash(&mut hasher);
    (layout.current, layout.missing).hash(&mut hasher);
    for (pane, rect) in &layout.panes {
        pane.id.hash(&mut hasher);
        (rect.row, rect.col, rect.rows, rect.cols).hash(&mut hasher);
        pane.size().hash(&mut hasher);
        let (end, exit, closed) =
            pane.output().with(|s| (s.ring.end(), s.life.exit(), s.life.is_closed()));
        (end, exit, closed).hash(&mut hasher);
    }
    hasher.finish()
}

/// One pane of the view: what it is, where it goes, and its rows cut to the part of its rect that
/// lies inside the terminal body.
fn pane_view(pane: &Pane, rect: Rect, view: Size) -> PaneView {
    let rect = Area { row: rect.row, col: rect.col, rows: rect.rows, cols: rect.cols };
    let (rows, cols) = visible(rect, view);
    let styled = pane.output().styled(rows, cols);
    let exit = pane.output().exit();
    let (row, col) = styled.cursor;
    let visible = !styled.hide_cursor && exit.is_none() && row < rows && col < cols;
    PaneView {
        id: pane.id.clone(),
        name: pane.name.clone(),
        command: pane.command.clone(),
        state: PaneState::new(exit),
        doing: crate::shell::status::doing(pane),
        rect,
        cursor: Cursor { row, col, visible },
        application_cursor: styled.application_cursor,
        lines: if rows == 0 || cols == 0 { Vec::new() } else { styled.rows },
        sandbox: (pane.sandbox.mode != crate::sandbox::Mode::Off)
            .then(|| pane.sandbox.mode.name().into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panes_state_reads_the_same_in_ls_and_attach() {
        let pane = |extra: Value| -> TreePane {
            let mut p = json!({"id": "a", "name": null, "command": null, "pid": 1,
                               "status": "running", "exit_code": null, "signal": null});
            p.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
            serde_json::from_value(p).unwrap()
        };
        let words = |p: &TreePane| state_words(&p.state, &p.doing);
        assert_eq!(words(&pane(json!({}))), "running");
        let at_prompt = pane(json!({"activity": "prompt", "last_exit_code": 2, "cwd": "/tmp"}));
        assert_eq!(words(&at_prompt), "prompt (last exit 2)");
        assert_eq!(at_prompt.doing.cwd.as_deref(), Some("/tmp"));
        let busy =
            pane(json!({"activity": "busy", "last_exit_code": 0, "current_command": "make"}));
        assert_eq!(words(&busy), "busy");
        assert_eq!(words(&pane(json!({"status": "exited", "exit_code": 3}))), "exited 3");
        let killed = pane(json!({"status": "exited", "signal": "SIGTERM"}));
        assert_eq!(words(&killed), "killed by SIGTERM");
    }
}
