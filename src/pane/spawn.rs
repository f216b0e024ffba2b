//! Starting a pane: what it runs (a plain spec), the PTY, and the reader and waiter threads.
//!
//! The spec names a program, its arguments and environment; the pane does not know what they are
//! for. A live shell stands above the pane when the caller made one (`crate::shell`): it prepared
//! the shell's arguments and variables and hands the pane only an `Above`, which the pane tells
//! when it is released and asks which lines of its text view are the echo of what it typed.

use super::input::Input;
use super::output::Output;
use super::{fd, process};
use crate::error::{Error, ErrorKind, Result};
use crate::ids::{PaneId, SessionId, WindowId, short_id};
use crate::sandbox::{self, Mode, Policy};
use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};
use portable_pty::{CommandBuilder, MasterPty, PtySize};
use std::any::Any;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// How long the waiter lets the reader drain after the child exits before it announces the exit:
/// first `QUICK_DRAIN`, in which end of file normally arrives; then, when processes of the pane are
/// left that may hold the terminal open, `DRAIN_GRACE`; when none are, `LONG_DRAIN`, a bound for a
/// reader starved of CPU.
const QUICK_DRAIN: Duration = Duration::from_millis(20);
const DRAIN_GRACE: Duration = Duration::from_millis(200);
const LONG_DRAIN: Duration = Duration::from_secs(5);

/// The most one read from the PTY takes: the reader's buffer, on the heap.
const READ_CHUNK: usize = 64 << 10;

/// Stack size of the reader and waiter threads: they hold one buffer on the heap and little else.
const THREAD_STACK: usize = 128 << 10;

/// What stands above a pane and drives its process: a live shell (`crate::shell::Shell`). The pane
/// holds it only so that views and the close find it; it knows nothing of shells.
pub(crate) trait Above: Any + Send + Sync {
    /// Whether `line` of the text view is the echo of a line this typed, which says nothing to
    /// the reader of a command's output.
    fn typed_line(&self, line: &str) -> bool;
    /// The pane is released: its processes are gone.
    fn release(&self);
    /// Whether a command this gave the pane's own process runs in it now (its begin is in the
    /// pane's `output`), so that the process itself waiting for the terminal is that command
    /// asking (a shell's builtin `read`), not the process at its own prompt.
    fn runs_command(&self, output: &Output) -> bool;
}

/// Everything needed to start a pane.
pub(crate) struct PaneSpec {
    pub(crate) id: PaneId,
    pub(crate) session_id: SessionId,
    pub(crate) window_id: WindowId,
    pub(crate) name: Option<String>,
    /// The command the pane runs, as it shows; `None` for an interactive shell.
    pub(crate) command: Option<String>,
    /// What the pane's `command` shows, when not the command itself (a pipeline's steps rather
    /// than the line that starts its shell).
    pub(crate) shown: Option<String>,
    /// The program started, and its arguments.
    pub(crate) program: String,
    pub(crate) args: Vec<String>,
    /// Where it starts: absolute, or relative to fugue's own directory.
    pub(crate) cwd: PathBuf,
    /// Its variables, over fugue's own; the last of a name wins.
    pub(crate) env: Vec<(String, String)>,
    pub(crate) rows: u16,
    pub(crate) cols: u16,
    /// How many bytes of output the pane keeps (`FUGUE_SCROLLBACK_BYTES`).
    pub(crate) scrollback: usize,
    /// How long a program's silence makes its wait for the terminal a question (`Pane::quiet`).
    pub(crate) quiet: Duration,
    /// What stands above the pane (a live shell), if anything.
    pub(crate) above: Option<Arc<dyn Above>>,
    /// The pane's whole sandbox policy: the server's, or its call's own stricter one.
    pub(crate) sandbox: Arc<Policy>,
    /// The scan of every process's group the registry's panes share (`mux::Setup`).
    pub(crate) processes: Arc<super::seen::ProcessTable>,
    /// What the runtime's sandboxed panes share (`mux::Setup`).
    pub(crate) holders: Arc<sandbox::Holders>,
    /// The only writable roots, in place of the policy's (an agent stage's worktree).
    pub(crate) roots: Option<Vec<PathBuf>>,
    /// The pane's own private directories, reachable from inside its sandbox.
    pub(crate) keep: Vec<PathBuf>,
}

/// A process started in its terminal, with the threads that serve it: what a `Pane` holds.
pub(crate) struct Started {
    /// Where it started, made absolute.
    pub(crate) cwd: PathBuf,
    pub(crate) pid: u32,
    /// The whole sandbox policy it runs under (mode `Off`: none).
    pub(crate) sandbox: Arc<Policy>,
    pub(crate) master: Box<dyn MasterPty + Send>,
    pub(crate) output: Arc<Output>,
    pub(crate) input: Arc<Input>,
    /// When the waiter reaped the child, in boot clock ticks; 0 while it lives.
    pub(crate) reaped: Arc<AtomicU64>,
}

