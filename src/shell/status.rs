//! A pane's live status: what it is doing now, the last exit code and directory its shell
//! reported, and the command its shell runs.
//!
//! In: a pane. Out: fields added to `fugue_get_status`, the panes of `fugue_list_sessions` (and so
//! `fugue ls`) and `fugue attach`'s view. Everything is computed when asked, from the shell's last
//! record, the terminal's foreground process group and at most one activity probe; nothing runs in
//! the background.

use crate::pane::Pane;
use crate::pane::activity::{self, Activity};
use serde_json::{Value, json};

/// What a pane does now: `Prompt` when its shell reported its prompt and nothing runs, else the
/// activity probe's `Busy` or `Input`; `None` once the pane's process has ended.
pub(crate) fn activity(pane: &Pane) -> Option<Activity> {
    if !pane.is_running() {
        return None;
    }
    if let Some(shell) = pane.shell() {
        let (started, pending) = shell.with(|s| (s.prompts > 0, s.pending.is_some()));
        if started && !pending && pane.foreground_job().is_none() {
            return Some(Activity::Prompt);
        }
    }
    Some(activity::probe(pane))
}

/// Adds `activity`, `last_exit_code`, `cwd` (where the shell works: a pending `fugue_exec`'s
/// directory or its last report, else the process's directory in /proc) and `current_command` (what the shell runs now, when known) to `value`.
pub(crate) fn add_live(value: &mut Value, pane: &Pane) {
    let Some(activity) = activity(pane) else { return };
    value["activity"] = json!(activity.as_str());
    let last = pane.shell().and_then(|s| s.with(|st| Some((st.last()?.status, st.cwd()?))));
    if let Some((status, cwd)) = last {
        value["last_exit_code"] = json!(status);
        value["cwd"] = json!(cwd);
    } else if let Ok(cwd) = std::fs::read_link(format!("/proc/{}/cwd", pane.pid)) {
        value["cwd"] = json!(cwd);
    }
    if activity != Activity::Prompt
        && let Some(command) = current_command(pane)
    {
        value["current_command"] = json!(command);
    }
}

/// The command a shell pane runs now: a `fugue_exec`'s text, or the foreground job's command line.
fn current_command(pane: &Pane) -> Option<String> {
    let shell = pane.shell()?;
    let pending = shell.with(|s| s.pending.as_ref().map(|(_, command)| command.clone()));
    pending.or_else(|| pane.foreground_job())
}
