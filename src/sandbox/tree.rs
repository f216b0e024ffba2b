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
use super::lockdown;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
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

/// Starts P's thread, then C (which starts G); waits for C and returns how G ended.
pub(crate) fn run(plan: &Plan, program: &[String]) -> ExitCode {
    let (mine, theirs) = match UnixStream::pair() {
        Ok(pair) => pair,
        Err(e) => return fail(&format!("socketpair: {e}")),
    };
    if let Err(why) = lockdown::ask_for_credentials(&mine) {
        return fail(&why);
    }
    let serving = mine.as_raw_fd();
    // The thread first: once P has unshared a pid namespace the kernel lets it make none. (glibc's
    // fork keeps malloc usable in the children; the thread holds no other lock while it waits.)
    let served = plan.clone();
    let thread = std::thread::Builder::new()
        .name("sandbox-serve".into())
        .spawn(move || lockdown::serve(mine, &served));
    if let Err(e) = thread {
        return fail(&format!("cannot start a thread: {e}"));
    }
    if !plan.fallback
        && let Err(why) = super::net::unshare(libc::CLONE_NEWPID)
    {
        return fail(&why);
    }
    let ended = match StatusPage::new() {
        Ok(page) => page,
        Err(why) => return fail(&why),
    };
    // Opened before C covers `/proc` with the pane's own.
    let host_proc = match open_dir(c"/proc") {
        Ok(fd) => fd,
        Err(why) => return fail(&why),
    };
    let close = [serving, host_proc.as_raw_fd()];
    let c = match fork_init(plan, &theirs, &close, program, &ended) {
        Ok(pid) => pid,
        Err(why) => return fail(&why),
    };
    // The socket server looks at the pane's processes from here (`sockets::HOST_PROC`).
    // SAFETY: fchdir takes an open directory descriptor.
    if unsafe { libc::fchdir(host_proc.as_raw_fd()) } != 0 {
        return fail(&format!("cd /proc: {}", std::io::Error::last_os_error()));
    }
    drop(theirs);
    let status = wait_or_hang_up(c);
    mirror(ended.status().unwrap_or(status))
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

/// Forks C, which never returns; `close` are P's descriptors C must not hold.
fn fork_init(
    plan: &Plan,
    channel: &UnixStream,
    close: &[libc::c_int],
    program: &[String],
    ended: &StatusPage,
) -> Result<libc::pid_t, String> {
    // SAFETY: getpid has no preconditions.
    let parent = pidfd_open(unsafe { libc::getpid() })?;
    // SAFETY: C runs no code that takes a lock the thread may hold (see `run`).
    let pid = unsafe { libc::fork() };
    match pid {
        0 => init_main(plan, &parent, channel, close, program, ended),
        p if p < 0 => Err(format!("fork: {}", std::io::Error::last_os_error())),
        p => Ok(p),
    }
}

/// C: dies with P, makes the pane's `/proc` and locks the tree down, starts G, then holds nothing
/// of the terminal's and reaps every orphan handed to it until G ends.
fn init_main(
    plan: &Plan,
    parent: &OwnedFd,
    channel: &UnixStream,
    close: &[libc::c_int],
    program: &[String],
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
    // SAFETY: G runs only its own steps, then execs.
    let g = unsafe { libc::fork() };
    if g == 0 {
        drop(listener);
        program_main(plan, program);
    }
    if g < 0 {
        unavailable(&format!("fork: {}", std::io::Error::last_os_error()));
    }
    // Taken while G starts. Until then G cannot reach it: it has no capabilities, and C has.
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
/// namespace. One poll in P's own thread, so P starts no thread for it.
fn wait_or_hang_up(c: libc::pid_t) -> libc::c_int {
    let Ok(pidfd) = pidfd_open(c) else { return wait(c) };
    // No events asked of the terminal: poll still says when it hangs up, and only then.
    let mut fds = [
        libc::pollfd { fd: pidfd.as_raw_fd(), events: libc::POLLIN, revents: 0 },
        libc::pollfd { fd: 0, events: 0, revents: 0 },
    ];
    loop {
        // SAFETY: poll writes only to `fds`, which outlives the call.
        if unsafe { libc::poll(fds.as_mut_ptr(), 2, -1) } < 0 {
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
            fds[1].fd = -1;
        }
    }
}

/// G's steps before the exec (see the module's comment); any failure ends G with 125, saying why.
fn program_main(plan: &Plan, program: &[String]) -> ! {
    let steps = || -> Result<(), String> {
        // SAFETY: prctl takes no pointers.
        unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) };
        take_the_terminal();
        lockdown::drop_privileges()?;
        default_signals();
        Ok(())
    };
    if let Err(why) = steps() {
        unavailable(&why);
    }
    let mut cmd = std::process::Command::new(&program[0]);
    cmd.args(&program[1..]);
    cmd.env_remove(super::landlock::PRETEND_ABSENT);
    cmd.env_remove(super::net::PRETEND_NO_USERNS);
    match (&plan.tmp, &plan.shared_tmp) {
        (Some(tmp), _) => cmd.env("TMPDIR", tmp),
        (None, Some(_)) => cmd.env("TMPDIR", "/tmp"),
        (None, None) => &mut cmd,
    };
    let e = cmd.exec();
    eprintln!("fugue: cannot run {}: {e}", program[0]);
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
