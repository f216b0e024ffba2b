//! The attach state's decisions, without a terminal or a server: keys, answers and signals go in,
//! and the requests it sends (recorded) and its state come out.

use super::*;
use crate::attach::focus::sample_view;
use parking_lot::Mutex;
use std::sync::Arc;

/// Records each request with the id it got.
#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Vec<(u64, String, Value)>>>);

impl Outbox for Recorder {
    fn send(&mut self, op: &str, params: Value) -> std::io::Result<u64> {
        let mut sent = self.0.lock();
        let id = sent.len() as u64 + 1;
        sent.push((id, op.to_string(), params));
        Ok(id)
    }
}

impl Recorder {
    /// The requests sent since the last call, as (id, op, params).
    fn take(&self) -> Vec<(u64, String, Value)> {
        std::mem::take(&mut *self.0.lock())
    }
}

/// An attach (read-only unless `input`) whose first window fetch was answered with two panes,
/// `a` left of `b`; the requests so far are taken.
fn attached(input: bool) -> (App, Recorder) {
    let out = Recorder::default();
    let info = json!({"pid": 42, "client": {"name": "agent", "version": "1.0"}});
    let mut app = App::new(Box::new(out.clone()), &info, (input, WindowRef::default()), (24, 80));
    app.tick();
    let sent = out.take();
    assert_eq!(sent.len(), 1, "one window fetch: {sent:?}");
    let (id, op, params) = &sent[0];
    assert_eq!(
        (op.as_str(), &params["rows"], &params["watch"]),
        ("window", &json!(23), &json!(true))
    );
    let view = sample_view(&[("a", [0, 0, 23, 40]), ("b", [0, 41, 23, 39])], &[("s", "w")]);
    app.incoming(Incoming::Answer { id: *id, result: Ok(serde_json::to_value(view).unwrap()) });
    (app, out)
}

#[test]
fn a_view_focuses_its_first_pane_and_sizes_its_window_once() {
    let (mut app, out) = attached(false);
    assert_eq!(app.focus.as_deref(), Some("a"));
    assert_eq!(app.client.as_deref(), Some("agent 1.0"));
    let sent = out.take();
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0].1, "resize");
    assert_eq!((&sent[0].2["window"], &sent[0].2["rows"]), (&json!("w"), &json!(23)));
    // The server says the view changed: one more fetch once a frame has passed since the last
    // (the clock moved back a frame stands for the time passing), and no second resize.
    app.incoming(Incoming::Changed);
    app.tick();
    assert!(out.take().is_empty(), "at most one fetch a frame");
    assert!(app.deadline().is_some_and(|d| d <= Instant::now() + FRAME));
    app.last_fetch = app.last_fetch.and_then(|t| t.checked_sub(FRAME));
    app.tick();
    let fetch = out.take();
    assert_eq!(fetch.iter().map(|s| s.1.as_str()).collect::<Vec<_>>(), ["window"]);
    app.tick();
    assert!(out.take().is_empty(), "no fetch while one is in flight");
    let view = sample_view(&[("a", [0, 0, 23, 40]), ("b", [0, 41, 23, 39])], &[("s", "w")]);
    app.incoming(Incoming::Answer {
        id: fetch[0].0,
        result: Ok(serde_json::to_value(view).unwrap()),
    });
    assert!(out.take().is_empty(), "the window is sized once");
}

#[test]
fn read_only_keys_move_the_focus_and_detach() {
    let (mut app, out) = attached(false);
    out.take();
    app.keys(b"o");
    assert_eq!(app.focus.as_deref(), Some("b"), "o: the next pane");
    app.keys(b"\x1b[D");
    assert_eq!(app.focus.as_deref(), Some("a"), "Left: the pane to the left");
    app.keys(b"x");
    assert!(app.flash_text().unwrap().starts_with("read-only"), "{:?}", app.flash_text());
    assert!(out.take().is_empty(), "a read-only attach types nothing");
    app.keys(b"?");
    assert!(app.help);
    app.keys(b"q");
    assert!(!app.help && app.leave.is_none(), "a key closes the help, and only that");
    app.keys(b"q");
    assert_eq!(app.leave, Some(Leave::Detached));
}

#[test]
fn with_input_keys_are_typed_into_the_focused_pane_in_one_request() {
    let (mut app, out) = attached(true);
    out.take();
    app.keys(b"ls\r");
    let sent = out.take();
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!((sent[0].1.as_str(), &sent[0].2), ("input", &json!({"pane": "a", "data": "ls\r"})));
    app.keys(b"\x02\x02");
    assert_eq!(out.take()[0].2["data"], "\u{2}", "C-b C-b types C-b");
    app.keys(b"\x02d");
    assert_eq!(app.leave, Some(Leave::Detached), "C-b d detaches");
}

#[test]
fn what_is_typed_before_the_first_view_waits_for_a_pane() {
    let out = Recorder::default();
    let mut app =
        App::new(Box::new(out.clone()), &json!({}), (true, WindowRef::default()), (24, 80));
    app.keys(b"early");
    assert!(out.take().is_empty(), "no pane yet");
    app.tick();
    let fetch = out.take();
    let view = sample_view(&[("a", [0, 0, 23, 80])], &[("s", "w")]);
    app.incoming(Incoming::Answer {
        id: fetch[0].0,
        result: Ok(serde_json::to_value(view).unwrap()),
    });
    let typed: Vec<Value> =
        out.take().into_iter().filter(|s| s.1 == "input").map(|s| s.2).collect();
    assert_eq!(typed, [json!({"pane": "a", "data": "early"})]);
}

#[test]
fn scroll_mode_asks_for_the_scrollback_and_q_leaves_it() {
    let (mut app, out) = attached(false);
    out.take();
    app.keys(b"[");
    let sent = out.take();
    assert_eq!((sent[0].1.as_str(), &sent[0].2["pane"]), ("scrollback", &json!("a")));
    let lines: Vec<String> = (1..=50).map(|i| format!("l{i}")).collect();
    app.incoming(Incoming::Answer { id: sent[0].0, result: Ok(json!({"lines": lines})) });
    let scroll = app.scroll.as_mut().unwrap();
    assert_eq!(scroll.lines.as_ref().map(Vec::len), Some(50));
    // Drawn in the pane's 23 rows: the newest 23 lines.
    assert_eq!(scroll.window(23, 40).2, 50);
    app.keys(b"k");
    assert_eq!(app.scroll.as_ref().unwrap().offset, 1, "k: one line up");
    app.keys(b"q");
    assert!(app.scroll.is_none() && app.leave.is_none(), "q leaves scroll mode, not attach");
}

#[test]
fn a_failed_answer_is_said_and_signals_resize_or_leave() {
    let (mut app, out) = attached(true);
    out.take();
    app.keys(b"x");
    let id = out.take()[0].0;
    app.incoming(Incoming::Answer {
        id,
        result: Err(Error::new(crate::error::ErrorKind::PaneNotFound, "no pane a")),
    });
    assert_eq!(app.flash_text(), Some("no pane a"));
    app.signal(libc::SIGWINCH, Some((40, 100)));
    assert_eq!(app.body(), (39, 100));
    app.tick();
    let sent = out.take();
    assert_eq!((sent[0].1.as_str(), &sent[0].2["cols"]), ("window", &json!(100)));
    app.signal(libc::SIGTERM, None);
    assert_eq!(app.leave, Some(Leave::Signal(libc::SIGTERM)));
}
