//! A pane: one PTY, the process running in it, and what it printed.
//!
//! `Pane::spawn` starts a plain spec's program in its own session (`spawn.rs`), with a reader that
//! drains the PTY into the pane's `Output` at full speed and a waiter that records its exact exit
//! code or signal. Callers write input, resize, read views, interrupt and close; closing ends
//! every process of the pane's session and waits for it. A pane is a terminal and a process: it
//! knows no shell. A live shell stands above it (`crate::shell::live`) and is held here only as an
//! opaque `Above`, so that whoever has the pane finds it, and released when the pane closes.

pub(crate) mod activity;
pub(crate) mod alt;
pub(crate) mod budget;
mod cut;
pub(crate) mod echo;
pub(crate) mod exit;
pub(crate) mod fd;
pub(crate) mod fold;
pub(crate) mod grep;
pub(crate) mod input;
pub(crate) mod keys;
pub(crate) mod life;
pub(crate) mod mark;
pub(crate) mod matter;
pub(crate) mod output;
mod pick;
pub(crate) mod process;
pub(crate) mod ring;
pub(crate) mod screen;
pub(crate) mod search;
pub(crate) mod seen;
pub(crate) mod spawn;
pub(crate) mod tail;
pub(crate) mod text;

pub(crate) use spawn::{Above, PaneSpec, check_cwd};

use crate::error::{Error, ErrorKind, Result};
use crate::ids::{PaneId, SessionId, WindowId};
use crate::sandbox::{self, Mode};
use exit::Exit;
use input::Input;
use life::Life;
use output::Output;
use parking_lot::Mutex;
use portable_pty::{MasterPty, PtySize};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

/// The grace each signal gets when a pane is closed: hang-up, then terminate, then kill.
const CLOSE_GRACE: Duration = Duration::from_millis(300);

/// The largest screen a pane may have, in cells. The emulator keeps about 32 bytes per cell, twice
/// once the program switches to the alternate screen: 1000x1000 cost 62 MB per pane.
pub(crate) const MAX_CELLS: u32 = 250_000;

/// Refuses a screen size over `MAX_CELLS`, for every way a size is set (a pane, a window).
pub(crate) fn check_size(rows: u16, cols: u16) -> Result<()> {
    let cells = u32::from(rows) * u32::from(cols);
    if cells > MAX_CELLS {
        return Err(Error::invalid(format!(
            "rows x cols = {cells} cells is over the limit of {MAX_CELLS} (such as 500x500 or \
             250x1000)"
        )));
    }
    Ok(())
}

/// How long the first look at a sandboxed pane's own process waits for its launcher to start it.
const LAUNCH_PATIENCE: Duration = Duration::from_secs(2);

pub(crate) struct Pane {
    pub(crate) id: PaneId,
    pub(crate) session_id: SessionId,
    pub(crate) window_id: WindowId,
    pub(crate) name: Option<String>,
    pub(crate) command: Option<String>,
    pub(crate) cwd: PathBuf,
    pub(crate) pid: u32,
    /// The whole sandbox policy its processes run under (mode `Off`: none).
    pub(crate) sandbox: Arc<sandbox::Policy>,
    pub(crate) created_at: SystemTime,
    pub(crate) started: Instant,
    /// How long its program must have printed nothing before a wait for the terminal counts as
    /// a question (`FUGUE_INPUT_QUIET_MS`).
    pub(crate) quiet: Duration,
    output: Arc<Output>,
    input: Arc<Input>,
    /// What stands above the pane and drives it: a live shell, if any.
    above: Option<Arc<dyn Above>>,
    /// `None` once the pane is closed: dropping the master hangs up the terminal.
    master: Mutex<Option<Box<dyn MasterPty + Send>>>,
    size: Mutex<(u16, u16)>,
    /// When the waiter reaped the child, in boot clock ticks; 0 while it lives. From then on
    /// `pid` may be anyone's.
    reaped: Arc<AtomicU64>,
    /// In a sandbox, the program's own process under the launcher (`own_pid`), once found.
    own: std::sync::OnceLock<u32>,
    /// The last directory read from /proc (`process_cwd`), while it stands.
    cwd_seen: Mutex<Option<CwdSeen>>,
    /// The status probe's last verdict (`activity::probe`), while it stands.
    pub(crate) probed: Mutex<Option<seen::Probe>>,
    /// The scan of every process's group its looks share with the registry's other panes.
    pub(crate) processes: Arc<seen::ProcessTable>,
}

