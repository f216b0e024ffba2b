//! What a pane is doing: working, or waiting for someone to type.
//!
//! A program "waits for the terminal" when every thread of the terminal's foreground process group
//! sleeps, at least one of them in a read of the pane's terminal (or a poll/select/epoll set that
//! holds it plus only benign descriptors), and none waits on anything else that could wake it: a
//! socket, a pipe read, another terminal, a child still working. A process of the group that works
//! but cannot print to the terminal is left out. The answer comes from one look at
//! /proc per question (`waits_for_terminal`), in which a thread caught awake gets a few more looks
//! milliseconds apart before it counts as working; nothing looks in the background. Waiters
//! combine it with the pane's quiet time in `InputWatch`, which spaces its looks (at most ten a
//! second) and wants two agreeing looks with no output between them. When in doubt the answer is
//! "busy": a false "input" stops real work, a missed one only costs a wait.

use super::Pane;
use crate::log;
use std::fs;
use std::io::ErrorKind;
use std::os::unix::fs::{FileExt, FileTypeExt};
use std::sync::Arc;
use std::time::{Duration, Instant};

mod syscalls;

/// Two looks this far apart, with no output between them, must agree before a waiter says input.
const CONFIRM_GAP: Duration = Duration::from_millis(150);
/// After a look that said busy, the next one waits this long (so at most four looks a second,
/// plus the confirming ones, while a call waits on a quiet busy pane).
const RETRY_GAP: Duration = Duration::from_millis(250);
/// How many looks a thread caught awake gets, `AWAKE_GAP` apart, before it counts as working. A
/// program that waits for the terminal on a short timer is awake for a moment every cycle (fish
/// polls every 10 ms while another fish's universal-variable change is pending), and on a busy
/// machine that moment stretches while it waits for a CPU; a program that works stays awake.
const AWAKE_LOOKS: u32 = 6;
const AWAKE_GAP: Duration = Duration::from_millis(5);
/// The most descriptors of one wait set that are decoded; a larger set is called busy.
const MAX_SET: u64 = 4096;

/// What a pane is doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Activity {
    /// Its shell waits at the prompt (only shell integration can say so).
    Prompt,
    /// A command or program works.
    Busy,
    /// The program in the foreground waits for the terminal and has printed nothing for a while.
    Input,
}

impl Activity {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Activity::Prompt => "prompt",
            Activity::Busy => "busy",
            Activity::Input => "input",
        }
    }
}

impl serde::Serialize for Activity {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// `FUGUE_INPUT_QUIET_MS`, default 1000, 100 to 600000 (read once, with the other settings): how
/// long a program must have printed nothing before its wait for the terminal counts as a question.
pub(crate) fn quiet_period() -> Duration {
    Duration::from_millis(crate::config::config().input_quiet_ms as u64)
}

/// Busy or Input for a live pane right now: Input only if it printed nothing for
/// `quiet_period()` and its foreground waits for the terminal. Never Prompt: shell integration
/// knows when a shell sits at its prompt and says so itself.
pub(crate) fn probe(pane: &Pane) -> Activity {
    let quiet = pane.output().last_print().elapsed() >= quiet_period();
    if quiet && pane.is_running() && waits_for_terminal(pane) {
        Activity::Input
    } else {
        Activity::Busy
    }
}

/// One look at /proc: does the pane's terminal foreground process group wait for the terminal and
/// nothing else? False when in doubt.
pub(crate) fn waits_for_terminal(pane: &Pane) -> bool {
    let Some(terminal) = Terminal::of(pane) else { return false };
    let verdict = group_wait(&terminal);
    // The bench counts these lines to check that nothing looks while nothing waits.
    log::debug(&format!("activity probe of pane {}: {verdict:?}", pane.id));
    match verdict {
        Wait::Terminal => true,
        // /proc would not say what the threads wait in: a cooked terminal without echo is a
        // password prompt, anything else stays busy.
        Wait::Denied => terminal.secret_prompt,
        Wait::Busy | Wait::Neutral => false,
    }
}

/// The quiet-then-probe rule for one waiting call: the waiter blocks on the pane's events with the
/// deadline `next_check`, and calls `check` on every wake.
pub(crate) struct InputWatch {
    pane: Arc<Pane>,
    quiet: Duration,
    /// The output end at the last check: a change means the pane printed.
    seen_end: u64,
    /// The earliest time of the next look at /proc.
    next_probe: Instant,
    /// When a look said "input", with no output since.
    first_yes: Option<Instant>,
}

impl InputWatch {
    pub(crate) fn new(pane: &Arc<Pane>, quiet: Duration) -> Self {
        InputWatch {
            pane: pane.clone(),
            quiet,
            seen_end: pane.output().end(),
            next_probe: Instant::now(),
            first_yes: None,
        }
    }

