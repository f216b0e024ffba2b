//! The watcher of one control connection: it sends the notification `changed` when a view it answered
//! goes out of date.
//!
//! Each watched `window` answer arms the watcher with the view's target and fingerprint. The
//! watcher then sleeps on the registry's change channel and on the output channel of every pane in
//! the view (subscribed before it looks), and on each wake compares the fingerprint. The first
//! difference sends one event and disarms it until the client asks for the view again, so a pane
//! that prints without pause costs one event per frame the client draws, not one per read. Nothing
//! here polls, and nothing here touches a pane's reader: a subscription is a channel the reader
//! already feeds.

use super::view::{self, WindowRef};
use crate::ids::PaneId;
use crate::mux::Mux;
use crossbeam_channel::{Receiver, Select, Sender};
use parking_lot::Mutex;
use serde_json::Value;
use std::io::Write;
use std::os::unix::net::UnixStream;
use std::sync::Arc;

/// The writing half of a connection, shared by its answers and its events.
pub(crate) struct Out(Mutex<UnixStream>);

impl Out {
    pub(crate) fn new(stream: UnixStream) -> Out {
        Out(Mutex::new(stream))
    }

    /// Writes one message as one line. A client that stops reading fails this after the socket's
    /// write timeout, which ends its connection.
    pub(crate) fn send(&self, message: &Value) -> std::io::Result<()> {
        let mut line = serde_json::to_vec(message).unwrap_or_default();
        line.push(b'\n');
        self.0.lock().write_all(&line)
    }
}

/// What a watched answer showed.
pub(crate) struct Arm {
    pub(crate) target: WindowRef,
    pub(crate) print: u64,
}

/// Starts the watcher thread; it ends when the returned sender is dropped or the client is gone.
pub(crate) fn start(mux: Arc<Mux>, out: Arc<Out>) -> std::io::Result<Sender<Arm>> {
    let (tx, rx) = crossbeam_channel::bounded(4);
    crate::threads::spawn(
        "control-watch",
        Some(super::THREAD_STACK),
        Box::new(move || run(&mux, &out, &rx)),
    )?;
    Ok(tx)
}

/// What wakes the watcher: an arming, a change to look at, or the end.
enum Nudge {
    Arm(Arm),
    Change,
    Stop,
}

fn run(mux: &Mux, out: &Out, arms: &Receiver<Arm>) {
    let tree = mux.subscribe();
    let mut panes: Vec<(PaneId, Receiver<()>)> = Vec::new();
    let mut armed: Option<Arm> = None;
    loop {
        if let Some(arm) = &armed {
            subscribe(mux, &arm.target, &mut panes);
            if view::fingerprint(mux, &arm.target) != arm.print {
                let changed = crate::jsonrpc::notification(super::wire::CHANGED, Value::Null);
                if out.send(&changed).is_err() {
                    return;
                }
                armed = None;
            }
        }
        match wait(arms, &tree, &mut panes, armed.is_some()) {
            Nudge::Arm(arm) => armed = Some(arm),
            Nudge::Change => {}
            Nudge::Stop => return,
        }
    }
}

/// Keeps one subscription per pane of the view: new panes are subscribed, gone ones dropped.
fn subscribe(mux: &Mux, target: &WindowRef, panes: &mut Vec<(PaneId, Receiver<()>)>) {
    let shown = view::pane_ids(mux, target);
    panes.retain(|(id, _)| shown.iter().any(|(s, _)| s == id));
    for (id, pane) in shown {
        if !panes.iter().any(|(p, _)| *p == id) {
            panes.push((id, pane.output().subscribe()));
        }
    }
}

/// Sleeps until an arm, or, while armed, a change of the tree or of a shown pane.
fn wait(
    arms: &Receiver<Arm>,
    tree: &Receiver<()>,
    panes: &mut Vec<(PaneId, Receiver<()>)>,
    armed: bool,
) -> Nudge {
    let mut select = Select::new();
    select.recv(arms);
    if armed {
        select.recv(tree);
        for (_, rx) in panes.iter() {
            select.recv(rx);
        }
    }
    let op = select.select();
    match op.index() {
        0 => match op.recv(arms) {
            Ok(arm) => Nudge::Arm(arm),
            Err(_) => Nudge::Stop,
        },
        1 => {
            let _ = op.recv(tree);
            Nudge::Change
        }
        i => {
            // A pane dropped by everyone disconnects its channel: forget it, or it would wake us
            // forever.
            if op.recv(&panes[i - 2].1).is_err() {
                panes.remove(i - 2);
            }
            Nudge::Change
        }
    }
}
