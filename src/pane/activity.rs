//! What a pane is doing: working, or waiting for someone to type.
//!
//! A program "waits for the terminal" when every thread of the terminal's foreground process group
//! sleeps, at least one of them in a read of the pane's terminal (or a poll/select/epoll set that
//! holds it plus only benign descriptors), and none waits on anything else that could wake it: a
//! socket, a pipe read, another terminal, a child still working. A process of the group that works
//! but cannot print to the terminal is left out. The answer comes from one look at /proc per
//! question (`look`), in which a thread caught awake gets a few more looks milliseconds apart
//! before it counts as working; nothing looks in the background. A wait that nothing but a key
//! press can end (no timeout in the call, no thread on a timer, nothing typed still on its way) is
//! a question at once; any other only once the pane has been quiet for the quiet period. Waiters
//! apply that rule in `InputWatch`, which spaces its looks (at most twenty a second) and wants two
//! agreeing looks with no output between them. When in doubt the answer is "busy": a false
//! "input" stops real work, a missed one only costs a wait.

use super::Pane;
use crate::log;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::fs;
use std::io::ErrorKind;
use std::os::unix::fs::{FileExt, FileTypeExt};
use std::sync::{Arc, LazyLock};
use std::time::{Duration, Instant};

mod syscalls;

/// Two looks this far apart, with no output between them, must agree before a waiter says input
/// after a quiet period.
const CONFIRM_GAP: Duration = Duration::from_millis(150);
/// How long a program blocked on the terminal with no timeout must have printed nothing before the
/// first look that may answer at once: its question's last bytes are through fugue's reader.
const FAST_QUIET: Duration = Duration::from_millis(100);
/// The gap between the two agreeing looks that answer at once.
const FAST_GAP: Duration = Duration::from_millis(50);
/// After a look that said busy, the next one waits this long (so at most four looks a second,
/// plus the confirming ones, while a call waits on a quiet busy pane).
const RETRY_GAP: Duration = Duration::from_millis(250);
/// How many looks a thread caught awake gets, `AWAKE_GAP` apart, before it counts as working. A
/// program that waits for the terminal on a short timer is awake for a moment every cycle (fish
/// polls every 10 ms while another fish's universal-variable change is pending), and on a busy
/// machine that moment stretches while it waits for a CPU; a program that works stays awake.
const AWAKE_LOOKS: u32 = 6;
const AWAKE_GAP: Duration = Duration::from_millis(5);
/// How long one scan of every process's group serves the looks that follow it. Finding a group's
/// members means reading every process's stat line (the kernel keeps no list of a group), and a
/// status listing looks at each pane: 200 idle panes cost 200 scans, 0.8 s, before. Within a few
/// milliseconds one scan serves them all; two agreeing looks are 50 ms or more apart, so each
/// still sees the process table afresh.
const SCAN_REUSE: Duration = Duration::from_millis(5);
/// How long a status probe's verdict stands for a pane that printed nothing since: a status
/// listing (`fugue_list_sessions`, `fugue attach`'s view) asked again and again of many idle panes
/// looks at /proc for each at most this often. Waits (`InputWatch`) always look afresh.
const PROBE_REUSE: Duration = Duration::from_millis(250);
/// The last scan of every process's group, and when it was made.
static SCAN: Mutex<Option<Scan>> = Mutex::new(None);
type Scan = (Instant, Vec<(u32, i32)>);
/// The status probes' verdicts that stand, by pane id; those older than `PROBE_REUSE` go at each
/// probe, so it holds no more than the panes probed in that time.
static PROBES: LazyLock<Mutex<HashMap<String, Probe>>> = LazyLock::new(Mutex::default);
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

/// Busy or Input for a live pane right now: Input if its foreground is blocked on the terminal
/// with no timeout and printed nothing for `FAST_QUIET`, or waits for the terminal (where the
/// kernel cannot say for how long) and printed nothing for `quiet_period()`. Never Prompt: shell
/// integration knows when a shell sits at its prompt and says so itself.
pub(crate) fn probe(pane: &Pane) -> Activity {
    let quiet_for = pane.output().last_print().elapsed();
    if quiet_for < FAST_QUIET || !pane.is_running() {
        return Activity::Busy;
    }
    let end = pane.output().end();
    let mut probes = PROBES.lock();
    probes.retain(|_, probe| probe.at.elapsed() < PROBE_REUSE);
    if let Some(probe) = probes.get(&pane.id).filter(|p| p.end == end) {
        return probe.activity;
    }
    drop(probes);
    let activity = match look(pane) {
        Look::Asks(_) => Activity::Input,
        Look::Quiet(_) if quiet_for >= quiet_period() => Activity::Input,
        Look::Quiet(_) | Look::Busy => Activity::Busy,
    };
    let probe = Probe { at: Instant::now(), end, activity };
    PROBES.lock().insert(pane.id.clone(), probe);
    activity
}