/// How long a directory read from /proc stands while the pane prints nothing, as the activity
/// probe's verdict does: a listing of 200 panes read 200 links each time, a fifth of its cost.
const CWD_REUSE: Duration = Duration::from_millis(250);

/// A directory read from /proc, with the output end and the moment it was read at.
struct CwdSeen {
    end: u64,
    at: Instant,
    cwd: String,
}

impl Pane {
    /// Starts the pane (see `spawn::start`). On failure, what stands above it is released.
    pub(crate) fn spawn(spec: PaneSpec) -> Result<Arc<Pane>> {
        let started = spawn::start(&spec).inspect_err(|_| {
            if let Some(above) = &spec.above {
                above.release();
            }
        })?;
        Ok(Arc::new(Pane {
            id: spec.id,
            session_id: spec.session_id,
            window_id: spec.window_id,
            name: spec.name,
            command: spec.shown.or(spec.command),
            cwd: started.cwd,
            pid: started.pid,
            sandbox: started.sandbox,
            created_at: SystemTime::now(),
            started: Instant::now(),
            quiet: spec.quiet,
            output: started.output,
            input: started.input,
            above: spec.above,
            master: Mutex::new(Some(started.master)),
            size: Mutex::new((spec.rows, spec.cols)),
            reaped: started.reaped,
            own: std::sync::OnceLock::new(),
            cwd_seen: Mutex::new(None),
            probed: Mutex::new(None),
            processes: spec.processes,
        }))
    }

    pub(crate) fn output(&self) -> &Arc<Output> {
        &self.output
    }

    /// What stands above the pane: its live shell (see `crate::shell::Live::of`).
    pub(crate) fn above(&self) -> Option<&dyn Above> {
        self.above.as_deref()
    }

    /// The pane's own process, the program it runs: the child itself, or in a sandbox the
    /// launcher's grandchild that runs the program (`sandbox::tree`; the launcher and the init of its
    /// pid namespace are fugue's). The first to ask waits, a bounded time, for the launcher to
    /// start it: the pane's start does not, so the launcher's work goes on beside fugue's.
    pub(crate) fn own_pid(&self) -> u32 {
        if self.sandbox.mode == Mode::Off {
            return self.pid;
        }
        if let Some(pid) = self.own.get() {
            return *pid;
        }
        let found = (self.reaped.load(Ordering::SeqCst) == 0)
            .then(|| process::launched_by(self.pid, Instant::now() + LAUNCH_PATIENCE))
            .flatten();
        found.map_or(self.pid, |pid| *self.own.get_or_init(|| pid))
    }

    /// The command line of the job in the terminal's foreground when it is not the pane's own
    /// process (a shell's running command); `None` when the pane's process has the terminal.
    pub(crate) fn foreground_job(&self) -> Option<String> {
        let group = {
            let master = self.master.lock();
            let fd = master.as_ref()?.as_raw_fd()?;
            // SAFETY: tcgetpgrp only reads the terminal's state; the fd lives while the lock is
            // held.
            unsafe { libc::tcgetpgrp(fd) }
        };
        if group <= 0 || u32::try_from(group).ok() == Some(self.own_pid()) {
            return None;
        }
        let cmdline = std::fs::read(format!("/proc/{group}/cmdline")).unwrap_or_default();
        let words: Vec<String> = cmdline
            .split(|b| *b == 0)
            .filter(|w| !w.is_empty())
            .map(|w| String::from_utf8_lossy(w).into_owned())
            .collect();
        Some(if words.is_empty() { format!("process group {group}") } else { words.join(" ") })
    }

    pub(crate) fn size(&self) -> (u16, u16) {
        *self.size.lock()
    }

