//! What the terminal's foreground process group waits for, read from /proc: each process's
//! threads, the system call each one sleeps in (`syscalls.rs`), and the descriptors its wait set
//! holds (decoded from the process's memory, its poll/select arrays or an epoll set's fdinfo). The
//! verdict of a group is the worst of its threads': busy over denied over the terminal over a
//! timer over neutral.

use super::terminal::Terminal;
use super::{goruntime, syscalls};
use crate::log;
use crate::pane::seen::{Groups, ProcessTable};
use std::cell::RefCell;
use std::fs;
use std::io::ErrorKind;
use std::os::unix::fs::{FileExt, FileTypeExt};
use std::time::{Duration, Instant};

/// How many looks a thread caught awake gets, `AWAKE_GAP` apart, before it counts as working. A
/// program that waits for the terminal on a short timer is awake for a moment every cycle (fish
/// polls every 10 ms while another fish's universal-variable change is pending), and on a busy
/// machine that moment stretches while it waits for a CPU; a program that works stays awake.
const AWAKE_LOOKS: u32 = 6;
const AWAKE_GAP: Duration = Duration::from_millis(5);
/// How long one scan of every process's group serves the looks that follow it, counted from the
/// scan's end. Finding a group's members means reading every process's stat line (the kernel keeps
/// no list of a group); two agreeing looks are 50 ms or more apart, so each still sees the process
/// table afresh. A view of many panes takes one scan of its own (`one_scan`).
const SCAN_REUSE: Duration = Duration::from_millis(5);

/// The scan of the view a thread is making (`one_scan`).
#[derive(Default)]
enum ViewScan {
    /// It makes none: its looks share the timed scan (`ProcessTable`).
    #[default]
    Off,
    /// It makes one, and none of its looks has scanned yet.
    Due,
    /// The scan its first look made.
    Made(Groups),
}

thread_local! {
    static VIEW_SCAN: RefCell<ViewScan> = const { RefCell::new(ViewScan::Off) };
}
/// The most descriptors of one wait set that are decoded; a larger set is called busy.
const MAX_SET: u64 = 4096;

/// What one thread (or the whole group) waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Waiting {
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

impl Waiting {
    /// Two threads' (or processes') verdicts as one: the worse (busy over denied over terminal
    /// over neutral), so a single thread waiting on a socket makes a forwarder busy; and a timer
    /// anywhere makes a wait for the terminal a timed one.
    pub(super) fn and(self, other: Waiting) -> Waiting {
        match (self, other) {
            (Waiting::Timer, Waiting::Terminal { .. })
            | (Waiting::Terminal { .. }, Waiting::Timer) => Waiting::Terminal { timed: true },
            _ => self.max(other),
        }
    }
}

/// The foreground group's verdict: its processes' verdicts together (`Waiting::and`). With it, a
/// process that waits for the terminal: the program that asks, if it does.
pub(super) fn group_wait(terminal: &Terminal, table: &ProcessTable) -> (Waiting, Option<u32>) {
    let members = group_members(terminal.group, table);
    if members.is_empty() {
        return (Waiting::Busy, None);
    }
    let mut worst = Waiting::Neutral;
    let mut asker = None;
    for pid in members {
        let wait = process_wait(pid, terminal, table);
        if matches!(wait, Waiting::Terminal { .. }) {
            asker = asker.or(Some(pid));
        }
        worst = worst.and(wait);
        if worst == Waiting::Busy {
            return (Waiting::Busy, None);
        }
    }
    (worst, asker)
}

