//! Drawing: the window's panes side by side with borders, and a status line, in plain escape
//! sequences.
//!
//! `frame` turns the app state into one styled string per terminal row, each exactly as wide as
//! the terminal: pane rows come from the server already cut to their rect; the cells between panes
//! become box-drawing borders chosen from their neighbours (green around the focused pane); the last
//! row is the status line. `Painter` writes only the rows that changed since the last frame, inside
//! a synchronized update, with line wrap off, so nothing scrolls or flickers.

use super::app::App;
use super::scroll::Scroll;
use super::width::{fit, printable, sgr_only, str_width};
use crate::control::view::{Area, PaneView, WindowView, state_words};
use crate::pane::exit::PaneStatus;
use std::fmt::Write;

const RESET: &str = "\x1b[0m";
const FOCUS_BORDER: &str = "\x1b[0;32m";
const STATUS: &str = "\x1b[0;30;42m";
const STATUS_FAILED: &str = "\x1b[0;97;41m";
const MARK: &str = "\x1b[0;30;43m";

const HELP: &[&str] = &[
    "fugue attach: keys (prefix C-b; optional when read-only)",
    "",
    "  n  p            next / previous window",
    "  o               next pane",
    "  arrows          the pane in that direction",
    "  [  PageUp       scroll back: PageUp PageDown Up Down Home End, q leaves",
    "  d               detach (the panes keep running)",
    "  q  C-c          quit, the same as detach (read-only)",
    "  C-b             with --input: type C-b into the pane",
    "  ?               this help",
    "",
    "any key closes this help",
];

/// The rows to show and where the cursor goes, if anywhere.
pub(crate) fn frame(app: &mut App) -> (Vec<String>, Option<(u16, u16)>) {
    let (rows, cols) = app.size;
    let (body_rows, _) = app.body();
    // The scroll state is taken out for the drawing, which rewraps it as it goes.
    let mut scroll = app.scroll.take();
    let (mut lines, cursor) = match &app.view {
        Some(view) => body(app, view, &mut scroll),
        None => (notice(body_rows, cols, "connecting..."), None),
    };
    app.scroll = scroll;
    lines.resize(usize::from(body_rows), blank(cols));
    if rows > 0 {
        lines.push(status(app, cols));
    }
    if app.help {
        overlay(&mut lines, cols, HELP);
        return (lines, None);
    }
    (lines, cursor)
}

/// The body rows for a view: panes and borders, or a notice when there is nothing to show.
fn body(
    app: &App,
    view: &WindowView,
    scroll: &mut Option<Scroll>,
) -> (Vec<String>, Option<(u16, u16)>) {
    let (rows, cols) = app.body();
    let Some(window) = view.window() else {
        let text =
            format!("fugue {} has no window yet; waiting for the agent to open one", app.pid);
        return (notice(rows, cols, &text), None);
    };
    if view.view.rows > rows || view.view.cols > cols {
        return (notice(rows, cols, "resizing..."), None);
    }
    if view.panes.is_empty() {
        return (notice(rows, cols, "this window has no pane yet"), None);
    }
    let area = (window.rows.min(view.view.rows), window.cols.min(view.view.cols));
    let borders = Borders::new(view, area, app.focused().map(|p| p.rect));
    let mut lines = Vec::with_capacity(usize::from(rows));
    for y in 0..rows {
        lines.push(body_row(view, scroll, &borders, y, cols));
    }
    let cursor = app
        .focused()
        .filter(|p| p.cursor.visible && scroll.is_none())
        .map(|p| (p.rect.row + p.cursor.row, p.rect.col + p.cursor.col));
    (lines, cursor)
}

/// Row `y` of the body: the panes that cross it, left to right, with borders or blanks between.
fn body_row(
    view: &WindowView,
    scroll: &mut Option<Scroll>,
    borders: &Borders,
    y: u16,
    cols: u16,
) -> String {
    let mut line = String::new();
    let mut x = 0;
    let mut crossing: Vec<&PaneView> = view
        .panes
        .iter()
        .filter(|p| y >= p.rect.row && y < p.rect.row + view.visible(p).0)
        .collect();
    crate::sort::sort_by_key(&mut crossing, |p| p.rect.col);
    for pane in crossing {
        if pane.rect.col < x {
            continue; // overlapping rects cannot come from tiling; draw the first
        }
        borders.run(&mut line, y, x, pane.rect.col);
        let width = view.visible(pane).1;
        pane_row(view, scroll, pane, y - pane.rect.row, width, &mut line);
        x = pane.rect.col + width;
    }
    borders.run(&mut line, y, x, cols);
    line
}