/// A status probe's verdict of a pane, while it stands (`PROBE_REUSE`).
struct Probe {
    at: Instant,
    /// The pane's output end when it was made: a pane that printed since is looked at again.
    end: u64,
    activity: Activity,
}

/// What one look at /proc says about the pane's terminal foreground.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Look {
    /// It works, waits on something else, or input is on its way to it: no question.
    Busy,
    /// It waits for the terminal, but on a timer or where the kernel cannot say how (a shell at
    /// its own prompt, a password prompt /proc will not show): a question once it has been quiet
    /// for the quiet period. The name of the program that waits.
    Quiet(Option<String>),
    /// Blocked on the terminal with no timeout, nothing typed still unread: only a key press ends
    /// the wait. A question at once.
    Asks(Option<String>),
}

/// Whether the pane's shell, run with fugue's integration, is its terminal's foreground itself
/// (at its prompt, or in a builtin), not a job it started.
fn shell_in_front(pane: &Pane) -> bool {
    pane.above().is_some()
        && Terminal::group(pane).is_some_and(|group| u32::try_from(group) == Ok(pane.pid))
}

/// One look at /proc: does the pane's terminal foreground process group wait for the terminal and
/// nothing else, and for how long? Busy when in doubt.
pub(crate) fn look(pane: &Pane) -> Look {
    let Some(terminal) = Terminal::of(pane) else { return Look::Busy };
    let (verdict, asker) = group_wait(&terminal);
    // The bench counts these lines to check that nothing looks while nothing waits.
    log::debug(&format!("activity probe of pane {}: {verdict:?}", pane.id));
    let name = |pid: u32| {
        fs::read_to_string(format!("/proc/{pid}/comm")).ok().map(|c| c.trim_end().to_string())
    };
    match verdict {
        // A shell with fugue's integration at its own prompt (or in its builtin `read`): its
        // prompt record, not the kernel, says which.
        Wait::Terminal { .. }
            if pane.above().is_some() && u32::try_from(terminal.group) == Ok(pane.pid) =>
        {
            Look::Quiet(asker.and_then(name))
        }
        Wait::Terminal { timed: false } if terminal.settled => Look::Asks(asker.and_then(name)),
        Wait::Terminal { .. } => Look::Quiet(asker.and_then(name)),
        // /proc would not say what the threads wait in: a cooked terminal without echo is a
        // password prompt, anything else stays busy.
        Wait::Denied if terminal.secret_prompt => {
            Look::Quiet(u32::try_from(terminal.group).ok().and_then(name))
        }
        Wait::Denied | Wait::Busy | Wait::Neutral | Wait::Timer => Look::Busy,
    }
}

/// The rule for one waiting call: the waiter blocks on the pane's events with the deadline
/// `next_check`, and calls `check` on every wake. A program blocked on the terminal with no
/// timeout asks once it has printed nothing for `FAST_QUIET` and two looks `FAST_GAP` apart
/// agree; one the kernel cannot vouch for asks once it has been quiet for the quiet period and two
/// looks `CONFIRM_GAP` apart agree. Output between two looks voids the first.
pub(crate) struct InputWatch {
    pane: Arc<Pane>,
    quiet: Duration,
    /// The output end at the last check: a change means the pane printed.
    seen_end: u64,
    /// The earliest time of the next look at /proc.
    next_probe: Instant,
    /// The first of two agreeing looks, with no output since: whether it vouched for a question
    /// at once.
    first_yes: Option<Yes>,
    /// When input was last typed: it may still sit unread while the program's last print is long
    /// past, so the quiet period of a look that cannot vouch counts from then too.
    typed: Option<Instant>,
    /// The program the confirming looks found waiting.
    program: Option<String>,
}

/// What a look that found the program waiting said.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Yes {
    /// Blocked on the terminal with no timeout.
    AtOnce,
    /// Waiting for the terminal; a question only after the quiet period.
    AfterQuiet,
}

impl InputWatch {
    pub(crate) fn new(pane: &Arc<Pane>, quiet: Duration) -> Self {
        InputWatch {
            pane: pane.clone(),
            quiet,
            seen_end: pane.output().end(),
            next_probe: Instant::now(),
            first_yes: None,
            typed: None,
            program: None,
        }
    }

