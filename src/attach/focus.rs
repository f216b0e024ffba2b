//! Where the focus goes: the next window, the next pane, and the nearest pane in a direction, from
//! the server's view of the window alone.

use crate::control::view::{Area, PaneView, WindowRef, WindowView};
use crate::ids::PaneId;

/// A direction to move the focus in.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Dir {
    Up,
    Down,
    Left,
    Right,
}

/// The window `step` windows on from the one shown (wrapping around), as a target.
pub(crate) fn step_window(view: &WindowView, step: isize) -> Option<WindowRef> {
    let count = view.windows.len();
    if count == 0 {
        return None;
    }
    // A window count and index fit an isize; the Euclidean remainder is never negative.
    let at = view.current.unwrap_or(0).cast_signed();
    let next = &view.windows[(at + step).rem_euclid(count.cast_signed()).cast_unsigned()];
    let (session, window) = (next.session_id.to_string(), next.window_id.to_string());
    Some(WindowRef { session: Some(session), window: Some(window) })
}

/// The pane after `focus` in the window's order (the first when none is focused).
pub(crate) fn next_pane(panes: &[PaneView], focus: Option<&PaneId>) -> Option<PaneId> {
    let at = panes.iter().position(|p| Some(&p.id) == focus);
    let next = at.map_or(0, |i| (i + 1) % panes.len().max(1));
    panes.get(next).map(|p| p.id.clone())
}

/// The nearest pane in `dir` from the area `from` that overlaps it across.
pub(crate) fn nearest(panes: &[PaneView], from: Area, dir: Dir) -> Option<PaneId> {
    panes
        .iter()
        .filter_map(|p| Some((distance(dir, from, p.rect)?, p.id.clone())))
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, id)| id)
}

/// How far `to` lies from `from` in `dir`, if it lies that way and overlaps it across.
fn distance(dir: Dir, from: Area, to: Area) -> Option<u16> {
    let overlap = |a: u16, alen: u16, b: u16, blen: u16| a < b + blen && b < a + alen;
    let rows = overlap(to.row, to.rows, from.row, from.rows);
    let cols = overlap(to.col, to.cols, from.col, from.cols);
    match dir {
        Dir::Left if rows && to.col + to.cols <= from.col => Some(from.col - (to.col + to.cols)),
        Dir::Right if rows && to.col >= from.col + from.cols => {
            Some(to.col - (from.col + from.cols))
        }
        Dir::Up if cols && to.row + to.rows <= from.row => Some(from.row - (to.row + to.rows)),
        Dir::Down if cols && to.row >= from.row + from.rows => {
            Some(to.row - (from.row + from.rows))
        }
        _ => None,
    }
}

/// A window view for unit tests: panes `(id, [row, col, rows, cols])` in a 24x80 body, and the
/// windows `(session_id, window_id)` with the first shown.
#[cfg(test)]
pub(crate) fn sample_view(panes: &[(&str, [u16; 4])], windows: &[(&str, &str)]) -> WindowView {
    let panes: Vec<serde_json::Value> = panes
        .iter()
        .map(|(id, [row, col, rows, cols])| {
            serde_json::json!({"id": id, "name": null, "command": null, "status": "running",
                "exit_code": null, "signal": null,
                "rect": {"row": row, "col": col, "rows": rows, "cols": cols},
                "cursor": {"row": 0, "col": 0, "visible": true},
                "application_cursor": false, "lines": []})
        })
        .collect();
    let windows: Vec<serde_json::Value> = windows
        .iter()
        .map(|(s, w)| {
            serde_json::json!({"session_id": s, "session": s, "window_id": w, "window": w,
                "rows": 24, "cols": 80})
        })
        .collect();
    let view = serde_json::json!({"windows": windows, "current": 0,
        "view": {"rows": 23, "cols": 80}, "panes": panes});
    serde_json::from_value(view).unwrap()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Three panes: `a` on the left half, `b` top right, `c` bottom right.
    fn three() -> WindowView {
        sample_view(
            &[("a", [0, 0, 23, 40]), ("b", [0, 41, 11, 39]), ("c", [12, 41, 11, 39])],
            &[("s1", "w1"), ("s1", "w2"), ("s2", "w3")],
        )
    }

    #[test]
    fn arrows_go_to_the_nearest_pane_that_way() {
        let view = three();
        let rect = |id: &str| view.panes.iter().find(|p| p.id == id).unwrap().rect;
        assert_eq!(nearest(&view.panes, rect("a"), Dir::Right).as_deref(), Some("b"));
        assert_eq!(nearest(&view.panes, rect("b"), Dir::Down).as_deref(), Some("c"));
        assert_eq!(nearest(&view.panes, rect("c"), Dir::Up).as_deref(), Some("b"));
        assert_eq!(nearest(&view.panes, rect("c"), Dir::Left).as_deref(), Some("a"));
        assert_eq!(nearest(&view.panes, rect("a"), Dir::Left), None, "nothing left of a");
        assert_eq!(nearest(&view.panes, rect("b"), Dir::Up), None);
    }

    #[test]
    fn the_next_pane_and_window_wrap_around() {
        let view = three();
        assert_eq!(next_pane(&view.panes, None).as_deref(), Some("a"));
        assert_eq!(next_pane(&view.panes, Some(&"c".parse().unwrap())).as_deref(), Some("a"));
        let back = step_window(&view, -1).unwrap();
        assert_eq!((back.session.as_deref(), back.window.as_deref()), (Some("s2"), Some("w3")));
        let on = step_window(&view, 1).unwrap();
        assert_eq!(on.window.as_deref(), Some("w2"));
        assert!(step_window(&sample_view(&[], &[]), 1).is_none());
    }
}
