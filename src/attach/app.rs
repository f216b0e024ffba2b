//! The state of one `fugue attach`: what the server last showed, what the person is doing, and the
//! requests in flight.
//!
//! Events come in from the loop in `mod.rs` — keys, server lines, signals, timer ticks — and change
//! the state; drawing reads it (`draw`). The server is asked for a window view when it says the last
//! one is out of date (`changed`), at most once per `FRAME`, and never while a fetch is in flight,
//! so a pane that prints without pause costs a bounded number of frames. Keys follow tmux: a prefix
//! (C-b) and a command letter; without `--input` the prefix is optional.
//!
//! The state decides and asks through an `Outbox` (the control socket's `Sender`, or a recorder in
//! the unit tests, `app/tests.rs`); where the focus goes is `focus.rs`, scroll mode `scroll.rs`.

use super::focus::{self, Dir};
use super::keys::{self, Key};
use super::scroll::{Scroll, Scrolled};
use crate::control::view::{PaneView, WindowRef, WindowView};
use crate::control::wire::{Incoming, Sender};
use crate::error::Error;
use crate::ids::{PaneId, WindowId};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// The shortest time between two window fetches.
const FRAME: Duration = Duration::from_millis(25);
/// How long a message stays in the status line.
const FLASH: Duration = Duration::from_secs(3);
/// How much scrollback a scroll mode fetches.
const SCROLLBACK_LINES: u64 = 10_000;
/// The most typed input held while no pane is focused yet (before the first view arrives).
const MAX_HELD_INPUT: usize = 64 << 10;

/// Where the state's requests go: each gets an id its answer comes back with.
pub(crate) trait Outbox {
    fn send(&mut self, op: &str, params: Value) -> std::io::Result<u64>;
}

impl Outbox for Sender {
    fn send(&mut self, op: &str, params: Value) -> std::io::Result<u64> {
        Sender::send(self, op, params)
    }
}

/// Why attach ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Leave {
    Detached,
    ServerGone,
    Signal(libc::c_int),
}

/// What an answer in flight is for.
enum Awaited {
    Window,
    Scrollback(PaneId),
    /// Input and resizes: only a failure matters.
    Quiet,
}

pub(crate) struct App {
    sender: Box<dyn Outbox>,
    pub(crate) pid: u32,
    pub(crate) client: Option<String>,
    pub(crate) input: bool,
    target: WindowRef,
    pub(crate) view: Option<WindowView>,
    pub(crate) focus: Option<PaneId>,
    pub(crate) prefix: bool,
    pub(crate) help: bool,
    pub(crate) scroll: Option<Scroll>,
    flash: Option<(String, Instant)>,
    /// The terminal's size as (rows, cols).
    pub(crate) size: (u16, u16),
    pending: HashMap<u64, Awaited>,
    fetching: bool,
    wanted: bool,
    last_fetch: Option<Instant>,
    /// The window last sized to this terminal.
    sized: Option<WindowId>,
    /// Keys to type into the focused pane, sent once per batch of keys.
    typed: Vec<u8>,
    pub(crate) leave: Option<Leave>,
    /// Something changed that the screen does not show yet.
    pub(crate) dirty: bool,
}

impl App {
    /// The state of an attach to the server `info` describes, showing `target` on a terminal of
    /// `size` (rows, cols).
    pub(crate) fn new(
        sender: Box<dyn Outbox>,
        info: &Value,
        (input, target): (bool, WindowRef),
        size: (u16, u16),
    ) -> App {
        let client = info["client"]["name"].as_str().map(|name| {
            let version = info["client"]["version"].as_str().unwrap_or("");
            if version.is_empty() { name.to_string() } else { format!("{name} {version}") }
        });
        App {
            sender,
            pid: info["pid"].as_u64().unwrap_or(0) as u32,
            client,
            input,
            target,
            view: None,
            focus: None,
            prefix: false,
            help: false,
            scroll: None,
            flash: None,
            size,
            pending: HashMap::new(),
            fetching: false,
            wanted: true,
            last_fetch: None,
            sized: None,
            typed: Vec::new(),
            leave: None,
            dirty: true,
        }
    }

    /// The rows and columns left for panes above the status line.
    pub(crate) fn body(&self) -> (u16, u16) {
        (self.size.0.saturating_sub(1), self.size.1)
    }

    pub(crate) fn flash_text(&self) -> Option<&str> {
        self.flash.as_ref().map(|(text, _)| text.as_str())
    }

    /// When the loop should wake up even if nothing arrives.
    pub(crate) fn deadline(&self) -> Option<Instant> {
        let fetch = (self.wanted && !self.fetching)
            .then(|| self.last_fetch.map_or_else(Instant::now, |t| t + FRAME));
        let flash = self.flash.as_ref().map(|(_, until)| *until);
        fetch.into_iter().chain(flash).min()
    }