    /// When the waiter should wake next to call `check`; None when there is nothing to watch
    /// (the pane's process ended).
    pub(crate) fn next_check(&self) -> Option<Instant> {
        self.pane.is_running().then(|| self.due())
    }

    /// The earliest moment of the next look. The first of the two agreeing looks comes
    /// `CONFIRM_GAP` before the quiet period ends and the second as it ends, so a question is
    /// answered at the end of the quiet period, not a gap after it.
    fn due(&self) -> Instant {
        let last_print = self.pane.output().last_print();
        let quiet_for = match self.first_yes {
            None => self.quiet.saturating_sub(CONFIRM_GAP),
            Some(_) => self.quiet,
        };
        (last_print + quiet_for).max(self.next_probe)
    }

    /// True once the pane has printed nothing for `quiet` and two looks `CONFIRM_GAP` apart, with
    /// no output between them, both say it waits for the terminal.
    pub(crate) fn check(&mut self) -> bool {
        self.saw_output();
        if !self.pane.is_running() || Instant::now() < self.due() {
            return false;
        }
        let yes = waits_for_terminal(&self.pane);
        let now = Instant::now();
        // Every look spaces the next one, whatever follows: at most one per `CONFIRM_GAP`.
        self.next_probe = now + if yes { CONFIRM_GAP } else { RETRY_GAP };
        if self.saw_output() || !yes {
            self.first_yes = None;
            return false;
        }
        if self.first_yes.is_some() {
            return true;
        }
        self.first_yes = Some(now);
        false
    }

    /// Whether the pane printed since the last look; output voids a first "yes".
    fn saw_output(&mut self) -> bool {
        let end = self.pane.output().end();
        if end == self.seen_end {
            return false;
        }
        self.seen_end = end;
        self.first_yes = None;
        true
    }
}

/// The pane's terminal as the probe needs it, read under the master's lock.
struct Terminal {
    /// The foreground process group.
    group: i32,
    /// The slave's path, `/dev/pts/N`, as /proc/PID/fd links name it.
    path: String,
    /// Canonical mode with echo off: what a password prompt sets.
    secret_prompt: bool,
}

impl Terminal {
    fn of(pane: &Pane) -> Option<Terminal> {
        let master = pane.master.lock();
        let master = master.as_ref()?;
        let fd = master.as_raw_fd()?;
        let path = master.tty_name()?.to_str()?.to_string();
        // SAFETY: tcgetpgrp only reads the terminal's state; the fd lives while the lock is held.
        let group = unsafe { libc::tcgetpgrp(fd) };
        if group <= 0 {
            return None;
        }
        // SAFETY: an all-zero termios is valid, and tcgetattr only writes into it.
        let mut termios: libc::termios = unsafe { std::mem::zeroed() };
        // SAFETY: as above; the fd is valid while the lock is held.
        let secret_prompt = unsafe { libc::tcgetattr(fd, &raw mut termios) } == 0
            && termios.c_lflag & libc::ICANON != 0
            && termios.c_lflag & libc::ECHO == 0;
        Some(Terminal { group, path, secret_prompt })
    }
}

/// What one thread (or the whole group) waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Wait {
    /// Sleeps in a call that no input or outside event ends: a lock, a signal wait, a timer, a
    /// child. Neither proves nor disproves a question.
    Neutral,
    /// Waits for the pane's terminal and nothing else that matters.
    Terminal,
    /// /proc refused to say (another user's or a setuid process).
    Denied,
    /// Runs, or waits for something other than the terminal.
    Busy,
}

/// The foreground group's verdict: the worst of its processes (busy over denied over terminal over
/// neutral), so a single thread waiting on a socket makes a forwarder busy.
fn group_wait(terminal: &Terminal) -> Wait {
    let members = group_members(terminal.group);
    if members.is_empty() {
        return Wait::Busy;
    }
    let mut worst = Wait::Neutral;
    for pid in members {
        worst = worst.max(process_wait(pid, &terminal.path));
        if worst == Wait::Busy {
            return Wait::Busy;
        }
    }
    worst
}

