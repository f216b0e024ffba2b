//! The processes of a sandboxed pane, once its launcher has made the namespaces and the mounts:
//!
//! - P, the launcher, the pane's process in fugue's eyes (in the host's pid namespace). It ignores
//!   the signals fugue and the terminal send to the session, serves the program (`lockdown::serve`)
//!   in a thread, waits for C, and ends the way G ended (C leaves that in a page P shares).
//! - C, pid 1 of a new pid namespace (none in the fallback): it mounts a fresh `/proc` that shows
//!   the pane's processes only (P keeps the host's, as its working directory), locks the tree
//!   down (`lockdown::lock_tree`: Landlock and the seccomp filter, whose listener P's thread takes
//!   from it), forks G, then reaps every orphan the namespace's processes leave until G ends, and
//!   ends with it. It dies with P (`PR_SET_PDEATHSIG`). When it dies the kernel kills everything
//!   left in the namespace: `setsid`, double forks, `chroot` and new namespaces change nothing.
//!   It keeps its capabilities, so G, which has none, can neither trace it nor take its
//!   descriptors.
//! - G, the program (pid 2): the terminal's foreground in a process group of its own, its
//!   capabilities dropped (`lockdown::drop_privileges`), its signals back to their defaults,
//!   then exec'd.
//!
//! Nothing on the way from the launcher's start to the program's exec, or from the program's end
//! to the launcher's, waits for another process to answer: the filter's listener is taken while G
//! starts, and C's end is the pane's end.

use super::launch_plan::Plan;
use super::lockdown::{self, Serving};
use super::spawn;
use super::teardown;
use super::template::Entered;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::process::ExitCode;

/// What the session's signals do to P: nothing (G gets them itself).
const IGNORED: [libc::c_int; 10] = [
    libc::SIGHUP,
    libc::SIGINT,
    libc::SIGQUIT,
    libc::SIGTERM,
    libc::SIGTSTP,
    libc::SIGTTIN,
    libc::SIGTTOU,
    libc::SIGPIPE,
    libc::SIGUSR1,
    libc::SIGUSR2,
];

/// Makes P deaf to the session's signals; called first, so that a close that comes at once finds
/// it so.
pub(crate) fn ignore_signals() {
    for sig in IGNORED {
        // SAFETY: setting a disposition to SIG_IGN installs no handler.
        unsafe { libc::signal(sig, libc::SIG_IGN) };
    }
}

/// Starts C (which starts G), serves the pane's filter while it waits for C, and returns how G
/// ended.
/// A launcher that entered a layout template hands its mount namespace to the template's holder
/// as it ends (`teardown`).
pub(crate) fn run(plan: &Plan, program: &[String], entered: Option<&Entered>) -> ExitCode {
    match start(plan, program) {
        Ok((c, ended, serving)) => {
            let status = wait_or_hang_up(c, serving);
            if let Some(entered) = entered {
                teardown::hand_over(&entered.holder, entered.sending);
            }
            mirror(ended.status().unwrap_or(status))
        }
        Err(why) => fail(&why),
    }
}

/// Everything up to C's start: the channel and the page C shares with P, the program's exec
/// prepared, C itself; then P looks at the pane's processes from the host's `/proc`
/// (`sockets::HOST_PROC`).
fn start(plan: &Plan, program: &[String]) -> Result<(libc::pid_t, StatusPage, Serving), String> {
    let (mine, theirs) = UnixStream::pair().map_err(|e| format!("socketpair: {e}"))?;
    lockdown::ask_for_credentials(&mine)?;
    let ended = StatusPage::new()?;
    // Opened before C covers `/proc` with the pane's own.
    let host_proc = open_dir(c"/proc")?;
    let exec = program_exec(plan, program)?;
    let close = [mine.as_raw_fd(), host_proc.as_raw_fd()];
    // SAFETY: getpid has no preconditions.
    let parent = pidfd_open(unsafe { libc::getpid() })?;
    let init = || init_main(plan, &parent, &theirs, &close, &exec, &ended);
    let c = spawn::init(plan.fallback, init)?;
    // SAFETY: fchdir takes an open directory descriptor.
    if unsafe { libc::fchdir(host_proc.as_raw_fd()) } != 0 {
        return Err(format!("cd /proc: {}", std::io::Error::last_os_error()));
    }
    Ok((c, ended, Serving::new(mine, plan)))
}

