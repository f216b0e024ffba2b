//! A pane's live status: what it is doing now, the last exit code and directory its shell
//! reported, and the command its shell runs.
//!
//! In: a pane. Out: fields added to `fugue_get_status`, the panes of `fugue_list_sessions` (and so
//! `fugue ls`) and `fugue attach`'s view. Everything is computed when asked, from the shell's last
//! record, the terminal's foreground process group and at most one activity probe; nothing runs in
//! the background.

use crate::pane::Pane;
use crate::pane::activity::{self, Activity};
use crate::shell::live::Live;
use serde::{Deserialize, Serialize};

/// What a pane does now: `Prompt` when its live shell is idle (`Live::idle`), else the activity
/// probe's `Busy` or `Input` with the program that asks; `None` once the pane's process has ended.
fn activity(pane: &Pane) -> Option<(Activity, Option<String>)> {
    if !pane.is_running() {
        return None;
    }
    if Live::of(pane).and_then(|live| live.idle()).is_some() {
        return Some((Activity::Prompt, None));
    }
    Some(activity::probe(pane))
}

/// What a running pane is doing, as its views give it: one struct for `fugue_get_status`,
/// `fugue_list_sessions` and `fugue attach`. Every field is left out when unknown.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Doing {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) activity: Option<Activity>,
    /// With `input`: the name of the program that asks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) program: Option<String>,
    /// The status of the last command the shell reported at its prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) last_exit_code: Option<i32>,
    /// Where the shell works: at its prompt, its last report; while busy, and for other panes, the
    /// process's directory in /proc.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) cwd: Option<String>,
    /// What the shell runs now, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) current_command: Option<String>,
}

/// What `pane` is doing now; empty once it has ended.
pub(crate) fn doing(pane: &Pane) -> Doing {
    let Some((activity, program)) = activity(pane) else { return Doing::default() };
    let mut live = Doing { activity: Some(activity), program, ..Doing::default() };
    let shell = Live::of(pane);
    let last = shell.and_then(|l| l.shell.with(|st| Some((st.last()?.status, st.cwd()?))));
    live.last_exit_code = last.as_ref().map(|(status, _)| *status);
    // At its prompt a shell is where it last reported; while a command runs it is where the
    // command took it (`cd dir && make`), which only /proc knows.
    live.cwd = match (last, activity) {
        (Some((_, cwd)), Activity::Prompt) => Some(cwd),
        (last, _) => pane.process_cwd().or(last.map(|(_, cwd)| cwd)),
    };
    if activity != Activity::Prompt {
        // What the shell runs: a `fugue_exec`'s text, or the foreground job's command line.
        live.current_command = shell.and_then(|l| l.running());
    }
    live
}