    /// Sends what is due: a fetch whose frame has come, and clears an old message.
    pub(crate) fn tick(&mut self) {
        let now = Instant::now();
        if self.wanted && !self.fetching && self.last_fetch.is_none_or(|t| now >= t + FRAME) {
            self.fetch();
        }
        if self.flash.as_ref().is_some_and(|(_, until)| now >= *until) {
            self.flash = None;
            self.dirty = true;
        }
    }

    pub(crate) fn incoming(&mut self, message: Incoming) {
        match message {
            Incoming::Changed => self.wanted = true,
            Incoming::Answer { id, result } => match self.pending.remove(&id) {
                Some(Awaited::Window) => self.on_view(result),
                Some(Awaited::Scrollback(pane)) => self.on_scrollback(&pane, result),
                Some(Awaited::Quiet) | None => {
                    if let Err(e) = result {
                        self.say(e.message());
                    }
                }
            },
        }
    }

    /// A signal; with SIGWINCH, the terminal's new `size` if it could be read.
    pub(crate) fn signal(&mut self, signal: libc::c_int, size: Option<(u16, u16)>) {
        if signal != libc::SIGWINCH {
            self.leave = Some(Leave::Signal(signal));
            return;
        }
        if let Some(size) = size {
            self.size = size;
        }
        // The window is sized to the new terminal at the next view.
        self.sized = None;
        self.wanted = true;
        self.last_fetch = None;
        self.dirty = true;
    }

    pub(crate) fn keys(&mut self, bytes: &[u8]) {
        for key in keys::parse(bytes) {
            self.key(key);
        }
        self.send_typed();
    }

    fn key(&mut self, key: Key) {
        self.dirty = true;
        if self.help {
            self.help = false;
            return;
        }
        if self.prefix {
            self.prefix = false;
            self.command(&key, true);
            return;
        }
        if key == Key::Ctrl(b'b') {
            self.prefix = true;
            return;
        }
        if self.scroll.is_some() {
            self.scroll_key(&key);
        } else if self.input {
            let application_cursor = self.focused().is_some_and(|p| p.application_cursor);
            self.typed.extend(key.bytes(application_cursor));
        } else {
            self.command(&key, false);
        }
    }

    /// A command key, after the prefix or (read-only) on its own.
    fn command(&mut self, key: &Key, prefixed: bool) {
        match key {
            Key::Char('d') | Key::Char('q') | Key::Ctrl(b'c') => {
                self.leave = Some(Leave::Detached);
            }
            Key::Char('n') => self.step_window(1),
            Key::Char('p') => self.step_window(-1),
            Key::Char('o') => self.step_pane(),
            Key::Named("Up") => self.move_focus(Dir::Up),
            Key::Named("Down") => self.move_focus(Dir::Down),
            Key::Named("Left") => self.move_focus(Dir::Left),
            Key::Named("Right") => self.move_focus(Dir::Right),
            Key::Char('[') => self.enter_scroll(false),
            Key::Named("PageUp") => self.enter_scroll(true),
            Key::Char('?') => self.help = true,
            Key::Ctrl(b'b') if self.input => self.typed.push(0x02),
            _ if prefixed || self.input => self.say("unknown key; C-b ? lists the keys"),
            _ => self.say("read-only: attach with --input to type; C-b ? lists the keys"),
        }
    }

    fn scroll_key(&mut self, key: &Key) {
        let height = self.focused_height();
        let Some(scroll) = self.scroll.as_mut() else { return };
        match scroll.key(key, height) {
            Scrolled::Moved => {}
            Scrolled::Leave => self.scroll = None,
            Scrolled::Unknown => {
                self.say("scrolling: PageUp/PageDown, Up/Down, Home/End; q leaves")
            }
        }
    }

    fn step_window(&mut self, step: isize) {
        let Some(target) = self.view.as_ref().and_then(|view| focus::step_window(view, step))
        else {
            return;
        };
        self.target = target;
        self.focus = None;
        self.scroll = None;
        self.wanted = true;
        self.last_fetch = None;
    }

    fn step_pane(&mut self) {
        let Some(view) = &self.view else { return };
        let next = focus::next_pane(&view.panes, self.focus.as_ref());
        self.set_focus(next);
    }

    /// Moves the focus to the nearest pane in `dir` that overlaps the focused one across it.
    fn move_focus(&mut self, dir: Dir) {
        let (Some(view), Some(from)) = (&self.view, self.focused().map(|p| p.rect)) else { return };
        if let Some(id) = focus::nearest(&view.panes, from, dir) {
            self.set_focus(Some(id));
        }
    }