/// The program's exec, with the launcher's own test switches taken out of its environment and
/// `TMPDIR` set to the pane's temporary directory.
fn program_exec(plan: &Plan, program: &[String]) -> Result<spawn::Exec, String> {
    let remove = [super::landlock::PRETEND_ABSENT, super::net::PRETEND_NO_USERNS];
    let tmp = match (&plan.tmp, &plan.shared_tmp) {
        (Some(tmp), _) => Some(tmp.as_os_str().to_owned()),
        (None, Some(_)) => Some("/tmp".into()),
        (None, None) => None,
    };
    let set: Vec<(&str, std::ffi::OsString)> = tmp.map(|t| ("TMPDIR", t)).into_iter().collect();
    spawn::Exec::new(program, &remove, &set)
}

/// A page P shares with C, where C leaves G's wait status as G ends.
struct StatusPage(*mut libc::c_int);

impl StatusPage {
    /// The status is `i32::MIN` until C sets it: no wait status is.
    fn new() -> Result<StatusPage, String> {
        // SAFETY: an anonymous shared mapping of one page; no pointer is passed in.
        let page = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                4096,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if page == libc::MAP_FAILED {
            return Err(format!("mmap: {}", std::io::Error::last_os_error()));
        }
        let ended = StatusPage(page.cast());
        ended.set(libc::c_int::MIN);
        Ok(ended)
    }

    fn set(&self, status: libc::c_int) {
        // SAFETY: the page is mapped for the life of both processes and holds this one int.
        unsafe { self.0.write_volatile(status) };
    }

    /// G's wait status, when C saw G end (read once C has ended).
    fn status(&self) -> Option<libc::c_int> {
        // SAFETY: as in `set`.
        let status = unsafe { self.0.read_volatile() };
        (status != libc::c_int::MIN).then_some(status)
    }
}

/// C: dies with P, makes the pane's `/proc` and locks the tree down, starts G, then holds nothing
/// of the terminal's and reaps every orphan handed to it until G ends.
fn init_main(
    plan: &Plan,
    parent: &OwnedFd,
    channel: &UnixStream,
    close: &[libc::c_int],
    exec: &spawn::Exec,
    ended: &StatusPage,
) -> ! {
    // SAFETY: prctl and poll take no pointers but `pfd`, which outlives the call; the closed
    // descriptors are C's own copies.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
        // P may have died before the line above: its pidfd is then readable.
        let mut pfd = libc::pollfd { fd: parent.as_raw_fd(), events: libc::POLLIN, revents: 0 };
        if libc::poll(&raw mut pfd, 1, 0) != 0 {
            libc::_exit(0);
        }
        for fd in close {
            libc::close(*fd);
        }
    }
    let steps = || -> Result<OwnedFd, String> {
        if !plan.fallback {
            mount_proc()?;
        }
        lockdown::lock_tree(plan, channel)
    };
    let mut listener = Some(steps().unwrap_or_else(|why| unavailable(&why)));
    if plan.fallback {
        // Without capabilities of its own C could be traced by G: the listener goes before G.
        lockdown::taken(channel);
        listener = None;
    }
    block_sigchld();
    let listening = listener.as_ref().map_or(-1, AsRawFd::as_raw_fd);
    let g =
        spawn::program(&|| program_main(exec, listening)).unwrap_or_else(|why| unavailable(&why));
    // Taken by now, or soon. Until then G cannot reach it: it has no capabilities, and C has.
    lockdown::taken(channel);
    drop(listener);
    // SAFETY: closing C's own copies of the terminal and the channel.
    unsafe {
        for fd in [0, 1, 2, parent.as_raw_fd(), channel.as_raw_fd()] {
            libc::close(fd);
        }
    }
    reap_until(g, ended)
}

/// Blocks SIGCHLD (so none is lost between two waits, see `reap_until`) with its default
/// disposition; G unblocks it again.
fn block_sigchld() {
    // SAFETY: an all-zero sigset_t is valid; these calls only touch `set`.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&raw mut set);
        libc::sigaddset(&raw mut set, libc::SIGCHLD);
        libc::signal(libc::SIGCHLD, libc::SIG_DFL);
        libc::sigprocmask(libc::SIG_BLOCK, &raw const set, std::ptr::null_mut());
    }
}