    /// Says that input was typed into the pane at `at`.
    pub(crate) fn typed_at(&mut self, at: Instant) {
        self.typed = Some(self.typed.map_or(at, |t| t.max(at)));
    }

    /// The name of the program found asking, once `check` said so.
    pub(crate) fn program(&self) -> Option<String> {
        self.program.clone()
    }

    /// When the waiter should wake next to call `check`; None when there is nothing to watch
    /// (the pane's process ended).
    pub(crate) fn next_check(&self) -> Option<Instant> {
        self.pane.is_running().then(|| self.due())
    }

    /// Where the quiet period of a look that cannot vouch counts from.
    fn quiet_from(&self) -> Instant {
        let last_print = self.pane.output().last_print();
        self.typed.map_or(last_print, |t| t.max(last_print))
    }

    /// The earliest moment of the next look. The first of two agreeing looks after a quiet period
    /// comes `CONFIRM_GAP` before it ends and the second as it ends, so such a question is answered
    /// at the end of the quiet period, not a gap after it.
    fn due(&self) -> Instant {
        let fast = self.pane.output().last_print() + FAST_QUIET;
        let slow = self.quiet_from() + self.quiet;
        let at = match self.first_yes {
            None => fast.min(self.quiet_from() + self.quiet.saturating_sub(CONFIRM_GAP)),
            Some(Yes::AtOnce) => fast,
            Some(Yes::AfterQuiet) => slow,
        };
        at.max(self.next_probe)
    }

    /// True once two looks with no output between them say the program asks: at once if the
    /// kernel vouches for it, else after the quiet period.
    pub(crate) fn check(&mut self) -> bool {
        self.saw_output();
        if !self.pane.is_running() || Instant::now() < self.due() {
            return false;
        }
        if Instant::now() < self.quiet_from() + self.quiet.saturating_sub(CONFIRM_GAP)
            && shell_in_front(&self.pane)
        {
            // Only its prompt record or the quiet period tells a shell's prompt from its `read`:
            // a look at /proc now could not answer, and would hold up the wait for the record.
            self.first_yes = None;
            self.next_probe = Instant::now() + RETRY_GAP;
            return false;
        }
        let look = look(&self.pane);
        let now = Instant::now();
        let (yes, program) = match look {
            Look::Asks(program) => (Some(Yes::AtOnce), program),
            Look::Quiet(program) => (Some(Yes::AfterQuiet), program),
            Look::Busy => (None, None),
        };
        // Every look spaces the next one, whatever follows.
        self.next_probe = now
            + match yes {
                Some(Yes::AtOnce) => FAST_GAP,
                Some(Yes::AfterQuiet) => CONFIRM_GAP,
                None => RETRY_GAP,
            };
        if self.saw_output() || yes.is_none() {
            self.first_yes = None;
            return false;
        }
        if yes == Some(Yes::AfterQuiet)
            && now < self.quiet_from() + self.quiet.saturating_sub(CONFIRM_GAP)
        {
            // Not quiet long enough for a look that cannot vouch; its timer may end in a wait
            // without one (vim's after 4 s), so look again as at a busy pane.
            self.first_yes = None;
            self.next_probe = now + RETRY_GAP;
            return false;
        }
        self.program = program;
        match (self.first_yes, yes) {
            (Some(Yes::AtOnce), Some(Yes::AtOnce)) => true,
            (Some(Yes::AfterQuiet), Some(_)) => now >= self.quiet_from() + self.quiet,
            (_, yes) => {
                self.first_yes = yes;
                false
            }
        }
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
    /// A read of the terminal ends by itself: raw mode with `VMIN` 0 (`VTIME` is its timer).
    timed_reads: bool,
    /// No input fugue sent is still on its way to the program, and no output is still on its way
    /// to fugue: a program found blocked on the terminal has nothing to wake it.
    settled: bool,
}

impl Terminal {
    /// The terminal's foreground process group.
    fn group(pane: &Pane) -> Option<i32> {
        let master = pane.master.lock();
        let fd = master.as_ref()?.as_raw_fd()?;
        // SAFETY: tcgetpgrp only reads the terminal's state; the fd lives while the lock is held.
        let group = unsafe { libc::tcgetpgrp(fd) };
        (group > 0).then_some(group)
    }

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
        let read = unsafe { libc::tcgetattr(fd, &raw mut termios) } == 0;
        let lflag = termios.c_lflag;
        let secret_prompt = read && lflag & libc::ICANON != 0 && lflag & libc::ECHO == 0;
        let timed_reads = !read || (lflag & libc::ICANON == 0 && termios.c_cc[libc::VMIN] == 0);
        let settled = pane.input.pending() == 0 && !readable(fd) && !input_unread(&path);
        Some(Terminal { group, path, secret_prompt, timed_reads, settled })
    }
}

