//! Live shells: fugue's shell integration in interactive panes.
//!
//! A pane that runs an interactive shell starts it with a small init script (one per shell family,
//! next to this file) that leaves the user's rc files to the shell as usual and adds a prompt hook
//! beside the user's own. After each command the hook writes one record to a FIFO in a private
//! 0700 directory — a per-pane nonce, the prompt's number, the id of the last `fugue_exec`, the
//! exit status and the working directory — and prints OSC 133/7 marks tagged with the prompt's
//! number and the nonce into the pane's output. The FIFO is the authority (nothing printed in the
//! pane can reach it); the marks only say where in the output a command's output begins and ends,
//! and count only when a FIFO record names them. The nonce reaches the shell in a 0600 file that
//! the init script reads and deletes, never in the environment.
//!
//! `Shell` owns the directory and a reader thread that turns records into what it knows of the shell (`Records`) and wakes
//! subscribers; waiters (`fugue_exec`, `fugue_send_input` with `wait_ms`, `fugue_run_pipeline`'s
//! steps) block on that channel. The shell stands above its pane (`stand_above`, `Live`): the
//! pane holds it only as an opaque `pane::Above`, which it releases when it closes.
//! The directory goes when the pane is closed, and with every other private directory when fugue
//! stops.

pub(crate) mod init;
pub(crate) mod live;
pub(crate) mod pool;
pub(crate) mod status;

use init::write_init;
pub(crate) use init::{Family, Launch, is_stub, posix, quote};

use crate::error::{Error, ErrorKind, Result};
use crate::ids::new_id;
use crate::mux::StandsAbove;
use crate::pane::output::Output;
use crate::pane::{Above, PaneSpec};
use crate::tempdir::{PrivateDir, TempDirs};
use crate::watch::Watch;
use crossbeam_channel::Receiver;
use parking_lot::Mutex;
use std::collections::VecDeque;
use std::fs::File;
use std::io::{Read, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// A record is far below PIPE_BUF, so the shell's one write of it is atomic; a longer one is junk.
const MAX_RECORD: u64 = 4096;

/// How many recent prompt records a shell keeps for waiters that look back.
const RECENT: usize = 64;

/// One prompt as the shell reported it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Prompt {
    /// The prompt's number, counted by the shell from 1.
    pub(crate) number: u64,
    /// The id of the last `fugue_exec` the shell started (0: none yet).
    pub(crate) exec: u64,
    pub(crate) status: i32,
    pub(crate) cwd: String,
}

/// What fugue knows of the shell, from its records.
#[derive(Clone, Debug, Default)]
pub(crate) struct Records {
    /// Prompt records received; 0 while the shell is starting.
    pub(crate) prompts: u64,
    /// The latest prompts, oldest first.
    pub(crate) recent: VecDeque<Prompt>,
    /// A `fugue_exec` typed whose prompt has not come yet.
    pub(crate) pending: Option<Pending>,
}

/// A command fugue typed into the shell, until the prompt record that names it.
#[derive(Clone, Debug)]
pub(crate) struct Pending {
    pub(crate) id: u64,
    pub(crate) command: String,
    /// The directory it was sent to run in (its `cwd`), if any.
    dir: Option<String>,
    /// The output offset where its line was typed, once it is.
    pub(crate) typed: Option<u64>,
    /// Its begin mark was found in the output: it runs (`runs_command`).
    begun: bool,
}

impl Records {
    pub(crate) fn last(&self) -> Option<&Prompt> {
        self.recent.back()
    }

    /// Where the shell works now: the directory a pending exec was sent to, else where its last
    /// prompt was.
    pub(crate) fn cwd(&self) -> Option<String> {
        let sent = self.pending.as_ref().and_then(|p| p.dir.clone());
        sent.or_else(|| self.last().map(|p| p.cwd.clone()))
    }

    /// The prompts after the first `seen` ones.
    pub(crate) fn since(&self, seen: u64) -> impl Iterator<Item = &Prompt> {
        let newer = self.prompts.saturating_sub(seen) as usize;
        let skip = self.recent.len().saturating_sub(newer);
        self.recent.iter().skip(skip)
    }
}

/// A pane's shell integration. Dropping it (with the pane) stops it as `stop` does.
pub(crate) struct Shell {
    pub(crate) kind: Family,
    /// The shell's program, as it was started.
    program: String,
    /// What the reader thread shares: the nonce, the state and its watch.
    feed: Arc<Feed>,
    /// `None` once stopped.
    dir: Mutex<Option<PrivateDir>>,
    /// Our read and write end of the FIFO: the write end wakes the reader when the shell stops.
    fifo: File,
    next_exec: AtomicU64,
}