/// Reaps every child that ends, waiting for SIGCHLD between two rounds, until G is reaped: then
/// leaves G's status for P and ends, which ends the pid namespace.
fn reap_until(g: libc::pid_t, ended: &StatusPage) -> ! {
    // SAFETY: an all-zero sigset_t and siginfo_t are valid; these calls only touch `set`, `info`
    // and `status`, which outlive them.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&raw mut set);
        libc::sigaddset(&raw mut set, libc::SIGCHLD);
        let mut info: libc::siginfo_t = std::mem::zeroed();
        loop {
            let mut status = 0;
            loop {
                let pid = libc::waitpid(-1, &raw mut status, libc::WNOHANG);
                if pid == g {
                    ended.set(status);
                    libc::_exit(0);
                }
                if pid <= 0 {
                    break;
                }
            }
            libc::sigwaitinfo(&raw const set, &raw mut info);
        }
    }
}

/// Waits for C to end (G ended), or for the terminal to hang up: fugue ended, however it ended,
/// and with it the pane. P ignores the hang-up signal, and G may have too; on the hang-up P ends,
/// which kills C by `PR_SET_PDEATHSIG`, and C's end G (by the same, in the fallback) and the
/// namespace. Meanwhile it serves the pane's filter (`serving`), in the same poll, so P starts no
/// thread for either.
fn wait_or_hang_up(c: libc::pid_t, mut serving: Serving) -> libc::c_int {
    let Ok(pidfd) = pidfd_open(c) else { return wait(c) };
    let mut terminal = 0;
    loop {
        // No events asked of the terminal: poll still says when it hangs up, and only then.
        let mut fds = [
            libc::pollfd { fd: pidfd.as_raw_fd(), events: libc::POLLIN, revents: 0 },
            libc::pollfd { fd: terminal, events: 0, revents: 0 },
            libc::pollfd { fd: serving.fd(), events: libc::POLLIN, revents: 0 },
        ];
        // SAFETY: poll writes only to `fds`, which outlives the call.
        if unsafe { libc::poll(fds.as_mut_ptr(), 3, -1) } < 0 {
            if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return wait(c);
        }
        if fds[0].revents != 0 {
            return wait(c);
        }
        if fds[1].revents & (libc::POLLHUP | libc::POLLERR) != 0 {
            // SAFETY: _exit ends the process at once; nothing of P's needs flushing.
            unsafe { libc::_exit(128 + libc::SIGHUP) };
        }
        // No terminal (a probe's stdin is /dev/null, or none): nothing to watch but C.
        if fds[1].revents & libc::POLLNVAL != 0 {
            terminal = -1;
        }
        if fds[2].revents != 0 {
            serving = serving.step(fds[2].revents);
        }
    }
}

/// G's steps before the exec (see the module's comment); any failure ends G with 125, saying why.
/// G shares C's memory until the exec (`spawn::program`): it closes its copy of the filter's
/// listener (`listening`, -1 for none) and runs only system calls on the way.
fn program_main(exec: &spawn::Exec, listening: libc::c_int) -> ! {
    let steps = || -> Result<(), String> {
        // SAFETY: prctl takes no pointers; the descriptor closed is G's own copy.
        unsafe {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
            if listening >= 0 {
                libc::close(listening);
            }
        }
        take_the_terminal();
        lockdown::drop_privileges()?;
        default_signals();
        Ok(())
    };
    if let Err(why) = steps() {
        unavailable(&why);
    }
    let e = exec.exec();
    eprintln!("fugue: cannot run {}: {e}", exec.name());
    // SAFETY: _exit ends the process at once, as a forked child should.
    unsafe { libc::_exit(127) }
}

/// Says why the sandbox cannot be made, and ends this forked process with the launcher's status.
fn unavailable(why: &str) -> ! {
    eprintln!("fugue: sandbox unavailable: {why}");
    // SAFETY: _exit ends the process at once, as a forked child should.
    unsafe { libc::_exit(super::net::UNAVAILABLE.into()) }
}