/// Whether `fd` has something to read now. For a terminal, polling also delivers what the kernel
/// still holds in its buffers for it, and wakes a program waiting for it.
fn readable(fd: i32) -> bool {
    let mut poll = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
    // SAFETY: one valid pollfd, no timeout; the fd is open for the call.
    let ready = unsafe { libc::poll(&raw mut poll, 1, 0) };
    ready != 0
}

/// Whether input written to the terminal waits unread by the program (true when in doubt): polling
/// a descriptor of the slave side delivers any input still in the kernel's buffers first, so a
/// program it wakes is seen awake.
fn input_unread(path: &str) -> bool {
    use std::os::unix::fs::OpenOptionsExt;
    let slave = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOCTTY | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path);
    slave.map_or(true, |slave| readable(std::os::fd::AsRawFd::as_raw_fd(&slave)))
}

/// What one thread (or the whole group) waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Wait {
    /// Sleeps in a call that no input or outside event ends: a lock, a signal wait, a child.
    /// Neither proves nor disproves a question.
    Neutral,
    /// Sleeps on a timer (a sleep, a lock or signal wait with a timeout, a timerfd): neither
    /// proves nor disproves a question, but the program may wake by itself.
    Timer,
    /// Waits for the pane's terminal and nothing else that matters; `timed` when a timer may end
    /// the wait (its own, or another thread's) without a key press.
    Terminal { timed: bool },
    /// /proc refused to say (another user's or a setuid process).
    Denied,
    /// Runs, or waits for something other than the terminal.
    Busy,
}

impl Wait {
    /// Two threads' (or processes') verdicts as one: the worse (busy over denied over terminal
    /// over neutral), so a single thread waiting on a socket makes a forwarder busy; and a timer
    /// anywhere makes a wait for the terminal a timed one.
    fn and(self, other: Wait) -> Wait {
        match (self, other) {
            (Wait::Timer, Wait::Terminal { .. }) | (Wait::Terminal { .. }, Wait::Timer) => {
                Wait::Terminal { timed: true }
            }
            _ => self.max(other),
        }
    }
}

/// The foreground group's verdict: its processes' verdicts together (`Wait::and`). With it, a
/// process that waits for the terminal: the program that asks, if it does.
fn group_wait(terminal: &Terminal) -> (Wait, Option<u32>) {
    let members = group_members(terminal.group);
    if members.is_empty() {
        return (Wait::Busy, None);
    }
    let mut worst = Wait::Neutral;
    let mut asker = None;
    for pid in members {
        let wait = process_wait(pid, terminal);
        if matches!(wait, Wait::Terminal { .. }) {
            asker = asker.or(Some(pid));
        }
        worst = worst.and(wait);
        if worst == Wait::Busy {
            return (Wait::Busy, None);
        }
    }
    (worst, asker)
}

/// One process's verdict: its threads' together. A process that works but cannot print to the
/// terminal (no descriptor but its standard input on it) is a helper the program left running, not
/// part of what the pane shows, and counts as neutral: a shell without job control keeps its
/// background jobs in the foreground group, so `fish -c read` on a first run has fish's man-page
/// completion generator (python3, output to /dev/null) computing beside the question for minutes.
fn process_wait(pid: u32, terminal: &Terminal) -> Wait {
    let Ok(tasks) = fs::read_dir(format!("/proc/{pid}/task")) else { return Wait::Busy };
    let mut worst = Wait::Neutral;
    for tid in tasks.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok()) {
        worst = worst.and(thread_wait(pid, tid, terminal));
        if worst == Wait::Busy {
            break;
        }
    }
    if worst == Wait::Busy && !prints_to(pid, &terminal.path) {
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

/// The processes whose process group is `group`, from a scan of every process's group at most
/// `SCAN_REUSE` old.
fn group_members(group: i32) -> Vec<u32> {
    let mut scan = SCAN.lock();
    if scan.as_ref().is_none_or(|(at, _)| at.elapsed() >= SCAN_REUSE) {
        *scan = Some((Instant::now(), process_groups()));
    }
    let all = scan.as_ref().map_or(&[][..], |(_, all)| all.as_slice());
    all.iter().filter(|(_, g)| *g == group).map(|(pid, _)| *pid).collect()
}

/// Every process on the machine with its process group: one stat read each.
fn process_groups() -> Vec<(u32, i32)> {
    let Ok(dir) = fs::read_dir("/proc") else { return Vec::new() };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| Some((pid, crate::procfs::stat(pid)?.group)))
        .collect()
}

