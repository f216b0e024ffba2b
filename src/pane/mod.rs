//! A pane: one PTY, the process running in it, and what it printed.
//!
//! `Pane::spawn` opens a PTY, starts the command in its own session, and starts two threads: the
//! reader drains the PTY into the pane's `Output` at full speed (nothing else happens on that path),
//! and the waiter reaps the child and records its exact exit code or signal. Callers write input,
//! resize, read views and close; closing ends every process of the pane's session and waits for it.

pub(crate) mod activity;
pub(crate) mod alt;
pub(crate) mod budget;
mod cut;
pub(crate) mod echo;
pub(crate) mod exit;
pub(crate) mod fd;
pub(crate) mod input;
pub(crate) mod keys;
pub(crate) mod mark;
pub(crate) mod output;
pub(crate) mod process;
pub(crate) mod ring;
pub(crate) mod screen;
pub(crate) mod search;
pub(crate) mod tail;
pub(crate) mod text;

use crate::error::{Error, ErrorKind, Result};
use crate::ids::short_id;
use crate::sandbox::{self, Mode};
use crate::tempdir::TempDirs;
use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};
use exit::Exit;
use input::Input;
use output::Output;
use parking_lot::Mutex;
use portable_pty::{CommandBuilder, MasterPty, PtySize};
use std::io::Read;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

/// How long the waiter lets the reader drain after the child exits before it announces the exit:
/// first `QUICK_DRAIN`, in which end of file normally arrives; then, when processes of the pane are
/// left that may hold the terminal open, `DRAIN_GRACE`; when none are, `LONG_DRAIN`, a bound for a
/// reader starved of CPU.
const QUICK_DRAIN: Duration = Duration::from_millis(20);
const DRAIN_GRACE: Duration = Duration::from_millis(200);
const LONG_DRAIN: Duration = Duration::from_secs(5);

/// The grace each signal gets when a pane is closed: hang-up, then terminate, then kill.
const CLOSE_GRACE: Duration = Duration::from_millis(300);

/// How far back from the end of the output a prompt's marks are looked for.
const PROMPT_LOOK_BACK: u64 = 64 << 10;

/// The most one read from the PTY takes: the reader's buffer, on the heap.
const READ_CHUNK: usize = 64 << 10;

/// Stack size of the reader and waiter threads: they hold one buffer on the heap and little else.
const THREAD_STACK: usize = 128 << 10;

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

/// Everything needed to start a pane.
pub(crate) struct Spec {
    pub(crate) id: String,
    pub(crate) session_id: String,
    pub(crate) window_id: String,
    pub(crate) name: Option<String>,
    pub(crate) command: Option<String>,
    /// What the pane's `command` shows, when not the command itself (a pipeline's steps rather
    /// than the line that starts its shell).
    pub(crate) shown: Option<String>,
    /// Where it starts: absolute, or relative to fugue's own directory.
    pub(crate) cwd: PathBuf,
    pub(crate) env: Vec<(String, String)>,
    pub(crate) rows: u16,
    pub(crate) cols: u16,
    /// Start an interactive shell with fugue's shell integration (see `crate::shell`).
    pub(crate) integration: bool,
    /// An integration made beforehand, for a command that starts the shell itself.
    pub(crate) live: Option<Arc<crate::shell::Shell>>,
    /// A sandbox stricter than the server's, asked for by the call.
    pub(crate) sandbox: Option<Mode>,
    /// The only writable roots, in place of the server's.
    pub(crate) roots: Option<Vec<PathBuf>>,
    /// The pane's own private directories, reachable from inside its sandbox.
    pub(crate) keep: Vec<PathBuf>,
}