/// Puts G in a process group of its own, the terminal's foreground (P and C stay out of it, so a
/// look at the foreground sees the program alone). Nothing to do without a terminal.
fn take_the_terminal() {
    // SAFETY: these calls take no pointers; SIGTTOU is still ignored (from P), so tcsetpgrp from
    // what is now a background group is not stopped.
    unsafe {
        libc::setpgid(0, 0);
        if libc::isatty(0) == 1 {
            libc::tcsetpgrp(0, libc::getpgrp());
        }
    }
}

/// A fresh `/proc` of the pane's pid namespace over the tree's (the launcher's working directory
/// keeps the host's).
fn mount_proc() -> Result<(), String> {
    let (source, target) = (c"proc", c"/proc");
    let flags = libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC;
    // SAFETY: every pointer is a valid C string or null.
    let r = unsafe {
        libc::mount(source.as_ptr(), target.as_ptr(), source.as_ptr(), flags, std::ptr::null())
    };
    if r != 0 {
        return Err(format!("mount /proc: {}", std::io::Error::last_os_error()));
    }
    Ok(())
}

/// Every signal back to its default disposition and unblocked, as a program expects at start.
fn default_signals() {
    // SAFETY: SIG_DFL installs no handler; an all-zero sigset_t is valid and emptied before use.
    unsafe {
        for sig in 1..libc::SIGRTMIN() {
            if sig != libc::SIGKILL && sig != libc::SIGSTOP {
                libc::signal(sig, libc::SIG_DFL);
            }
        }
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&raw mut set);
        libc::sigprocmask(libc::SIG_SETMASK, &raw const set, std::ptr::null_mut());
    }
}

/// Waits for our child `pid` to end; its wait status.
fn wait(pid: libc::pid_t) -> libc::c_int {
    let mut status = 0;
    loop {
        // SAFETY: waitpid writes only to `status`, which outlives the call.
        let r = unsafe { libc::waitpid(pid, &raw mut status, 0) };
        if r == pid {
            return status;
        }
        if r < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            // Not ours any more: end as a killed program would.
            return libc::SIGKILL;
        }
    }
}

/// Ends P as G ended: its exit code, or the same signal (without a core dump).
fn mirror(status: libc::c_int) -> ExitCode {
    if libc::WIFEXITED(status) {
        return ExitCode::from(u8::try_from(libc::WEXITSTATUS(status)).unwrap_or(1));
    }
    let sig = libc::WTERMSIG(status);
    let no_core = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: setrlimit reads `no_core`, which outlives the call; the others take no pointers.
    unsafe {
        libc::setrlimit(libc::RLIMIT_CORE, &raw const no_core);
        libc::signal(sig, libc::SIG_DFL);
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&raw mut set);
        libc::sigaddset(&raw mut set, sig);
        libc::pthread_sigmask(libc::SIG_UNBLOCK, &raw const set, std::ptr::null_mut());
        libc::kill(libc::getpid(), sig);
    }
    ExitCode::from(128 + u8::try_from(sig).unwrap_or(0))
}

/// A directory opened `O_PATH`.
fn open_dir(path: &std::ffi::CStr) -> Result<OwnedFd, String> {
    let flags = libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC;
    // SAFETY: `path` is a valid C string; open returns a new descriptor or -1.
    let fd = unsafe { libc::open(path.as_ptr(), flags) };
    if fd < 0 {
        return Err(format!("{path:?}: {}", std::io::Error::last_os_error()));
    }
    // SAFETY: open returned a new descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// A descriptor that becomes readable when process `pid` ends.
fn pidfd_open(pid: libc::pid_t) -> Result<OwnedFd, String> {
    // SAFETY: pidfd_open takes no pointers and returns a new descriptor or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    let fd = libc::c_int::try_from(fd).unwrap_or(-1);
    if fd < 0 {
        return Err(format!("pidfd_open: {}", std::io::Error::last_os_error()));
    }
    // SAFETY: pidfd_open returned a new descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Says why the sandbox cannot be made, as the launcher's last words.
pub(crate) fn fail(why: &str) -> ExitCode {
    eprintln!("fugue: sandbox unavailable: {why}");
    ExitCode::from(super::net::UNAVAILABLE)
}