/// What thread `tid` of process `pid` waits for. A thread caught awake is looked at again,
/// `AWAKE_GAP` apart, and counts as working only if every one of `AWAKE_LOOKS` looks finds it
/// awake.
fn thread_wait(pid: u32, tid: u32, terminal: &Terminal) -> Wait {
    let mut last = Awake::Running(0);
    for look in 0..AWAKE_LOOKS {
        if look > 0 {
            std::thread::sleep(AWAKE_GAP);
        }
        match thread_look(pid, tid, terminal) {
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
fn thread_look(pid: u32, tid: u32, terminal: &Terminal) -> Result<Wait, Awake> {
    let task = format!("/proc/{pid}/task/{tid}");
    match crate::procfs::stat_at(&format!("{task}/stat")).map(|s| s.state) {
        // A thread that ended since the listing, or a zombie, waits for nothing.
        None | Some(b'Z' | b'X') => return Ok(Wait::Neutral),
        Some(b'S') => {}
        Some(state @ (b'R' | b'D')) => return Err(Awake::Running(state)),
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
    let proc = Proc { pid, tty: &terminal.path };
    let kind = syscalls::classify(call.nr);
    let wait = match kind {
        syscalls::Kind::Neutral => Wait::Neutral,
        // An epoll descriptor counts by its members, so both wait on the one descriptor `a0`.
        syscalls::Kind::Read | syscalls::Kind::Epoll => proc.set_wait(&[call.args[0]], 0),
        syscalls::Kind::Poll => proc.poll_wait(call.args[0], call.args[1]),
        syscalls::Kind::Select => proc.select_wait(&call.args),
        syscalls::Kind::Other => Wait::Busy,
    };
    // The set says what may end the wait; the call says whether a timer may end it too.
    let wait = match wait {
        Wait::Terminal { .. } if kind == syscalls::Kind::Read => {
            Wait::Terminal { timed: terminal.timed_reads }
        }
        Wait::Terminal { timed } => Wait::Terminal { timed: timed || !call.endless() },
        Wait::Neutral if !call.endless() => Wait::Timer,
        wait => wait,
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
    /// Ends the wait after a while: a timerfd.
    Timer,
    /// Wakes a program from inside itself: eventfd, signalfd, a pipe whose both ends
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
        let mut wait = Wait::Neutral;
        for &fd in fds {
            match self.fd_kind(fd) {
                Ok(FdKind::Terminal) => wait = wait.and(Wait::Terminal { timed: false }),
                Ok(FdKind::Timer) => wait = wait.and(Wait::Timer),
                Ok(FdKind::Internal) => {}
                Ok(FdKind::Epoll) if depth < 2 => {
                    let members = match self.epoll_members(fd) {
                        Ok(members) => members,
                        Err(wait) => return wait,
                    };
                    match self.set_wait(&members, depth + 1) {
                        inner @ (Wait::Terminal { .. } | Wait::Timer | Wait::Neutral) => {
                            wait = wait.and(inner);
                        }
                        busy => return busy,
                    }
                }
                Ok(FdKind::Epoll | FdKind::Other) => return Wait::Busy,
                Err(wait) => return wait,
            }
        }
        wait
    }

    fn fd_kind(&self, fd: u64) -> Result<FdKind, Wait> {
        let link = fs::read_link(format!("/proc/{}/fd/{fd}", self.pid))
            .map_err(|e| if denied(&e) { Wait::Denied } else { Wait::Busy })?;
        let link = link.to_string_lossy();
        Ok(if link == self.tty || link == "/dev/tty" {
            FdKind::Terminal
        } else if link == "anon_inode:[timerfd]" {
            FdKind::Timer
        } else if ["eventfd", "signalfd"].iter().any(|k| link == format!("anon_inode:[{k}]"))
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
        let endless = Wait::Terminal { timed: false };
        let timed = Wait::Terminal { timed: true };
        let waits = [Wait::Neutral, Wait::Timer, endless, timed, Wait::Denied, Wait::Busy];
        assert_eq!(waits.iter().fold(Wait::Neutral, |a, b| a.and(*b)), Wait::Busy);
        assert_eq!(Wait::Neutral.and(endless), endless);
        assert_eq!(Wait::Neutral.and(Wait::Timer), Wait::Timer);
        // A thread on a timer wakes the program by itself: the group's wait is timed, in either
        // order.
        assert_eq!(endless.and(timed), timed);
        assert_eq!(endless.and(Wait::Timer), timed);
        assert_eq!(Wait::Timer.and(endless), timed);
        assert_eq!(timed.and(Wait::Denied), Wait::Denied);
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
