//! fugue's own shells: where `fugue_exec` without `pane_id` runs, so that an agent never waits its
//! turn.
//!
//! In: the caller's directory (a shared server's front works in its own) and the registry of panes.
//! Out: a `Claim` on a shell pane of that directory that nobody else runs a command in. Shells are
//! kept in the order they were made and the first free one is taken, so `cd` and `export` carry
//! over between calls as far as they can; while every one is busy, a new one starts in the busy
//! shell's current directory, up to `MAX_SHELLS` per directory. A claim holds its shell from the
//! choice until the command is typed (when the shell's own record of it takes over), so two calls
//! at once never pick the same shell. The pool belongs to the `Runtime`: nothing here is global.

use crate::error::{Error, ErrorKind, Result};
use crate::mux::{Mux, PaneArgs};
use crate::pane::Pane;
use crate::shell::live::Live;
use parking_lot::Mutex;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The session of fugue's own shell panes.
pub(crate) const SHELL_SESSION: &str = "shell";

/// The most shells one directory's calls keep busy at once.
pub(crate) const MAX_SHELLS: usize = 16;

/// fugue's own shells, per caller directory, in the order they were made.
#[derive(Default)]
pub(crate) struct Pool {
    shells: Mutex<Vec<PooledShell>>,
}

/// One of fugue's own shells in the pool.
struct PooledShell {
    /// The directory of the callers this shell serves (not where the shell is now).
    dir: PathBuf,
    pane: Arc<Pane>,
    /// A call chose this shell and has not typed its command yet.
    claimed: bool,
}

/// A shell chosen for one command; dropping it lets others choose the shell again.
pub(crate) struct Claim<'p> {
    pool: &'p Pool,
    pub(crate) pane: Arc<Pane>,
}

impl Drop for Claim<'_> {
    fn drop(&mut self) {
        let mut shells = self.pool.shells.lock();
        if let Some(entry) = shells.iter_mut().find(|e| Arc::ptr_eq(&e.pane, &self.pane)) {
            entry.claimed = false;
        }
    }
}

impl Pool {
    /// The first free shell of `dir`'s callers, or a new one while they have fewer than
    /// `MAX_SHELLS`; `limit_reached`, naming what each one runs, past that.
    /// Shells are kept apart per sandbox: `sandbox` is the call's own whole policy, if it asked
    /// for one.
    pub(crate) fn claim(
        &self,
        mux: &Mux,
        dir: &Path,
        sandbox: Option<Arc<crate::sandbox::Policy>>,
    ) -> Result<Claim<'_>> {
        let policy = sandbox.clone().unwrap_or_else(|| mux.sandbox());
        let mut shells = self.shells.lock();
        // Shells that were closed or exited leave the pool on every use, so it holds no more than
        // the shells still running.
        shells.retain(|e| e.pane.is_running() && mux.pane(&e.pane.id).is_ok());
        let mine: Vec<usize> = (0..shells.len())
            .filter(|&i| shells[i].dir == dir && shells[i].pane.sandbox.same(&policy))
            .collect();
        let free = mine.iter().copied().find(|&i| !shells[i].claimed && is_free(&shells[i].pane));
        let pane = match free {
            Some(i) => {
                shells[i].claimed = true;
                shells[i].pane.clone()
            }
            None if mine.len() >= MAX_SHELLS => {
                return Err(all_busy(mine.iter().map(|&i| &shells[i])));
            }
            None => {
                // The new shell starts where the busy one is now, as if the agent had opened a
                // second terminal beside it.
                let busy_dir = mine.iter().find_map(|&i| shell_dir(&shells[i].pane));
                let start = busy_dir.filter(|d| d.is_dir()).unwrap_or_else(|| dir.to_path_buf());
                let session = mux.ensure_session(SHELL_SESSION)?;
                let args = PaneArgs { sandbox, ..PaneArgs::shell(start) };
                let pane = mux.create_window(&session, None, args)?;
                shells.push(PooledShell {
                    dir: dir.to_path_buf(),
                    pane: pane.clone(),
                    claimed: true,
                });
                pane
            }
        };
        Ok(Claim { pool: self, pane })
    }
}

/// Whether a shell pane can take a command now (see `Live::free`).
fn is_free(pane: &Pane) -> bool {
    Live::of(pane).is_some_and(|live| live.free())
}

/// Where the pane's shell is now: a busy shell's command may have `cd`'d (`cd proj && make`),
/// which its last prompt cannot tell, so the process's own directory comes first.
fn shell_dir(pane: &Pane) -> Option<PathBuf> {
    let reported = || Live::of(pane)?.shell.with(|s| s.last().map(|p| p.cwd.clone()));
    pane.process_cwd().or_else(reported).map(PathBuf::from)
}

fn all_busy<'e>(entries: impl Iterator<Item = &'e PooledShell>) -> Error {
    let busy: Vec<String> = entries
        .map(|e| {
            let what = Live::of(&e.pane).and_then(|live| live.pending());
            match what.or_else(|| e.pane.foreground_job()) {
                Some(what) => format!("{} ({what})", e.pane.id),
                None => e.pane.id.to_string(),
            }
        })
        .collect();
    Error::new(
        ErrorKind::LimitReached,
        format!(
            "all {MAX_SHELLS} of fugue's shells for this directory are busy: {}; wait for one \
             with fugue_wait, stop one with fugue_send_input keys [\"C-c\"], or close one",
            busy.join(", ")
        ),
    )
}