/// The records' side, owned with the reader thread: it holds no directory, so a shell that is
/// dropped without `stop` still ends its thread and removes its directory.
struct Feed {
    nonce: String,
    state: Mutex<Records>,
    watch: Watch,
}

impl Shell {
    /// Sets up the integration for `shell`, about to start in a pane with `env` (the pane's own
    /// variables, which win over fugue's environment). `None` when the shell is not one fugue can
    /// integrate with.
    pub(crate) fn prepare(
        shell: &str,
        env: &[(String, String)],
        temp_dirs: &Arc<TempDirs>,
    ) -> Result<Option<(Arc<Shell>, Launch)>> {
        let Some(kind) = Family::of(shell) else { return Ok(None) };
        let dir = PrivateDir::create_for_shell(temp_dirs)?;
        let nonce = new_id().replace('-', "");
        dir.write("nonce", &format!("{nonce}\n"))?;
        let launch = write_init(kind, &dir, env)?;
        let fifo = dir.fifo("r")?;
        let reader = fifo.try_clone()?;
        let records = Arc::new(Feed {
            nonce,
            state: Mutex::new(Records::default()),
            watch: Watch::default(),
        });
        let shell = Arc::new(Shell {
            kind,
            program: shell.to_string(),
            feed: records.clone(),
            dir: Mutex::new(Some(dir)),
            fifo,
            next_exec: AtomicU64::new(1),
        });
        let for_reader = records;
        crate::threads::spawn(
            "shell-records",
            Some(64 << 10),
            Box::new(move || for_reader.read_records(reader)),
        )
        .map_err(|e| Error::new(ErrorKind::SpawnFailed, format!("cannot start a thread: {e}")))?;
        Ok(Some((shell, launch)))
    }

    /// The private directory, while the shell runs (a sandboxed pane keeps it reachable).
    pub(crate) fn dir(&self) -> Option<std::path::PathBuf> {
        self.dir.lock().as_ref().map(|d| d.path.clone())
    }

    /// Ends the reader thread and removes the directory; the pane is closing.
    pub(crate) fn stop(&self) {
        if self.dir.lock().take().is_some() {
            let mut fifo = &self.fifo;
            let _ = fifo.write_all(b"q\0");
        }
        self.feed.watch.notify();
    }

    /// A channel that receives a token after every record. Subscribe before looking at `state`.
    pub(crate) fn subscribe(&self) -> Receiver<()> {
        self.feed.watch.subscribe()
    }

    /// Reads `f` out of the state under its lock.
    pub(crate) fn with<T>(&self, f: impl FnOnce(&Records) -> T) -> T {
        f(&self.feed.state.lock())
    }

    /// Writes `command` for the shell to read and returns its id and the line to type; `sent_to`
    /// is the directory it was sent to run in, if any.
    pub(crate) fn prepare_exec(
        &self,
        command: &str,
        sent_to: Option<String>,
    ) -> Result<(u64, String)> {
        let id = self.next_exec.fetch_add(1, Ordering::SeqCst);
        let dir = self.dir.lock();
        let dir =
            dir.as_ref().ok_or_else(|| Error::new(ErrorKind::PaneClosed, "the pane is closing"))?;
        dir.write(&format!("c{id}"), command)?;
        let mut state = self.feed.state.lock();
        state.pending = Some(Pending {
            id,
            command: command.to_string(),
            dir: sent_to,
            typed: None,
            begun: false,
        });
        Ok((id, self.kind.stub(id)))
    }

    /// Exec `id`'s line was typed at output offset `at`.
    fn typed(&self, id: u64, at: u64) {
        let mut state = self.feed.state.lock();
        if let Some(pending) = state.pending.as_mut().filter(|p| p.id == id) {
            pending.typed = Some(at);
        }
    }

    /// Removes the command file of exec `id`, once the shell has read it or never will.
    pub(crate) fn forget_exec(&self, id: u64) {
        if let Some(dir) = self.dir.lock().as_ref() {
            let _ = std::fs::remove_file(dir.path.join(format!("c{id}")));
        }
    }

    /// The mark the shell prints where exec `id`'s output begins.
    pub(crate) fn begin_mark(&self, id: u64) -> String {
        format!("\x1b]133;C;fugue=x{id}.{}\x07", self.feed.nonce)
    }

    /// The mark the shell prints where a command's output ends, before prompt `prompt`.
    pub(crate) fn end_mark(&self, prompt: &Prompt) -> String {
        format!("\x1b]133;D;{};fugue={}.{}\x07", prompt.status, prompt.number, self.feed.nonce)
    }
}

impl Drop for Shell {
    fn drop(&mut self) {
        self.stop();
    }
}