    /// Where the pane's own process works now, from /proc (a shell's `cd` inside a command that
    /// still runs included); `None` once it has ended.
    pub(crate) fn process_cwd(&self) -> Option<String> {
        if !self.is_running() {
            return None;
        }
        // Output since the last read voids it: a `cd` typed into a program echoes.
        let end = self.output.end();
        let mut seen = self.cwd_seen.lock();
        if let Some(seen) = seen.as_ref().filter(|s| s.end == end && s.at.elapsed() < CWD_REUSE) {
            return Some(seen.cwd.clone());
        }
        let cwd = std::fs::read_link(format!("/proc/{}/cwd", self.own_pid())).ok()?;
        let cwd = cwd.to_string_lossy().into_owned();
        *seen = Some(CwdSeen { end, at: Instant::now(), cwd: cwd.clone() });
        Some(cwd)
    }

    pub(crate) fn is_running(&self) -> bool {
        self.output.exit().is_none()
    }

    /// Writes `parts` in order, each in a write of its own, waiting a bounded time for them to go
    /// in. Returns the output offset at the moment of the write, so that a later read or expect
    /// `since` that offset sees only what the input caused, and the bytes still pending because
    /// the program is not reading its input.
    pub(crate) fn send(&self, parts: &[&[u8]]) -> Result<(u64, usize)> {
        let offset = self.output.end();
        if self.output.with(|s| s.life.is_closed()) {
            return Err(Error::new(ErrorKind::PaneClosed, format!("pane {} is closed", self.id)));
        }
        if self.output.with(|s| matches!(s.life, Life::Ended(_))) {
            return Err(Error::new(
                ErrorKind::PaneExited,
                format!(
                    "pane {} has exited; its output can still be read until it is closed",
                    self.id
                ),
            ));
        }
        let pending = self.input.send(parts, input::WRITE_WAIT)?;
        Ok((offset, pending))
    }

    /// Whether the program asked for application cursor keys (it changes what arrow keys send).
    pub(crate) fn application_cursor(&self) -> bool {
        self.output.application_cursor()
    }

    /// Whether what is typed now shows on the terminal: echoed by the terminal (`ECHO`), or by the
    /// program itself, which then reads key by key (no `ICANON`: a line editor, a full-screen
    /// program). Not at a password prompt, which reads lines without echo. In doubt (no terminal
    /// any more), false.
    pub(crate) fn shows_typing(&self) -> bool {
        let master = self.master.lock();
        let Some(fd) = master.as_ref().and_then(|m| m.as_raw_fd()) else { return false };
        // SAFETY: an all-zero termios is valid, and tcgetattr only writes into it.
        let mut termios: libc::termios = unsafe { std::mem::zeroed() };
        // SAFETY: tcgetattr only reads the terminal's state; the fd lives while the lock is held.
        let read = unsafe { libc::tcgetattr(fd, &raw mut termios) } == 0;
        read && (termios.c_lflag & libc::ECHO != 0 || termios.c_lflag & libc::ICANON == 0)
    }

    pub(crate) fn resize(&self, rows: u16, cols: u16) -> Result<()> {
        let master = self.master.lock();
        let master = master.as_ref().ok_or_else(|| {
            Error::new(ErrorKind::PaneClosed, format!("pane {} is closed", self.id))
        })?;
        master.resize(PtySize { rows, cols, pixel_width: 0, pixel_height: 0 }).map_err(|e| {
            Error::new(ErrorKind::Io, format!("cannot resize pane {}: {e}", self.id))
        })?;
        *self.size.lock() = (rows, cols);
        self.output.resize(rows, cols);
        Ok(())
    }

    /// Interrupts what has the terminal, as Ctrl-C does: SIGINT to the terminal's foreground
    /// process group, even while a program has the terminal in raw mode (where a typed C-c would
    /// be only a byte). A shell with job control runs each command in a group of its own and is
    /// itself the foreground only while it runs a builtin (`read`) or reads its command line. For
    /// a command in a live shell, `crate::shell::Live::interrupt` knows when this may be sent.
    pub(crate) fn interrupt(&self) {
        let group = {
            let master = self.master.lock();
            let Some(fd) = master.as_ref().and_then(|m| m.as_raw_fd()) else { return };
            // SAFETY: tcgetpgrp only reads the terminal's state; the fd lives while the lock is
            // held.
            unsafe { libc::tcgetpgrp(fd) }
        };
        if let Ok(group) = u32::try_from(group)
            && group > 0
            && self.reaped.load(Ordering::SeqCst) == 0
        {
            process::signal_group(group, libc::SIGINT);
        }
    }