pub(crate) struct Pane {
    pub(crate) id: String,
    pub(crate) session_id: String,
    pub(crate) window_id: String,
    pub(crate) name: Option<String>,
    pub(crate) command: Option<String>,
    pub(crate) cwd: PathBuf,
    pub(crate) pid: u32,
    /// The sandbox its processes run in (`Off`: none).
    pub(crate) sandbox: Mode,
    /// Its own writable roots in the sandbox, in place of the server's.
    pub(crate) roots: Option<Vec<PathBuf>>,
    pub(crate) created_at: SystemTime,
    pub(crate) started: Instant,
    output: Arc<Output>,
    input: Arc<Input>,
    /// The shell integration of an interactive shell pane.
    shell: Option<Arc<crate::shell::Shell>>,
    /// `None` once the pane is closed: dropping the master hangs up the terminal.
    master: Mutex<Option<Box<dyn MasterPty + Send>>>,
    size: Mutex<(u16, u16)>,
    /// When the waiter reaped the child, in boot clock ticks; 0 while it lives. From then on
    /// `pid` may be anyone's.
    reaped: Arc<AtomicU64>,
}

impl Pane {
    /// Starts the pane; a live shell registers its private directory in `temp_dirs`.
    pub(crate) fn spawn(mut spec: Spec, temp_dirs: &Arc<TempDirs>) -> Result<Arc<Pane>> {
        let cfg = crate::config::config();
        let cwd = resolve_cwd(&spec.cwd)?;
        let size = PtySize { rows: spec.rows, cols: spec.cols, pixel_width: 0, pixel_height: 0 };
        let pair = crate::inherit::open_pty(size)?;
        let live = match (spec.live.take(), &spec.command) {
            (Some(shell), _) => Some((shell, None)),
            (None, None) if spec.integration && crate::shell::enabled() => {
                crate::shell::Shell::prepare(&cfg.shell, &spec.env, temp_dirs)?
                    .map(|(shell, launch)| (shell, Some(launch)))
            }
            _ => None,
        };
        let launch = live.as_ref().and_then(|(_, launch)| launch.as_ref());
        let mut cmd = command_builder(&cfg.shell, &spec, &cwd, launch);
        let stop_shell = || {
            if let Some((shell, _)) = &live {
                shell.stop();
            }
        };
        let sandbox = confine(&mut cmd, &spec, live.as_ref().map(|(shell, _)| &**shell))
            .inspect_err(|_| stop_shell())?;
        let child = pair.slave.spawn_command(cmd).map_err(|e| {
            stop_shell();
            sandbox::forget(&sandbox::tag(&spec.id));
            Error::new(ErrorKind::SpawnFailed, format!("cannot start {}: {e}", cfg.shell))
        })?;
        let shell = live.map(|(shell, _)| shell);
        // Our copy of the slave must go, or the reader never sees end of file.
        drop(pair.slave);
        let pid = child.process_id().ok_or_else(|| Error::internal("the child has no pid"))?;
        let master_fd =
            pair.master.as_raw_fd().ok_or_else(|| spawn_err("the terminal has no descriptor"))?;
        let (reader, writer) = fd::terminal_ends(master_fd).map_err(spawn_err)?;
        let input = Arc::new(Input::start(&spec.id, writer, |run| {
            spawn_thread(format!("pane-input-{}", short_id(&spec.id)), run)
        })?);
        let output = Arc::new(Output::new(cfg.scrollback_bytes, spec.rows, spec.cols));
        let reaped = Arc::new(AtomicU64::new(0));
        let (eof_tx, eof_rx) = crossbeam_channel::bounded::<()>(0);
        start_reader(&spec.id, reader, output.clone(), input.clone(), eof_tx)?;
        start_waiter(&spec.id, pid, child, output.clone(), eof_rx, reaped.clone())?;
        Ok(Arc::new(Pane {
            id: spec.id,
            session_id: spec.session_id,
            window_id: spec.window_id,
            name: spec.name,
            command: spec.shown.or(spec.command),
            cwd,
            pid,
            sandbox,
            roots: spec.roots,
            created_at: SystemTime::now(),
            started: Instant::now(),
            output,
            input,
            shell,
            master: Mutex::new(Some(pair.master)),
            size: Mutex::new((spec.rows, spec.cols)),
            reaped,
        }))
    }

    pub(crate) fn output(&self) -> &Arc<Output> {
        &self.output
    }