impl Above for Shell {
    fn typed_line(&self, line: &str) -> bool {
        is_stub(line)
    }

    fn release(&self) {
        self.stop();
    }

    /// A `fugue_exec` (or a step) whose output began (its begin mark is in the output) and whose
    /// record has not come runs in the shell. Under the state's lock the reader is not halfway
    /// through a record, so a record the shell wrote is either applied or still in the FIFO: a
    /// shell back at its prompt, whose record is on its way, is never taken for its command.
    fn runs_command(&self, output: &Output) -> bool {
        let pending = {
            let state = self.feed.state.lock();
            let pending = state.pending.as_ref().and_then(|p| Some((p.id, p.typed?, p.begun)));
            pending.filter(|_| !readable(&self.fifo))
        };
        let Some((id, typed, begun)) = pending else { return false };
        if begun {
            return true;
        }
        let mark = self.begin_mark(id);
        let (bytes, _) = output.with(|s| s.ring.copy(typed, u64::MAX));
        if !bytes.windows(mark.len()).any(|w| w == mark.as_bytes()) {
            return false;
        }
        // Found once, it is not looked for again in a long output.
        if let Some(p) = self.feed.state.lock().pending.as_mut().filter(|p| p.id == id) {
            p.begun = true;
        }
        true
    }
}

/// Whether `file` (the FIFO) holds bytes no one has read.
fn readable(file: &File) -> bool {
    let fd = std::os::fd::AsRawFd::as_raw_fd(file);
    let mut poll = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
    // SAFETY: one valid pollfd, no timeout; the file is open for the call.
    unsafe { libc::poll(&raw mut poll, 1, 0) > 0 }
}

/// Blocks until `file` (the FIFO) has bytes to read; false when it cannot wait on it.
fn wait_readable(file: &File) -> bool {
    let fd = std::os::fd::AsRawFd::as_raw_fd(file);
    loop {
        let mut poll = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
        // SAFETY: one valid pollfd; the file is open for the call.
        let ready = unsafe { libc::poll(&raw mut poll, 1, -1) };
        if ready > 0 {
            return true;
        }
        if ready < 0 && std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            return false;
        }
    }
}

/// Stands live shells above interactive panes, their private directories registered in the
/// runtime's `TempDirs`.
pub(crate) struct Shells(pub(crate) Arc<TempDirs>);

impl StandsAbove for Shells {
    /// A live shell prepared for the pane's own program, whose arguments and variables it adds to
    /// the spec; nothing when the program is not a shell fugue knows.
    fn stand_above(&self, spec: &mut PaneSpec) -> Result<()> {
        let Some((shell, launch)) = Shell::prepare(&spec.program, &spec.env, &self.0)? else {
            return Ok(());
        };
        spec.args.extend(launch.args);
        // After the pane's own variables: the init script restores ENV or ZDOTDIR from them.
        spec.env.extend(launch.env);
        // A sandboxed pane keeps the shell's private directory reachable.
        spec.keep.extend(shell.dir());
        spec.above = Some(shell);
        Ok(())
    }
}

impl Feed {
    /// The reader thread: records into state until fugue's own `q`, waking subscribers after
    /// each read that completed one.
    fn read_records(&self, mut fifo: File) {
        let mut partial = Vec::new();
        while wait_readable(&fifo) {
            match self.read_some(&mut fifo, &mut partial) {
                Some(true) => self.watch.notify(),
                Some(false) => {}
                None => return,
            }
        }
    }

    /// One read of the FIFO, and the records it completes applied, all under the state's lock
    /// (see `runs_command`): whether one was applied; None at fugue's `q` or the FIFO's end.
    /// `partial` holds the start of a record the next read completes.
    fn read_some(&self, fifo: &mut File, partial: &mut Vec<u8>) -> Option<bool> {
        let mut buf = [0u8; 4096];
        let mut state = self.state.lock();
        let read = fifo.read(&mut buf).ok().filter(|read| *read > 0)?;
        partial.extend_from_slice(&buf[..read]);
        let mut applied = false;
        while let Some(end) = partial.iter().position(|b| *b == 0) {
            let record: Vec<u8> = partial.drain(..=end).collect();
            if record.as_slice() == b"q\0" {
                return None;
            }
            if let Some(prompt) = parse_record(&record, &self.nonce) {
                apply(&mut state, prompt);
                applied = true;
            }
        }
        if partial.len() as u64 > MAX_RECORD {
            // No record is that long: junk, dropped.
            partial.clear();
        }
        Some(applied)
    }
}