/// One process's verdict: its threads' together. A process that works but cannot print to the
/// terminal (no descriptor but its standard input on it) is a helper the program left running, not
/// part of what the pane shows, and counts as neutral: a shell without job control keeps its
/// background jobs in the foreground group, so `fish -c read` on a first run has fish's man-page
/// completion generator (python3, output to /dev/null) computing beside the question for minutes.
fn process_wait(pid: u32, terminal: &Terminal, table: &ProcessTable) -> Waiting {
    let Ok(tasks) = fs::read_dir(format!("/proc/{pid}/task")) else { return Waiting::Busy };
    let mut worst = Waiting::Neutral;
    for tid in tasks.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok()) {
        worst = worst.and(thread_wait(pid, tid, terminal, table));
        if worst == Waiting::Busy {
            break;
        }
    }
    if worst == Waiting::Busy && !prints_to(pid, &terminal.path) {
        log::debug(&format!("activity: process {pid} works but cannot print to the terminal"));
        return Waiting::Neutral;
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

/// Runs `make`, a view of many panes at one moment (a listing, `fugue attach`'s window), with one
/// scan of every process's group for all its looks, taken at the first. A scan costs tens of
/// microseconds a process, so once it took longer than `SCAN_REUSE` each pane's look made its own:
/// 200 panes running `sleep` took a second to list.
pub(crate) fn one_scan<R>(make: impl FnOnce() -> R) -> R {
    /// Puts back the view this thread was making before, however `make` ends.
    struct Restore(ViewScan);
    impl Drop for Restore {
        fn drop(&mut self) {
            VIEW_SCAN.with(|view| *view.borrow_mut() = std::mem::take(&mut self.0));
        }
    }
    let _restore = Restore(VIEW_SCAN.with(|view| view.replace(ViewScan::Due)));
    make()
}

/// The processes whose process group is `group`: from the scan of the view this thread makes, or
/// from `table`'s scan of every process's group, if it ended at most `SCAN_REUSE` ago.
fn group_members(group: i32, table: &ProcessTable) -> Vec<u32> {
    let in_group = |all: &Groups| -> Vec<u32> {
        all.iter().filter(|(_, g)| *g == group).map(|(pid, _)| *pid).collect()
    };
    let viewed = VIEW_SCAN.with(|view| {
        let mut view = view.borrow_mut();
        if matches!(*view, ViewScan::Due) {
            *view = ViewScan::Made(process_groups());
        }
        match &*view {
            ViewScan::Made(all) => Some(in_group(all)),
            ViewScan::Off | ViewScan::Due => None,
        }
    });
    if let Some(members) = viewed {
        return members;
    }
    let mut scan = table.groups.lock();
    if scan.as_ref().is_none_or(|(at, _)| at.elapsed() >= SCAN_REUSE) {
        let all = process_groups();
        *scan = Some((Instant::now(), all));
    }
    scan.as_ref().map(|(_, all)| in_group(all)).unwrap_or_default()
}

/// Every process on the machine with its process group: one stat read each.
fn process_groups() -> Groups {
    let Ok(dir) = fs::read_dir("/proc") else { return Vec::new() };
    let all: Groups = dir
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| Some((pid, crate::procfs::stat(pid)?.group)))
        .collect();
    // The tests count these lines: a view of many panes makes one.
    log::debug(&format!("activity: one scan of every process's group ({} processes)", all.len()));
    all
}