/// Opens a PTY, starts `spec`'s program in it in its own session, and starts the reader (which
/// drains the PTY into the output at full speed), the waiter (which reaps the child and records
/// how it ended) and the input writer.
pub(crate) fn start(spec: &PaneSpec) -> Result<Started> {
    let cwd = resolve_cwd(&spec.cwd)?;
    let size = PtySize { rows: spec.rows, cols: spec.cols, pixel_width: 0, pixel_height: 0 };
    let pair = crate::inherit::open_pty(size)?;
    let mut cmd = command_builder(spec, &cwd);
    let sandbox = confine(&mut cmd, spec, &cwd)?;
    let child = pair.slave.spawn_command(cmd).map_err(|e| {
        sandbox::forget(&spec.sandbox, &sandbox::tag(&spec.id));
        Error::new(ErrorKind::SpawnFailed, format!("cannot start {}: {e}", spec.program))
    })?;
    // Our copy of the slave must go, or the reader never sees end of file.
    drop(pair.slave);
    let pid = child.process_id().ok_or_else(|| Error::internal("the child has no pid"))?;
    let master_fd =
        pair.master.as_raw_fd().ok_or_else(|| spawn_err("the terminal has no descriptor"))?;
    let (reader, writer) = fd::terminal_ends(master_fd).map_err(spawn_err)?;
    let input = Arc::new(Input::start(&spec.id, writer, |run| {
        spawn_thread(format!("pane-input-{}", short_id(&spec.id)), run)
    })?);
    let output = Arc::new(Output::new(spec.scrollback, spec.rows, spec.cols));
    let reaped = Arc::new(AtomicU64::new(0));
    let (eof_tx, eof_rx) = crossbeam_channel::bounded::<()>(0);
    start_reader(&spec.id, reader, output.clone(), input.clone(), eof_tx)?;
    start_waiter(&spec.id, pid, child, output.clone(), eof_rx, reaped.clone())?;
    Ok(Started { cwd, pid, sandbox, master: pair.master, output, input, reaped })
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

fn command_builder(spec: &PaneSpec, cwd: &std::path::Path) -> CommandBuilder {
    let mut cmd = CommandBuilder::new(&spec.program);
    for arg in &spec.args {
        cmd.arg(arg);
    }
    cmd.cwd(cwd);
    for (key, value) in [
        ("TERM", "xterm-256color"),
        ("PAGER", "cat"),
        ("GIT_PAGER", "cat"),
        ("GIT_TERMINAL_PROMPT", "0"),
        ("FUGUE_PANE_ID", &spec.id[..]),
        ("FUGUE_SESSION_ID", &spec.session_id[..]),
        ("FUGUE_WINDOW_ID", &spec.window_id[..]),
    ] {
        cmd.env(key, value);
    }
    // An inherited size would lie about the pane's size.
    cmd.env_remove("COLUMNS");
    cmd.env_remove("LINES");
    for (key, value) in &spec.env {
        cmd.env(key, value);
    }
    cmd
}

/// Runs the pane's process through the sandbox launcher unless its policy is `off`, and withholds
/// secret-looking variables and those that lead to sockets outside (`sandbox::withheld`) that
/// neither `--pass-env` nor the call named. Returns the policy: the call's own whole one or the
/// server's, narrowed to the spec's roots when it has some.
fn confine(cmd: &mut CommandBuilder, spec: &PaneSpec, cwd: &Path) -> Result<Arc<Policy>> {
    let policy = spec.sandbox.clone();
    if policy.mode == Mode::Off {
        return Ok(policy);
    }
    let policy = match &spec.roots {
        Some(roots) => Arc::new(sandbox::for_roots(&policy, roots)),
        None if policy.git_due => Arc::new(sandbox::with_git_now(&policy)),
        None => policy,
    };
    sandbox::check_available(&policy, &spec.holders)?;
    let mut keep = spec.keep.clone();
    keep.extend(spec.roots.iter().flatten().cloned());
    let plan = sandbox::plan(&policy, &spec.holders, &keep, sandbox::tag(&spec.id), cwd)?;
    let argv = sandbox::launch::wrap(&plan, cmd.get_argv());
    *cmd.get_argv_mut() = argv;
    let pass = &policy.pass_env;
    let withheld: Vec<String> = cmd
        .iter_full_env_as_str()
        .map(|(key, _)| key)
        .filter(|key| sandbox::withheld(key) && !pass.iter().any(|p| p == key))
        .filter(|key| !spec.env.iter().any(|(k, _)| k == key))
        .map(str::to_string)
        .collect();
    for key in withheld {
        cmd.env_remove(key);
    }
    Ok(policy)
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
            match output.read_from(&mut reader, &mut buf) {
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
    crate::threads::spawn(&name, Some(THREAD_STACK), Box::new(run))
        .map_err(|e| Error::new(ErrorKind::SpawnFailed, format!("cannot start a thread: {e}")))
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