/// A prompt record into the state: the pending exec it names has ended.
fn apply(state: &mut Records, prompt: Prompt) {
    if state.pending.as_ref().is_some_and(|p| p.id == prompt.exec) {
        state.pending = None;
    }
    state.prompts += 1;
    if state.recent.len() == RECENT {
        state.recent.pop_front();
    }
    state.recent.push_back(prompt);
}

/// `nonce P number exec status cwd\0`; anything else, or another nonce, is ignored.
fn parse_record(record: &[u8], nonce: &str) -> Option<Prompt> {
    let text = std::str::from_utf8(record.strip_suffix(b"\0")?).ok()?;
    let mut words = text.splitn(6, ' ');
    if words.next()? != nonce || words.next()? != "P" {
        return None;
    }
    Some(Prompt {
        number: words.next()?.parse().ok()?,
        exec: words.next()?.parse().ok()?,
        status: words.next()?.parse().ok()?,
        cwd: words.next()?.to_string(),
    })
}

/// The first line of `command`, at most 60 characters: how a busy shell names what it runs.
pub(crate) fn first_line(command: &str) -> &str {
    let line = command.lines().next().unwrap_or("");
    &line[..line.len().min(line.char_indices().nth(60).map_or(line.len(), |(i, _)| i))]
}

/// How a command typed through a hidden line shows in the pane: its first line, up to
/// `SHOWN_CHARS` characters, with ` …` when more was left out.
pub(crate) fn shown(command: &str) -> String {
    let command = command.trim_matches('\n');
    let line = command.lines().next().unwrap_or("");
    let cut = line.char_indices().nth(SHOWN_CHARS).map_or(line.len(), |(i, _)| i);
    let mut shown: String =
        line[..cut].chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
    if cut < line.len() || line.len() < command.len() {
        shown.push_str(" …");
    }
    shown
}

/// The longest command line a pane shows whole.
const SHOWN_CHARS: usize = 200;

/// The mark every shell's prompt ends with (OSC 133 B): once it is printed after the last
/// command's end mark, the prompt is drawn and what the terminal prints next is the echo of what
/// is typed.
pub(crate) const PROMPT_DRAWN: &str = "\x1b]133;B\x07";

/// How long a reported prompt is given to print `PROMPT_DRAWN` before a command is typed anyway (a
/// theme may have dropped the mark).
pub(crate) const PROMPT_DRAWN_WAIT: Duration = Duration::from_millis(300);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_parse_and_forgeries_are_ignored() {
        let rec = b"abc P 3 7 2 /tmp/a b\0";
        let p = parse_record(rec, "abc").unwrap();
        assert_eq!((p.number, p.exec, p.status, p.cwd.as_str()), (3, 7, 2, "/tmp/a b"));
        assert_eq!(parse_record(rec, "abd"), None, "another nonce");
        assert_eq!(parse_record(b"abc P 3 7 x /\0", "abc"), None);
        assert_eq!(parse_record(b"abc P 3 7 0 /", "abc"), None, "no terminator");
        assert_eq!(parse_record(b"q\0", "abc"), None);
    }

    #[test]
    fn a_command_shows_as_its_first_line() {
        assert_eq!(shown("make test"), "make test");
        assert_eq!(shown("cd /tmp\nmake"), "cd /tmp …");
        assert_eq!(shown("\nls\n"), "ls");
        assert_eq!(shown(&"x".repeat(300)), format!("{} …", "x".repeat(200)));
        assert_eq!(shown("a\tb\x1bc"), "a b c");
    }

    #[test]
    fn since_skips_what_was_seen() {
        let mut state = Records::default();
        for n in 1..=3 {
            state.prompts += 1;
            state.recent.push_back(Prompt { number: n, exec: 0, status: 0, cwd: "/".into() });
        }
        let numbers: Vec<u64> = state.since(1).map(|p| p.number).collect();
        assert_eq!(numbers, [2, 3]);
        assert_eq!(state.since(3).count(), 0);
    }

    #[test]
    fn every_placeholder_is_filled() {
        for shell in ["bash", "zsh", "fish", "dash", "ksh", "mksh"] {
            let (sh, launch) = Shell::prepare(shell, &[], &Arc::default()).unwrap().unwrap();
            let dir = sh.dir.lock().as_ref().unwrap().path.clone();
            for name in ["init.bash", "z/.zshenv", "init.fish", "init.sh"] {
                if let Ok(text) = std::fs::read_to_string(dir.join(name)) {
                    assert!(!text.contains("@DIR@") && !text.contains("@RESTORE"), "{name}");
                    assert!(!text.contains("@PS1"), "{name}");
                }
            }
            assert!(!launch.args.is_empty() || !launch.env.is_empty(), "{shell}");
            sh.stop();
            assert!(!dir.exists(), "{shell}: the directory goes with the shell");
        }
    }
}