/// One process's verdict: the worst of its threads. A process that works but cannot print to the
/// terminal (no descriptor but its standard input on it) is a helper the program left running, not
/// part of what the pane shows, and counts as neutral: a shell without job control keeps its
/// background jobs in the foreground group, so `fish -c read` on a first run has fish's man-page
/// completion generator (python3, output to /dev/null) computing beside the question for minutes.
fn process_wait(pid: u32, tty: &str) -> Wait {
    let Ok(tasks) = fs::read_dir(format!("/proc/{pid}/task")) else { return Wait::Busy };
    let mut worst = Wait::Neutral;
    for tid in tasks.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok()) {
        worst = worst.max(thread_wait(pid, tid, tty));
        if worst == Wait::Busy {
            break;
        }
    }
    if worst == Wait::Busy && !prints_to(pid, tty) {
        log::debug(&format!("activity: process {pid} works but cannot print to the terminal"));
        return Wait::Neutral;
    }
    worst
}

/// Whether process `pid` holds the terminal on any descriptor but its standard input (true when
/// /proc will not say).
fn prints_to(pid: u32, tty: &str) -> bool {
    let Ok(dir) = fs::read_dir(format!("/proc/{pid}/fd")) else { return true };
    dir.filter_map(Result::ok).filter(|e| e.file_name() != "0").any(|e| {
        fs::read_link(e.path())
            .is_ok_and(|link| link.as_os_str() == tty || link.as_os_str() == "/dev/tty")
    })
}

/// The processes whose process group is `group`.
fn group_members(group: i32) -> Vec<u32> {
    let Ok(dir) = fs::read_dir("/proc") else { return Vec::new() };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| stat_fields(&format!("/proc/{pid}/stat")).is_some_and(|(_, g)| g == group))
        .collect()
}

/// The state letter and process group from a stat file. The command name may hold spaces and
/// parentheses, so the fields are counted after the last `)`.
fn stat_fields(path: &str) -> Option<(u8, i32)> {
    let mut buf = [0u8; 1024];
    let n = fs::File::open(path).ok()?.read_at(&mut buf, 0).ok()?;
    let stat = &buf[..n];
    let rest = std::str::from_utf8(&stat[stat.iter().rposition(|b| *b == b')')? + 1..]).ok()?;
    let mut fields = rest.split_whitespace();
    let state = *fields.next()?.as_bytes().first()?;
    let group = fields.nth(1)?.parse().ok()?;
    Some((state, group))
}

/// What thread `tid` of process `pid` waits for. A thread caught awake is looked at again,
/// `AWAKE_GAP` apart, and counts as working only if every one of `AWAKE_LOOKS` looks finds it
/// awake.
fn thread_wait(pid: u32, tid: u32, tty: &str) -> Wait {
    let mut last = Awake::Running(0);
    for look in 0..AWAKE_LOOKS {
        if look > 0 {
            std::thread::sleep(AWAKE_GAP);
        }
        match thread_look(pid, tid, tty) {
            Ok(wait) => return wait,
            Err(awake) => last = awake,
        }
    }
    log::debug(&format!("activity: thread {pid}/{tid} awake in {AWAKE_LOOKS} looks, last {last}"));
    Wait::Busy
}

/// How a look found a thread awake, for the log.
enum Awake {
    /// Running or queued for a CPU (`R`), or in disk sleep (`D`): the state letter.
    Running(u8),
    /// Between the reads of one look: the call line first read.
    Moved(String),
}

impl std::fmt::Display for Awake {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Awake::Running(state) => write!(f, "state {}", char::from(*state)),
            Awake::Moved(line) => write!(f, "left its call {:?}", line.trim_end()),
        }
    }
}

/// One look at a thread: what it waits for, or `Err` when it is awake, so that one look cannot
/// tell.
fn thread_look(pid: u32, tid: u32, tty: &str) -> Result<Wait, Awake> {
    let task = format!("/proc/{pid}/task/{tid}");
    match stat_fields(&format!("{task}/stat")) {
        // A thread that ended since the listing, or a zombie, waits for nothing.
        None | Some((b'Z' | b'X', _)) => return Ok(Wait::Neutral),
        Some((b'S', _)) => {}
        Some((state @ (b'R' | b'D'), _)) => return Err(Awake::Running(state)),
        // Stopped or traced: in doubt.
        Some(_) => return Ok(Wait::Busy),
    }
    let line = match fs::read_to_string(format!("{task}/syscall")) {
        Ok(text) => text,
        Err(e) if denied(&e) => return Ok(Wait::Denied),
        Err(_) => return Ok(Wait::Neutral),
    };
    // `running`: it woke between the two reads.
    let call = syscalls::Call::parse(&line).ok_or_else(|| Awake::Moved(line.clone()))?;
    let proc = Proc { pid, tty };
    let wait = match syscalls::classify(call.nr) {
        syscalls::Kind::Neutral => Wait::Neutral,
        // An epoll descriptor counts by its members, so both wait on the one descriptor `a0`.
        syscalls::Kind::Read | syscalls::Kind::Epoll => proc.set_wait(&[call.args[0]], 0),
        syscalls::Kind::Poll => proc.poll_wait(call.args[0], call.args[1]),
        syscalls::Kind::Select => proc.select_wait(&call.args),
        syscalls::Kind::Other => Wait::Busy,
    };
    // The wait set was read from the thread's memory after its call line: a thread that left the
    // call meanwhile may have reused that memory, and what was decoded is not what it waited on.
    let still = fs::read_to_string(format!("{task}/syscall")).is_ok_and(|again| again == line);
    if still { Ok(wait) } else { Err(Awake::Moved(line)) }
}