/// One row of a pane, `width` cells: its screen, or its scrollback when scrolling.
fn pane_row(
    view: &WindowView,
    scroll: &mut Option<Scroll>,
    pane: &PaneView,
    r: u16,
    width: u16,
    out: &mut String,
) {
    let width_cells = usize::from(width);
    let height = usize::from(view.visible(pane).0);
    if let Some(scroll) = scroll.as_mut().filter(|s| s.pane == pane.id) {
        let loaded = scroll.lines.is_some();
        let (lines, top, bottom) = scroll.window(height, width_cells);
        let (offset, max) = (lines.len() - bottom, lines.len().saturating_sub(height));
        let index = top + usize::from(r);
        let text = if index < bottom { lines[index].as_str() } else { "" };
        if r == 0 {
            let mark = if loaded { format!("[{offset}/{max}]") } else { "[loading]".to_string() };
            let mark_width = str_width(&mark).min(width_cells);
            out.push_str(&fit(text, width_cells - mark_width));
            let _ = write!(out, "{MARK}{}{RESET}", fit(&mark, mark_width));
        } else {
            out.push_str(&fit(text, width_cells));
        }
        return;
    }
    match pane.lines.get(usize::from(r)) {
        Some(row) => out.push_str(&sgr_only(row)),
        None => out.push_str(&" ".repeat(width_cells)),
    }
    out.push_str(RESET);
}

/// The cells of the window that no pane covers, and how to draw them.
struct Borders {
    /// The window's size inside the view; outside it is blank.
    area: (u16, u16),
    covered: Vec<bool>,
    focus: Option<Area>,
}

impl Borders {
    fn new(view: &WindowView, area: (u16, u16), focus: Option<Area>) -> Borders {
        let (rows, cols) = (usize::from(area.0), usize::from(area.1));
        let mut covered = vec![false; rows * cols];
        for pane in &view.panes {
            let (vr, vc) = view.visible(pane);
            let r0 = usize::from(pane.rect.row);
            let c0 = usize::from(pane.rect.col);
            for y in r0..(r0 + usize::from(vr)).min(rows) {
                for x in c0..(c0 + usize::from(vc)).min(cols) {
                    covered[y * cols + x] = true;
                }
            }
        }
        Borders { area, covered, focus }
    }

    fn is_border(&self, y: i32, x: i32) -> bool {
        let (rows, cols) = (i32::from(self.area.0), i32::from(self.area.1));
        (0..rows).contains(&y)
            && (0..cols).contains(&x)
            && usize::try_from(y * cols + x).is_ok_and(|i| !self.covered[i])
    }

    /// Appends the cells `from..to` of row `y`.
    fn run(&self, out: &mut String, y: u16, from: u16, to: u16) {
        let mut focused_run = false;
        for x in from..to {
            let (yi, xi) = (i32::from(y), i32::from(x));
            if !self.is_border(yi, xi) {
                if focused_run {
                    out.push_str(RESET);
                    focused_run = false;
                }
                out.push(' ');
                continue;
            }
            let near = self.near_focus(y, x);
            if near != focused_run {
                out.push_str(if near { FOCUS_BORDER } else { RESET });
                focused_run = near;
            }
            out.push(self.glyph(yi, xi));
        }
        if focused_run {
            out.push_str(RESET);
        }
    }

    /// The box-drawing character that joins this border cell to its border neighbours.
    fn glyph(&self, y: i32, x: i32) -> char {
        let up = self.is_border(y - 1, x);
        let down = self.is_border(y + 1, x);
        let left = self.is_border(y, x - 1);
        let right = self.is_border(y, x + 1);
        match (up, down, left, right) {
            (true, true, true, true) => '┼',
            (true, true, true, false) => '┤',
            (true, true, false, true) => '├',
            (true, false, true, true) => '┴',
            (false, true, true, true) => '┬',
            (true, false, true, false) => '┘',
            (true, false, false, true) => '└',
            (false, true, true, false) => '┐',
            (false, true, false, true) => '┌',
            (true, _, false, false) | (_, true, false, false) => '│',
            _ => '─',
        }
    }

    /// Whether the cell touches the focused pane, sides or corners.
    fn near_focus(&self, y: u16, x: u16) -> bool {
        self.focus.is_some_and(|r| {
            let (y, x) = (i32::from(y), i32::from(x));
            let (top, left) = (i32::from(r.row) - 1, i32::from(r.col) - 1);
            let (bottom, right) = (i32::from(r.row + r.rows), i32::from(r.col + r.cols));
            (top..=bottom).contains(&y) && (left..=right).contains(&x)
        })
    }
}