/// What thread `tid` of process `pid` waits for. A thread caught awake is looked at again,
/// `AWAKE_GAP` apart, and counts as working only if every one of `AWAKE_LOOKS` looks finds it
/// awake.
fn thread_wait(pid: u32, tid: u32, terminal: &Terminal, table: &ProcessTable) -> Waiting {
    let mut last = Awake::Running(0);
    for look in 0..AWAKE_LOOKS {
        if look > 0 {
            std::thread::sleep(AWAKE_GAP);
        }
        match thread_look(pid, tid, terminal, table) {
            Ok(wait) => return wait,
            Err(awake) => last = awake,
        }
    }
    log::debug(&format!("activity: thread {pid}/{tid} awake in {AWAKE_LOOKS} looks, last {last}"));
    Waiting::Busy
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
/// tell. `table` knows which programs are Go's.
fn thread_look(
    pid: u32,
    tid: u32,
    terminal: &Terminal,
    table: &ProcessTable,
) -> Result<Waiting, Awake> {
    let task = format!("/proc/{pid}/task/{tid}");
    match crate::procfs::stat_at(&format!("{task}/stat")).map(|s| s.state) {
        // A thread that ended since the listing, or a zombie, waits for nothing.
        None | Some(b'Z' | b'X') => return Ok(Waiting::Neutral),
        Some(b'S') => {}
        Some(state @ (b'R' | b'D')) => return Err(Awake::Running(state)),
        // Stopped or traced: in doubt.
        Some(_) => return Ok(Waiting::Busy),
    }
    let line = match fs::read_to_string(format!("{task}/syscall")) {
        Ok(text) => text,
        Err(e) if denied(&e) => return Ok(Waiting::Denied),
        Err(_) => return Ok(Waiting::Neutral),
    };
    // `running`: it woke between the two reads.
    let call = syscalls::Call::parse(&line).ok_or_else(|| Awake::Moved(line.clone()))?;
    let proc = Proc { pid, tty: &terminal.path };
    let kind = syscalls::classify(call.nr);
    let wait = match kind {
        syscalls::Kind::Neutral => Waiting::Neutral,
        // An epoll descriptor counts by its members, so both wait on the one descriptor `a0`.
        syscalls::Kind::Read | syscalls::Kind::Epoll => proc.set_wait(&[call.args[0]], 0),
        syscalls::Kind::Poll => proc.poll_wait(call.args[0], call.args[1]),
        syscalls::Kind::Select => proc.select_wait(&call.args),
        syscalls::Kind::Other => Waiting::Busy,
    };
    // The set says what may end the wait; the call says whether a timer may end it too.
    let wait = match wait {
        Waiting::Terminal { .. } if kind == syscalls::Kind::Read => {
            Waiting::Terminal { timed: terminal.timed_reads }
        }
        Waiting::Terminal { timed } => Waiting::Terminal { timed: timed || !call.endless() },
        Waiting::Neutral if runtimes_own_sleep(pid, tid, &call, table) => Waiting::Neutral,
        Waiting::Neutral if !call.endless() => Waiting::Timer,
        wait => wait,
    };
    // The wait set was read from the thread's memory after its call line: a thread that left the
    // call meanwhile may have reused that memory, and what was decoded is not what it waited on.
    let still = fs::read_to_string(format!("{task}/syscall")).is_ok_and(|again| again == line);
    if still { Ok(wait) } else { Err(Awake::Moved(line)) }
}

/// Whether thread `tid` of `pid`, asleep on a timer in `call` with nothing from outside in its
/// wait, sleeps as a runtime's own thread that wakes nobody but the runtime: the Go runtime's (see
/// `goruntime`), or one of fish's background threads, which run none of the user's code: its
/// thread pool's idle workers wait half a second for work and its fd monitor polls its own wake-up
/// descriptor a quarter of a second before they end (fish's `read` itself is blocked on the
/// terminal with no timeout, on its main thread).
fn runtimes_own_sleep(pid: u32, tid: u32, call: &syscalls::Call, table: &ProcessTable) -> bool {
    let fish_thread = || {
        tid != pid
            && fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim_end() == "fish")
    };
    (call.go_runtime_sleep() && goruntime::is_go(pid, &table.go)) || fish_thread()
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
    fn set_wait(&self, fds: &[u64], depth: u32) -> Waiting {
        let mut wait = Waiting::Neutral;
        for &fd in fds {
            match self.fd_kind(fd) {
                Ok(FdKind::Terminal) => wait = wait.and(Waiting::Terminal { timed: false }),
                Ok(FdKind::Timer) => wait = wait.and(Waiting::Timer),
                Ok(FdKind::Internal) => {}
                Ok(FdKind::Epoll) if depth < 2 => {
                    let members = match self.epoll_members(fd) {
                        Ok(members) => members,
                        Err(wait) => return wait,
                    };
                    match self.set_wait(&members, depth + 1) {
                        inner @ (Waiting::Terminal { .. } | Waiting::Timer | Waiting::Neutral) => {
                            wait = wait.and(inner);
                        }
                        busy => return busy,
                    }
                }
                Ok(FdKind::Epoll | FdKind::Other) => return Waiting::Busy,
                Err(wait) => return wait,
            }
        }
        wait
    }

    fn fd_kind(&self, fd: u64) -> Result<FdKind, Waiting> {
        let link = fs::read_link(format!("/proc/{}/fd/{fd}", self.pid))
            .map_err(|e| if denied(&e) { Waiting::Denied } else { Waiting::Busy })?;
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
    fn poll_wait(&self, addr: u64, count: u64) -> Waiting {
        if count == 0 || count > MAX_SET {
            return Waiting::Busy;
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
    fn select_wait(&self, args: &[u64; 6]) -> Waiting {
        let nfds = args[0];
        if nfds == 0 || nfds > MAX_SET {
            return Waiting::Busy;
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
    fn epoll_members(&self, epfd: u64) -> Result<Vec<u64>, Waiting> {
        let info = fs::read_to_string(format!("/proc/{}/fdinfo/{epfd}", self.pid))
            .map_err(|e| if denied(&e) { Waiting::Denied } else { Waiting::Busy })?;
        info.lines()
            .filter_map(|l| l.strip_prefix("tfd:")?.split_whitespace().next())
            .map(|fd| fd.parse::<u64>().map_err(|_| Waiting::Busy))
            .collect()
    }

    /// `len` bytes of the process's memory at `addr` (needs ptrace-attach permission, which fugue
    /// has over its descendants).
    fn memory(&self, addr: u64, len: usize) -> Result<Vec<u8>, Waiting> {
        let file = fs::File::open(format!("/proc/{}/mem", self.pid))
            .map_err(|e| if denied(&e) { Waiting::Denied } else { Waiting::Busy })?;
        let mut buf = vec![0u8; len];
        file.read_exact_at(&mut buf, addr).map_err(|_| Waiting::Busy)?;
        Ok(buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_worst_wait_wins() {
        let endless = Waiting::Terminal { timed: false };
        let timed = Waiting::Terminal { timed: true };
        let waits =
            [Waiting::Neutral, Waiting::Timer, endless, timed, Waiting::Denied, Waiting::Busy];
        assert_eq!(waits.iter().fold(Waiting::Neutral, |a, b| a.and(*b)), Waiting::Busy);
        assert_eq!(Waiting::Neutral.and(endless), endless);
        assert_eq!(Waiting::Neutral.and(Waiting::Timer), Waiting::Timer);
        // A thread on a timer wakes the program by itself: the group's wait is timed, in either
        // order.
        assert_eq!(endless.and(timed), timed);
        assert_eq!(endless.and(Waiting::Timer), timed);
        assert_eq!(Waiting::Timer.and(endless), timed);
        assert_eq!(timed.and(Waiting::Denied), Waiting::Denied);
    }
}