fn denied(e: &std::io::Error) -> bool {
    matches!(e.kind(), ErrorKind::PermissionDenied) || e.raw_os_error() == Some(libc::EPERM)
}

/// A waiting process, for decoding what its wait sets hold.
struct Proc<'a> {
    pid: u32,
    tty: &'a str,
}

/// What one descriptor is, for a waiter.
#[derive(PartialEq, Eq)]
enum FdKind {
    /// The pane's terminal, or `/dev/tty` (a foreground process's controlling terminal is the
    /// pane's).
    Terminal,
    /// Wakes a program from inside itself: eventfd, signalfd, timerfd, a pipe whose both ends
    /// it holds (the self-pipe trick), or a named FIFO it opened for reading and writing, which
    /// never ends and needs no other writer (fish's universal-variable notifier, polled beside the
    /// terminal at its prompt and in its `read`). A pipe or FIFO only read is `Other`:
    /// `sleep 9 | cat`, `cat <fifo`.
    Internal,
    /// An epoll set inside the set.
    Epoll,
    /// A socket, another terminal, a file watch, anything else: the program waits on the world.
    Other,
}

impl Proc<'_> {
    /// The verdict for a thread blocked until one of `fds` is ready: the terminal with nothing
    /// from outside besides it. A set of the process's own wake-ups only is neutral, as a lock
    /// is (node's helper threads); an epoll set among them counts by its members (two levels down
    /// at most).
    fn set_wait(&self, fds: &[u64], depth: u32) -> Wait {
        let mut terminal = false;
        for &fd in fds {
            match self.fd_kind(fd) {
                Ok(FdKind::Terminal) => terminal = true,
                Ok(FdKind::Internal) => {}
                Ok(FdKind::Epoll) if depth < 2 => {
                    let members = match self.epoll_members(fd) {
                        Ok(members) => members,
                        Err(wait) => return wait,
                    };
                    match self.set_wait(&members, depth + 1) {
                        Wait::Terminal => terminal = true,
                        Wait::Neutral => {}
                        wait => return wait,
                    }
                }
                Ok(FdKind::Epoll | FdKind::Other) => return Wait::Busy,
                Err(wait) => return wait,
            }
        }
        if terminal { Wait::Terminal } else { Wait::Neutral }
    }

    fn fd_kind(&self, fd: u64) -> Result<FdKind, Wait> {
        let link = fs::read_link(format!("/proc/{}/fd/{fd}", self.pid))
            .map_err(|e| if denied(&e) { Wait::Denied } else { Wait::Busy })?;
        let link = link.to_string_lossy();
        Ok(if link == self.tty || link == "/dev/tty" {
            FdKind::Terminal
        } else if ["eventfd", "signalfd", "timerfd"]
            .iter()
            .any(|k| link == format!("anon_inode:[{k}]"))
            || (link.starts_with("pipe:") && self.holds_twice(&link))
            || (link.starts_with('/') && self.own_fifo(fd))
        {
            FdKind::Internal
        } else if link == "anon_inode:[eventpoll]" {
            FdKind::Epoll
        } else {
            FdKind::Other
        })
    }

    /// Whether two of the process's descriptors link to `target`: both ends of one pipe.
    fn holds_twice(&self, target: &str) -> bool {
        let Ok(dir) = fs::read_dir(format!("/proc/{}/fd", self.pid)) else { return false };
        let same = dir
            .filter_map(|e| fs::read_link(e.ok()?.path()).ok())
            .filter(|link| link.as_os_str() == target)
            .take(2)
            .count();
        same == 2
    }

    /// Whether descriptor `fd` is a named FIFO opened for reading and writing (`O_RDWR`).
    fn own_fifo(&self, fd: u64) -> bool {
        let is_fifo = fs::metadata(format!("/proc/{}/fd/{fd}", self.pid))
            .is_ok_and(|m| m.file_type().is_fifo());
        is_fifo
            && fs::read_to_string(format!("/proc/{}/fdinfo/{fd}", self.pid)).is_ok_and(|info| {
                info.lines()
                    .find_map(|l| l.strip_prefix("flags:"))
                    .and_then(|f| i32::from_str_radix(f.trim(), 8).ok())
                    .is_some_and(|flags| flags & libc::O_ACCMODE == libc::O_RDWR)
            })
    }

    /// poll/ppoll: `count` `struct pollfd { int fd; short events, revents; }` at `addr`.
    fn poll_wait(&self, addr: u64, count: u64) -> Wait {
        if count == 0 || count > MAX_SET {
            return Wait::Busy;
        }
        let bytes = match self.memory(addr, count as usize * 8) {
            Ok(bytes) => bytes,
            Err(wait) => return wait,
        };
        let fds: Vec<u64> = bytes
            .chunks_exact(8)
            .filter(|p| i16::from_ne_bytes([p[4], p[5]]) != 0)
            .filter_map(|p| u64::try_from(i32::from_ne_bytes([p[0], p[1], p[2], p[3]])).ok())
            .collect();
        self.set_wait(&fds, 0)
    }

    /// select/pselect6: `nfds`, then the read, write and except sets (null pointers are absent).
    fn select_wait(&self, args: &[u64; 6]) -> Wait {
        let nfds = args[0];
        if nfds == 0 || nfds > MAX_SET {
            return Wait::Busy;
        }
        let len = nfds.div_ceil(64) as usize * 8;
        let mut fds = Vec::new();
        for &addr in &args[1..4] {
            if addr == 0 {
                continue;
            }
            let bits = match self.memory(addr, len) {
                Ok(bits) => bits,
                Err(wait) => return wait,
            };
            fds.extend((0..nfds).filter(|fd| bits[(fd / 8) as usize] & (1 << (fd % 8)) != 0));
        }
        fds.sort_unstable();
        fds.dedup();
        self.set_wait(&fds, 0)
    }

    /// The members of the epoll set `epfd`: the `tfd:` lines of its fdinfo.
    fn epoll_members(&self, epfd: u64) -> Result<Vec<u64>, Wait> {
        let info = fs::read_to_string(format!("/proc/{}/fdinfo/{epfd}", self.pid))
            .map_err(|e| if denied(&e) { Wait::Denied } else { Wait::Busy })?;
        info.lines()
            .filter_map(|l| l.strip_prefix("tfd:")?.split_whitespace().next())
            .map(|fd| fd.parse::<u64>().map_err(|_| Wait::Busy))
            .collect()
    }

    /// `len` bytes of the process's memory at `addr` (needs ptrace-attach permission, which fugue
    /// has over its descendants).
    fn memory(&self, addr: u64, len: usize) -> Result<Vec<u8>, Wait> {
        let file = fs::File::open(format!("/proc/{}/mem", self.pid))
            .map_err(|e| if denied(&e) { Wait::Denied } else { Wait::Busy })?;
        let mut buf = vec![0u8; len];
        file.read_exact_at(&mut buf, addr).map_err(|_| Wait::Busy)?;
        Ok(buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_worst_wait_wins() {
        let waits = [Wait::Neutral, Wait::Terminal, Wait::Denied, Wait::Busy];
        assert_eq!(waits.iter().copied().max(), Some(Wait::Busy));
        assert_eq!(Wait::Neutral.max(Wait::Terminal), Wait::Terminal);
        assert_eq!(Wait::Terminal.max(Wait::Denied), Wait::Denied);
    }

    #[test]
    fn stat_fields_survive_odd_command_names() {
        let dir = std::env::temp_dir().join(format!("fugue-stat-{}", std::process::id()));
        fs::write(&dir, "123 (a) b (c)) S 1 77 77 0 -1").unwrap();
        assert_eq!(stat_fields(dir.to_str().unwrap()), Some((b'S', 77)));
        fs::remove_file(&dir).unwrap();
    }

    #[test]
    fn activity_serializes_as_a_word() {
        let words: Vec<String> = [Activity::Prompt, Activity::Busy, Activity::Input]
            .iter()
            .map(|a| serde_json::to_string(a).unwrap())
            .collect();
        assert_eq!(words, ["\"prompt\"", "\"busy\"", "\"input\""]);
    }
}