    /// The shell integration, for a pane that runs an interactive shell with it.
    pub(crate) fn shell(&self) -> Option<&crate::shell::Shell> {
        self.shell.as_deref()
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
        if group <= 0 || u32::try_from(group).ok() == Some(self.pid) {
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
        let cwd = std::fs::read_link(format!("/proc/{}/cwd", self.pid)).ok()?;
        Some(cwd.to_string_lossy().into_owned())
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
        if self.output.with(|s| s.closed) {
            return Err(Error::new(ErrorKind::PaneClosed, format!("pane {} is closed", self.id)));
        }
        if self.output.exit().is_some() && self.output.with(|s| s.eof) {
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

    /// Types `line`, which makes the live shell `shell` run exec `exec` from its private file, so that a
    /// person watching sees `display` (the command) where the shell echoes `line` (see `echo.rs`).
    /// Returns the output offset at the moment of the write, as `send` does. What is held is shown
    /// as it was if the shell prompts again without running the line, and when the pane ends.
    pub(crate) fn type_hidden(
        &self,
        shell: &crate::shell::Shell,
        (line, exec): (&str, u64),
        display: &str,
    ) -> Result<u64> {
        self.output.hold_echo(echo::Echo::new(exec, line, &shell.begin_mark(exec), display));
        let typed = self.send(&[line.as_bytes()]);
        if typed.is_err() {
            self.output.release_echo(exec);
        }
        Ok(typed?.0)
    }

    /// Waits until `prompt_drawn`, or until `by`.
    pub(crate) fn wait_prompt_drawn(&self, shell: &crate::shell::Shell, by: Instant) {
        let printed = self.output.subscribe();
        while !self.prompt_drawn(shell) && printed.recv_deadline(by).is_ok() {}
    }

    /// Whether the last prompt of the live shell `shell` in this pane is drawn whole: its end-of-prompt mark (OSC 133 B) came
    /// after the end mark of the last command, so what the terminal prints from now on is the
    /// shell's echo of what is typed. `false` while the shell has not reported a prompt, or its
    /// marks are not in the output yet.
    pub(crate) fn prompt_drawn(&self, shell: &crate::shell::Shell) -> bool {
        let Some(prompt) = shell.with(|s| s.last().cloned()) else { return false };
        let end_mark = shell.end_mark(&prompt);
        self.output.with(|s| {
            let end = s.ring.end();
            let (bytes, _) = s.ring.copy(end.saturating_sub(PROMPT_LOOK_BACK), end);
            let Some(at) = find(&bytes, end_mark.as_bytes()) else { return false };
            find(&bytes[at..], crate::shell::PROMPT_DRAWN.as_bytes()).is_some()
        })
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

    /// Sends `signal` once to the terminal's foreground process group, as Ctrl-C does, even while
    /// a program has the terminal in raw mode. A shell with job control runs each command in a
    /// group of its own and is itself the foreground only while it runs a builtin (`read`).
    pub(crate) fn signal_foreground(&self, signal: i32) {
        let group = {
            let master = self.master.lock();
            let Some(fd) = master.as_ref().and_then(|m| m.as_raw_fd()) else { return };
            // SAFETY: tcgetpgrp only reads the terminal's state; the fd lives while the lock is
            // held.
            unsafe { libc::tcgetpgrp(fd) }
        };
        if group > 0 && self.reaped.load(Ordering::SeqCst) == 0 {
            // SAFETY: killpg only sends a signal; a stale group id fails with ESRCH.
            unsafe {
                libc::killpg(group, signal);
            }
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
        if let Some(shell) = &self.shell {
            shell.stop();
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
    end_escapees(panes);
    panes
        .iter()
        .map(|pane| {
            pane.release();
            pane.output.exit()
        })
        .collect()
}

/// Kills what sandboxed panes started outside their sessions (`setsid`, double-forked daemons):
/// every process that carries a pane's mark (see `sandbox::tag`).
fn end_escapees(panes: &[&Pane]) {
    let tags: Vec<String> =
        panes.iter().filter(|p| p.sandbox != Mode::Off).map(|p| sandbox::tag(&p.id)).collect();
    tags.iter().for_each(|tag| sandbox::forget(tag));
    // A process forking as it is killed leaves a child; a few rounds end a fork loop too.
    for _ in 0..10 {
        let marked = process::marked(&tags);
        if marked.is_empty() {
            return;
        }
        for pid in marked {
            // SAFETY: kill only sends a signal; a stale id fails with ESRCH.
            unsafe { libc::kill(process::pid_t(pid), libc::SIGKILL) };
        }
    }
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

fn spawn_err(e: impl std::fmt::Display) -> Error {
    Error::new(ErrorKind::SpawnFailed, format!("cannot set up the pty: {e}"))
}

/// The pane's working directory as an absolute path, so that what the pane reports is where it
/// runs, whatever directory the reader is in. The caller made a relative `cwd` relative to its
/// own directory (`tool::Ctx::dir`); `.` only stands for a directory that could not be read.
fn resolve_cwd(cwd: &std::path::Path) -> Result<PathBuf> {
    let dir = std::path::absolute(cwd)
        .map_err(|e| Error::new(ErrorKind::BadCwd, format!("cwd {}: {e}", cwd.display())))?;
    check_cwd(&dir).map(|()| dir)
}

/// Checks that a process can start in `cwd`: it exists and is a directory.
pub(crate) fn check_cwd(cwd: &std::path::Path) -> Result<()> {
    match std::fs::metadata(cwd) {
        Ok(meta) if meta.is_dir() => Ok(()),
        Ok(_) => {
            Err(Error::new(ErrorKind::BadCwd, format!("cwd {} is not a directory", cwd.display())))
        }
        Err(e) => Err(Error::new(ErrorKind::BadCwd, format!("cwd {}: {e}", cwd.display()))),
    }
}

fn command_builder(
    shell: &str,
    spec: &Spec,
    cwd: &std::path::Path,
    launch: Option<&crate::shell::Launch>,
) -> CommandBuilder {
    let mut cmd = CommandBuilder::new(shell);
    if let Some(command) = &spec.command {
        cmd.arg("-c");
        cmd.arg(command);
    }
    for arg in launch.map(|l| l.args.as_slice()).unwrap_or_default() {
        cmd.arg(arg);
    }
    cmd.cwd(cwd);
    for (key, value) in [
        ("TERM", "xterm-256color"),
        ("PAGER", "cat"),
        ("GIT_PAGER", "cat"),
        ("GIT_TERMINAL_PROMPT", "0"),
        ("FUGUE_PANE_ID", spec.id.as_str()),
        ("FUGUE_SESSION_ID", spec.session_id.as_str()),
        ("FUGUE_WINDOW_ID", spec.window_id.as_str()),
    ] {
        cmd.env(key, value);
    }
    // An inherited size would lie about the pane's size.
    cmd.env_remove("COLUMNS");
    cmd.env_remove("LINES");
    for (key, value) in &spec.env {
        cmd.env(key, value);
    }
    // After the pane's own variables: the init script restores ENV or ZDOTDIR from them.
    for (key, value) in launch.map(|l| l.env.as_slice()).unwrap_or_default() {
        cmd.env(key, value);
    }
    cmd
}

/// Runs the pane's process through the sandbox launcher unless its policy is `off`, and withholds
/// secret-looking variables that neither `--pass-env` nor the call named. Returns the policy.
fn confine(
    cmd: &mut CommandBuilder,
    spec: &Spec,
    shell: Option<&crate::shell::Shell>,
) -> Result<Mode> {
    let mode = sandbox::effective(spec.sandbox)?;
    if mode == Mode::Off {
        return Ok(mode);
    }
    sandbox::check_available()?;
    let mut keep = spec.keep.clone();
    keep.extend(shell.and_then(crate::shell::Shell::dir));
    keep.extend(spec.roots.iter().flatten().cloned());
    let plan = sandbox::plan(mode, &keep, sandbox::tag(&spec.id), spec.roots.as_deref())?;
    let argv = sandbox::launch::wrap(&plan, cmd.get_argv());
    *cmd.get_argv_mut() = argv;
    let pass = &sandbox::server().pass_env;
    let withheld: Vec<String> = cmd
        .iter_full_env_as_str()
        .map(|(key, _)| key)
        .filter(|key| sandbox::is_secret(key) && !pass.iter().any(|p| p == key))
        .filter(|key| !spec.env.iter().any(|(k, _)| k == key))
        .map(str::to_string)
        .collect();
    for key in withheld {
        cmd.env_remove(key);
    }
    Ok(mode)
}

/// The reader: drain the PTY into the output, answer cursor-position queries, and drop `eof` at the
/// end so the waiter knows all output is in.
fn start_reader(
    id: &str,
    mut reader: std::fs::File,
    output: Arc<Output>,
    input: Arc<Input>,
    eof: Sender<()>,
) -> Result<()> {
    let run = move || {
        let mut buf = vec![0u8; READ_CHUNK];
        loop {
            match reader.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    output.append(&buf[..n]);
                    answer_queries(&buf[..n], &output, &input);
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                // The terminal is non-blocking (for the input writer's sake): wait for output,
                // or for the hang-up after which the next read fails.
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    if fd::wait([(&reader, libc::POLLIN)]).is_err() {
                        break;
                    }
                }
                Err(_) => break, // EIO: every process holding the terminal is gone
            }
        }
        output.set_eof();
        drop(eof);
    };
    spawn_thread(format!("pane-reader-{}", short_id(id)), run)
}

/// Programs such as Codex wait for the answer to "where is the cursor?" (`ESC [ 6 n`) before they
/// draw; a real terminal answers it, so we do too. Only the rare chunk that holds the query pays.
fn answer_queries(chunk: &[u8], output: &Output, input: &Input) {
    const QUERY: &[u8] = b"\x1b[6n";
    if contains(chunk, QUERY) {
        let (row, col) = output.grid().cursor;
        // One write: a program reading the reply with one read must get all of it.
        let reply = format!("\x1b[{};{}R", row + 1, col + 1);
        input.reply(reply.as_bytes());
    }
}

/// Whether `needle` occurs in `haystack`. This runs over every byte a pane prints, so it uses libc's
/// vectorised `memmem` rather than a byte loop (which, unoptimised, slowed the reader sixfold).
fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    // SAFETY: both pointers are valid for their lengths, and memmem only reads them.
    let found = unsafe {
        libc::memmem(haystack.as_ptr().cast(), haystack.len(), needle.as_ptr().cast(), needle.len())
    };
    !found.is_null()
}

/// The waiter: reap the child, let the reader drain what it printed, then announce the exit.
fn start_waiter(
    id: &str,
    pid: u32,
    child: Box<dyn portable_pty::Child + Send + Sync>,
    output: Arc<Output>,
    eof: Receiver<()>,
    reaped: Arc<AtomicU64>,
) -> Result<()> {
    let run = move || {
        let exit = process::wait(pid);
        reaped.store(process::boot_ticks().max(1), Ordering::SeqCst);
        drain(&eof, pid, reaped.load(Ordering::SeqCst));
        output.set_exit(exit);
        drop(child);
    };
    spawn_thread(format!("pane-waiter-{}", short_id(id)), run)
}

/// Waits until the reader has drained the terminal after the child ended. End of file says so at
/// once in the usual case. Without it, either the reader is behind (a loaded machine) or another
/// process still holds the terminal: if the child's session has no process left, only the reader
/// can be late, so it gets a long bound; otherwise a short one, since a background job may keep
/// the terminal open for hours.
fn drain(eof: &Receiver<()>, pid: u32, reaped: u64) {
    // The reader never sends: it drops its end at end of file, which disconnects the channel.
    if !matches!(eof.recv_timeout(QUICK_DRAIN), Err(RecvTimeoutError::Timeout)) {
        return;
    }
    let alone = process::session_members_started_by(pid, reaped).is_empty();
    let _ = eof.recv_timeout(if alone { LONG_DRAIN } else { DRAIN_GRACE });
}

fn spawn_thread(name: String, run: impl FnOnce() + Send + 'static) -> Result<()> {
    std::thread::Builder::new()
        .name(name)
        .stack_size(THREAD_STACK)
        .spawn(run)
        .map(|_| ())
        .map_err(|e| Error::new(ErrorKind::SpawnFailed, format!("cannot start a thread: {e}")))
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contains_finds_a_needle_anywhere() {
        assert!(contains(b"\x1b[6n", b"\x1b[6n"));
        assert!(contains(b"abc\x1b[6nxyz", b"\x1b[6n"));
        assert!(!contains(b"abc\x1b[6", b"\x1b[6n"));
        assert!(!contains(b"", b"\x1b[6n"));
    }
}