/// The status line: where we are, the focused pane and its state, and who we are watching. The
/// left part wins when the terminal is narrow; the right part shrinks first.
fn status(app: &App, cols: u16) -> String {
    let mut left = String::new();
    let mut failed = false;
    match app.view.as_ref().and_then(|v| Some((v, v.window()?))) {
        Some((view, window)) => {
            let at = view.current.unwrap_or(0) + 1;
            let _ =
                write!(left, " {}:{} ({at}/{})", window.session, window.window, view.windows.len());
            let focused =
                view.panes.iter().enumerate().find(|(_, p)| Some(&p.id) == app.focus.as_ref());
            if let Some((i, pane)) = focused {
                let count = view.panes.len();
                let _ =
                    write!(left, " │ pane {}/{count} │ {} │ {}", i + 1, state(pane), label(pane));
                if let Some(mode) = &pane.sandbox {
                    let _ = write!(left, " │ sandbox {mode}");
                }
                failed =
                    pane.state.status == PaneStatus::Exited && pane.state.exit.exit_code != Some(0);
            }
        }
        None => left.push_str(" no window"),
    }
    if let Some(scroll) = &app.scroll {
        left.push_str(if scroll.lines.is_some() { " │ scroll" } else { " │ scroll (loading)" });
    }
    if app.prefix {
        left.push_str(" │ C-b");
    }
    let left = printable(&left);
    let cols = usize::from(cols);
    let text = match app.flash_text() {
        Some(flash) => {
            let flash = format!(" {flash} ");
            let width = str_width(&flash).min(cols * 2 / 3);
            fit(&left, cols - width) + &fit(&flash, width)
        }
        None => {
            let mode = if app.input { "input" } else { "read-only" };
            let client =
                app.client.as_deref().map(|c| format!(" ({})", printable(c))).unwrap_or_default();
            let right = [
                format!(" fugue {}{client} │ {mode} │ C-b ? help ", app.pid),
                format!(" fugue {} │ {mode} │ C-b ? help ", app.pid),
                format!(" {mode} │ C-b ? help "),
                format!(" {mode} "),
            ]
            .into_iter()
            .find(|r| str_width(&left) + str_width(r) <= cols)
            .unwrap_or_default();
            fit(&left, cols - str_width(&right)) + &right
        }
    };
    format!("{}{text}{RESET}", if failed { STATUS_FAILED } else { STATUS })
}

/// A pane as a person knows it: its name, and what it runs.
fn label(pane: &PaneView) -> String {
    let command = pane.command.as_deref().unwrap_or("shell");
    match &pane.name {
        Some(name) => format!("{name}: {command}"),
        None => command.to_string(),
    }
}

/// The pane's state words (`view::state_words`), with what its shell runs.
fn state(pane: &PaneView) -> String {
    let words = state_words(&pane.state, &pane.doing);
    match &pane.doing.current_command {
        Some(command) if pane.state.status == PaneStatus::Running => format!("{words}: {command}"),
        _ => words,
    }
}

fn blank(cols: u16) -> String {
    " ".repeat(usize::from(cols))
}

/// A body with one line of text in its middle.
fn notice(rows: u16, cols: u16, text: &str) -> Vec<String> {
    let mut lines = vec![blank(cols); usize::from(rows)];
    if let Some(middle) = lines.get_mut(usize::from(rows / 2)) {
        let width = str_width(text).min(usize::from(cols));
        let pad = (usize::from(cols) - width) / 2;
        *middle = fit(&(" ".repeat(pad) + text), usize::from(cols));
    }
    lines
}

/// Puts a boxed text in the middle of the screen over whole rows.
fn overlay(lines: &mut [String], cols: u16, text: &[&str]) {
    let cols = usize::from(cols);
    let inner = text.iter().map(|l| str_width(l)).max().unwrap_or(0).min(cols.saturating_sub(4));
    let boxed: Vec<String> = std::iter::once(format!("┌{}┐", "─".repeat(inner + 2)))
        .chain(text.iter().map(|l| format!("│ {} │", fit(l, inner))))
        .chain(std::iter::once(format!("└{}┘", "─".repeat(inner + 2))))
        .collect();
    let top = lines.len().saturating_sub(boxed.len()) / 2;
    let pad = cols.saturating_sub(inner + 4) / 2;
    for (i, row) in boxed.iter().enumerate() {
        if let Some(line) = lines.get_mut(top + i) {
            *line = fit(&(" ".repeat(pad) + row), cols);
        }
    }
}