    /// Signals what is left of the pane, as found in a snapshot of /proc; returns how many of its
    /// processes were found. While the child lives, its pid names its session and group. Once the
    /// child is reaped the number is free again — unless a process of the session still holds it,
    /// since a session id is never reused while the session lives. A member that started before
    /// the reaping proves the session is still the pane's; a session with that number and no such
    /// member is a stranger's, made after the number came round, and is left alone.
    fn signal_in(&self, sessions: &process::Sessions, signal: i32) -> usize {
        let reaped = self.reaped.load(Ordering::SeqCst);
        let members = sessions.started_by(self.pid, u64::MAX);
        if reaped != 0 && sessions.started_by(self.pid, reaped).is_empty() {
            return 0;
        }
        process::signal_members(self.pid, &members, signal)
    }

    /// Lets the terminal go once every process is ended: the input thread stops and dropping the
    /// master hangs up what may still hold the terminal.
    fn release(&self) {
        if let Some(above) = &self.above {
            above.release();
        }
        self.input.close();
        self.master.lock().take();
    }

    /// Ends the pane and returns how its child ended; see `close_panes`.
    pub(crate) fn close(&self) -> Option<Exit> {
        close_panes(&[self]).pop().flatten()
    }

    /// Waits for the child's exit until `deadline`.
    pub(crate) fn wait_exit(&self, deadline: Instant) -> Option<Exit> {
        let events = self.output.subscribe_status();
        loop {
            if let Some(exit) = self.output.exit() {
                return Some(exit);
            }
            if events.recv_deadline(deadline).is_err() {
                return self.output.exit();
            }
        }
    }
}

/// Ends panes together: hang-up, then terminate, then kill, each with a short grace, until every
/// child is reaped and no process of their sessions is left; returns how each child ended. Each
/// round looks at /proc once for all the panes, so ending two hundred costs about what ending one
/// does, and a finished command's pane with nothing left costs one look.
pub(crate) fn close_panes(panes: &[&Pane]) -> Vec<Option<Exit>> {
    for pane in panes {
        // Waiters learn that the pane is going away before its process dies of the hang-up.
        pane.output.set_closed();
    }
    // A child not yet reaped is always found in its own session, so finding nothing means every
    // child is reaped and nothing of theirs is left to signal.
    if signal_all(panes, &[libc::SIGHUP, libc::SIGCONT]) > 0 {
        wait_all(panes, Instant::now() + CLOSE_GRACE);
        if signal_all(panes, &[libc::SIGTERM]) > 0 {
            wait_all(panes, Instant::now() + CLOSE_GRACE);
        }
        for _ in 0..10 {
            if signal_all(panes, &[libc::SIGKILL]) == 0 {
                break;
            }
        }
    }
    wait_all(panes, Instant::now() + Duration::from_secs(2));
    // A sandboxed pane's processes that left its session (`setsid`, double forks) died with its
    // pid namespace when its launcher ended.
    for pane in panes.iter().filter(|p| p.sandbox.mode != Mode::Off) {
        sandbox::forget(&pane.sandbox, &sandbox::tag(&pane.id));
    }
    panes
        .iter()
        .map(|pane| {
            pane.release();
            pane.output.exit()
        })
        .collect()
}

/// Sends each signal to every pane's remaining processes, from one look at /proc; returns how many
/// processes were found.
fn signal_all(panes: &[&Pane], signals: &[i32]) -> usize {
    let sessions = process::Sessions::scan();
    let mut found = 0;
    for pane in panes {
        for (i, signal) in signals.iter().enumerate() {
            let n = pane.signal_in(&sessions, *signal);
            if i == 0 {
                found += n;
            }
        }
    }
    found
}

/// Waits until every pane's child has ended, or the deadline.
fn wait_all(panes: &[&Pane], deadline: Instant) {
    for pane in panes {
        pane.wait_exit(deadline);
    }
}