    fn set_focus(&mut self, pane: Option<PaneId>) {
        if pane != self.focus {
            self.scroll = None;
        }
        self.focus = pane;
    }

    fn enter_scroll(&mut self, page_up: bool) {
        let Some(pane) = self.focus.clone() else { return };
        self.scroll = Some(Scroll::new(pane.clone(), page_up));
        self.request(
            "scrollback",
            json!({"pane": pane, "lines": SCROLLBACK_LINES}),
            Awaited::Scrollback(pane),
        );
    }

    pub(crate) fn focused(&self) -> Option<&PaneView> {
        let view = self.view.as_ref()?;
        view.panes.iter().find(|p| Some(&p.id) == self.focus.as_ref())
    }

    fn focused_height(&self) -> usize {
        match (&self.view, self.focused()) {
            (Some(view), Some(pane)) => usize::from(view.visible(pane).0),
            _ => 1,
        }
    }

    fn fetch(&mut self) {
        let (rows, cols) = self.body();
        let params = json!({
            "session": self.target.session,
            "window": self.target.window,
            "rows": rows.clamp(1, 1000),
            "cols": cols.clamp(1, 1000),
            "watch": true,
        });
        self.request("window", params, Awaited::Window);
        self.fetching = true;
        self.wanted = false;
        self.last_fetch = Some(Instant::now());
    }

    fn on_view(&mut self, result: Result<Value, Error>) {
        self.fetching = false;
        self.dirty = true;
        let view = match result.map(serde_json::from_value::<WindowView>) {
            Ok(Ok(view)) => view,
            Ok(Err(e)) => return self.say(&format!("cannot read the server's view: {e}")),
            Err(e) => return self.say(e.message()),
        };
        if view.missing {
            self.target = WindowRef::default();
            self.say("that window is gone; showing the newest");
        }
        let keep = view.panes.iter().any(|p| Some(&p.id) == self.focus.as_ref());
        if !keep {
            self.set_focus(view.panes.first().map(|p| p.id.clone()));
        }
        self.view = Some(view);
        self.size_window();
        self.send_typed();
    }

    /// Sizes the shown window to this terminal, once per window and once per terminal resize;
    /// never because another client sized it differently, or two clients would fight.
    fn size_window(&mut self) {
        let Some(window) = self.view.as_ref().and_then(WindowView::window) else { return };
        if self.sized.as_ref() == Some(&window.window_id) {
            return;
        }
        let (rows, cols) = self.body();
        let params = json!({
            "session": window.session_id,
            "window": window.window_id,
            "rows": rows.clamp(2, 1000),
            "cols": cols.clamp(10, 1000),
        });
        self.sized = Some(window.window_id.clone());
        self.request("resize", params, Awaited::Quiet);
    }

    fn on_scrollback(&mut self, pane: &str, result: Result<Value, Error>) {
        let height = self.focused_height();
        let Some(scroll) = self.scroll.as_mut().filter(|s| s.pane == pane) else { return };
        let lines = match result {
            Ok(value) => value["lines"]
                .as_array()
                .map(|a| a.iter().filter_map(|l| l.as_str()).map(super::width::printable).collect())
                .unwrap_or_default(),
            Err(e) => {
                self.scroll = None;
                return self.say(e.message());
            }
        };
        scroll.arrived(lines, height);
        self.dirty = true;
    }

    /// Sends what was typed to the focused pane; keeps it until there is one, within a bound.
    fn send_typed(&mut self) {
        let Some(pane) = self.focus.clone() else {
            if self.typed.len() > MAX_HELD_INPUT {
                self.typed.clear();
                self.say("no pane to type into");
            }
            return;
        };
        if self.typed.is_empty() {
            return;
        }
        let data = String::from_utf8_lossy(&std::mem::take(&mut self.typed)).into_owned();
        self.request("input", json!({"pane": pane, "data": data}), Awaited::Quiet);
    }

    fn request(&mut self, op: &str, params: Value, pending: Awaited) {
        match self.sender.send(op, params) {
            Ok(id) => {
                self.pending.insert(id, pending);
            }
            Err(_) => self.leave = Some(Leave::ServerGone),
        }
    }

    fn say(&mut self, message: &str) {
        self.flash = Some((super::width::printable(message), Instant::now() + FLASH));
        self.dirty = true;
    }

    /// The target as `session:window` names, for the goodbye message.
    pub(crate) fn place(&self) -> String {
        match self.view.as_ref().and_then(WindowView::window) {
            Some(w) => format!(
                "{}:{}",
                super::width::printable(&w.session),
                super::width::printable(&w.window)
            ),
            None => "no window".to_string(),
        }
    }
}

#[cfg(test)]
mod tests;