/// Writes frames, sending only the rows that changed.
#[derive(Default)]
pub(crate) struct Painter {
    previous: Vec<String>,
    size: (u16, u16),
}

impl Painter {
    /// The bytes that turn the last frame into this one.
    pub(crate) fn paint(
        &mut self,
        rows: Vec<String>,
        cursor: Option<(u16, u16)>,
        size: (u16, u16),
    ) -> Vec<u8> {
        let mut out = String::from("\x1b[?2026h\x1b[?25l");
        if size != self.size {
            out.push_str("\x1b[0m\x1b[2J");
            self.previous.clear();
            self.size = size;
        }
        for (y, row) in rows.iter().enumerate() {
            if self.previous.get(y) != Some(row) {
                let _ = write!(out, "\x1b[{};1H{row}{RESET}", y + 1);
            }
        }
        if let Some((row, col)) = cursor {
            let _ = write!(out, "\x1b[{};{}H\x1b[?25h", row + 1, col + 1);
        }
        out.push_str("\x1b[?2026l");
        self.previous = rows;
        out.into_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(line: &str) -> String {
        let mut out = String::new();
        let mut in_escape = false;
        for c in line.chars() {
            match (in_escape, c) {
                (false, '\x1b') => in_escape = true,
                (true, 'm') => in_escape = false,
                (true, _) => {}
                (false, c) => out.push(c),
            }
        }
        out
    }

    fn view(json: serde_json::Value) -> WindowView {
        serde_json::from_value(json).unwrap()
    }

    fn pane(id: &str, row: u16, col: u16, rows: u16, cols: u16, text: &str) -> serde_json::Value {
        let lines: Vec<String> =
            (0..rows).map(|r| fit(if r == 0 { text } else { "" }, usize::from(cols))).collect();
        serde_json::json!({
            "id": id, "name": null, "command": "cmd", "status": "running", "exit_code": null,
            "signal": null, "rect": {"row": row, "col": col, "rows": rows, "cols": cols},
            "cursor": {"row": 0, "col": 0, "visible": false}, "application_cursor": false,
            "lines": lines,
        })
    }

    #[test]
    fn four_panes_get_joined_borders() {
        let v = view(serde_json::json!({
            "windows": [{"session_id": "s", "session": "s", "window_id": "w", "window": "0",
                         "rows": 5, "cols": 9, "panes": 4}],
            "current": 0, "view": {"rows": 5, "cols": 9},
            "panes": [pane("a", 0, 0, 2, 4, "aa"), pane("b", 0, 5, 2, 4, "bb"),
                      pane("c", 3, 0, 2, 4, "cc"), pane("d", 3, 5, 2, 4, "dd")],
        }));
        let borders = Borders::new(&v, (5, 9), None);
        let rows: Vec<String> = (0..5)
            .map(|y| {
                let mut line = String::new();
                borders.run(&mut line, y, 0, 9);
                plain(&line)
            })
            .collect();
        assert_eq!(rows, vec!["    │    ", "    │    ", "────┼────", "    │    ", "    │    "]);
    }

    #[test]
    fn painter_sends_only_changed_rows() {
        let mut painter = Painter::default();
        let first =
            String::from_utf8(painter.paint(vec!["ab".into(), "cd".into()], None, (2, 2))).unwrap();
        assert!(first.contains("\x1b[2J") && first.contains("ab") && first.contains("cd"));
        let second =
            String::from_utf8(painter.paint(vec!["ab".into(), "xy".into()], Some((1, 0)), (2, 2)))
                .unwrap();
        assert!(!second.contains("ab") && second.contains("\x1b[2;1Hxy"));
        assert!(second.contains("\x1b[2;1H\x1b[?25h"));
    }

    #[test]
    fn state_names_exit_codes_and_signals() {
        let mut p: PaneView = serde_json::from_value(pane("a", 0, 0, 1, 1, "")).unwrap();
        assert_eq!(state(&p), "running");
        p.state.status = PaneStatus::Exited;
        p.state.exit.exit_code = Some(3);
        assert_eq!(state(&p), "exited 3");
        p.state.exit.exit_code = None;
        p.state.exit.signal = Some("SIGTERM".into());
        assert_eq!(state(&p), "killed by SIGTERM");
    }
}
