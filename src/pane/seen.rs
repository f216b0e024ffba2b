//! What looks at a pane leave for the next ones: the words of its activity, the status probe's
//! last verdict (kept by the pane) and the last scan of every process's group (kept by the
//! registry, shared by its panes' looks). A leaf of `pane`, so the pane can hold them while
//! `activity`, which looks at the pane, fills them.

use crate::words::words;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::time::Instant;

words! {
    /// What a pane is doing, in the words every view gives it (and `fugue ls` reads back from the
    /// control socket's tree).
    pub(crate) enum Activity {
        /// Its shell waits at the prompt (only shell integration can say so).
        Prompt = "prompt",
        /// A command or program works.
        Busy = "busy",
        /// The program in the foreground waits for the terminal and has printed nothing for a
        /// while.
        Input = "input",
    }
}

/// A status probe's verdict of a pane, while it stands (`activity::PROBE_REUSE`).
pub(crate) struct Probe {
    pub(crate) at: Instant,
    /// The pane's output end when it was made: a pane that printed since is looked at again.
    pub(crate) end: u64,
    pub(crate) activity: Activity,
    /// The program that asks, with `Input`.
    pub(crate) program: Option<String>,
}

/// Every process on the machine with its process group.
pub(crate) type Groups = Vec<(u32, i32)>;

/// Executable (device, inode, change time) -> is a Go program (`activity::goruntime`).
pub(crate) type GoKnown = HashMap<(u64, u64, i64), bool>;

/// What the looks at the registry's panes (`mux::Setup`) share (`activity::proc`).
#[derive(Default, Debug)]
pub(crate) struct ProcessTable {
    /// The last scan of every process's group, and when it ended.
    pub(crate) groups: Mutex<Option<(Instant, Groups)>>,
    /// Which executables are Go programs, so a look reads each file once.
    pub(crate) go: Mutex<GoKnown>,
}
