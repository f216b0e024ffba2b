//! The processes of a sandboxed pane, once its launcher has made the namespaces and the mounts:
//!
//! - P, the launcher, the pane's process in fugue's eyes (in the host's pid namespace). It ignores
//!   the signals fugue and the terminal send to the session, serves the program (`lockdown::serve`)
//!   in a thread, waits for G, then kills C and ends the way G ended.
//! - C, pid 1 of a new pid namespace (none in the fallback): a tiny init that reaps the orphans
//!   the namespace's processes leave, never exits on its own, and dies with P (`PR_SET_PDEATHSIG`).
//!   When it dies the kernel kills everything left in the namespace: `setsid`, double forks,
//!   `chroot` and new namespaces change nothing.
//! - G, the program (pid 2): the terminal's foreground in a process group of its own, in a mount
//!   namespace of its own with a fresh `/proc` that shows the pane's processes only (P keeps the
//!   host's), its signals back to their defaults, locked down (`lockdown::apply`), then exec'd.

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

/// Starts P's threads, then C (unless `plan.fallback`) and G; waits for G and returns how it
/// ended.
pub(crate) fn run(plan: &Plan, program: &[String]) -> ExitCode {
    let (mine, theirs) = match UnixStream::pair() {
        Ok(pair) => pair,
        Err(e) => return fail(&format!("socketpair: {e}")),
    };
    if let Err(why) = lockdown::ask_for_credentials(&mine) {
        return fail(&why);
    }
    let serving = mine.as_raw_fd();
    // The threads first: once P has unshared a pid namespace the kernel lets it make none. (glibc's
    // fork keeps malloc usable in the children; the threads hold no other lock while they wait.)
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
    let init = if plan.fallback {
        None
    } else {
        match fork_init(&[serving, theirs.as_raw_fd()]) {
            Ok(pid) => Some(pid),
            Err(why) => return fail(&why),
        }
    };
    // SAFETY: the child only runs G's steps and execs (see the comment above on the threads).
    let g = unsafe { libc::fork() };
    if g == 0 {
        // SAFETY: G's copy of the launcher's end, which G must not hold.
        unsafe { libc::close(serving) };
        program_main(plan, &theirs, program);
    }
    drop(theirs);
    if g < 0 {
        end_init(init);
        return fail(&format!("fork: {}", std::io::Error::last_os_error()));
    }
    let status = wait_or_hang_up(g);
    end_init(init);
    mirror(status)
}

/// Forks C; `close` are descriptors C must not hold.
fn fork_init(close: &[libc::c_int]) -> Result<libc::pid_t, String> {
    // SAFETY: getpid has no preconditions.
    let parent = pidfd_open(unsafe { libc::getpid() })?;
    // SAFETY: C runs no code that takes a lock before it waits forever.
    let pid = unsafe { libc::fork() };
    match pid {
        0 => init_main(&parent, close),
        p if p < 0 => Err(format!("fork: {}", std::io::Error::last_os_error())),
        p => Ok(p),
    }
}

/// C: dies with P, holds nothing of the terminal's, and reaps every orphan handed to it.
fn init_main(parent: &OwnedFd, close: &[libc::c_int]) -> ! {
    // SAFETY: prctl and poll take no pointers but `pfd`, which outlives the call; the closed
    // descriptors are C's own copies.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
        // P may have died before the line above: its pidfd is then readable.
        let mut pfd = libc::pollfd { fd: parent.as_raw_fd(), events: libc::POLLIN, revents: 0 };
        if libc::poll(&raw mut pfd, 1, 0) != 0 {
            libc::_exit(0);
        }
        for fd in close.iter().copied().chain([0, 1, 2, parent.as_raw_fd()]) {
            libc::close(fd);
        }
    }
    reap_forever()
}

/// Waits for SIGCHLD (blocked, so none is lost between two waits) and reaps every child that
/// ended, forever.
fn reap_forever() -> ! {
    // SAFETY: an all-zero sigset_t is valid; these calls only touch `set` and `info`, and
    // `status`, which outlive them.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&raw mut set);
        libc::sigaddset(&raw mut set, libc::SIGCHLD);
        libc::signal(libc::SIGCHLD, libc::SIG_DFL);
        libc::sigprocmask(libc::SIG_BLOCK, &raw const set, std::ptr::null_mut());
        let mut info: libc::siginfo_t = std::mem::zeroed();
        loop {
            let mut status = 0;
            while libc::waitpid(-1, &raw mut status, libc::WNOHANG) > 0 {}
            libc::sigwaitinfo(&raw const set, &raw mut info);
        }
    }
}

/// Waits for G to end, or for the terminal to hang up: fugue ended, however it ended, and with it
/// the pane. P ignores the hang-up signal, and G may have too; on the hang-up P ends, which kills
/// C (and G in the fallback) by `PR_SET_PDEATHSIG`, and C's end the namespace. One poll in P's
/// own thread, so P starts no thread for it.
fn wait_or_hang_up(g: libc::pid_t) -> libc::c_int {
    let Ok(pidfd) = pidfd_open(g) else { return wait(g) };
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
            return wait(g);
        }
        if fds[0].revents != 0 {
            return wait(g);
        }
        if fds[1].revents & (libc::POLLHUP | libc::POLLERR) != 0 {
            // SAFETY: _exit ends the process at once; nothing of P's needs flushing.
            unsafe { libc::_exit(128 + libc::SIGHUP) };
        }
        // No terminal (a probe's stdin is /dev/null, or none): nothing to watch but G.
        if fds[1].revents & libc::POLLNVAL != 0 {
            fds[1].fd = -1;
        }
    }
}

/// Kills C, which takes the namespace with it, and reaps it (the kernel reaps the namespace's
/// processes before C's death is told, so nothing of the pane is left after this).
fn end_init(init: Option<libc::pid_t>) {
    if let Some(pid) = init {
        // SAFETY: C is our child, not yet reaped, so the pid is still C's.
        unsafe { libc::kill(pid, libc::SIGKILL) };
        wait(pid);
    }
}

/// G's steps before the exec (see the module's comment); any failure ends G with 125, saying why.
fn program_main(plan: &Plan, channel: &UnixStream, program: &[String]) -> ! {
    let steps = || -> Result<(), String> {
        // SAFETY: prctl takes no pointers.
        unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) };
        take_the_terminal();
        if !plan.fallback {
            super::net::unshare(libc::CLONE_NEWNS)?;
            mount_proc()?;
        }
        default_signals();
        lockdown::apply(plan, channel)
    };
    if let Err(why) = steps() {
        eprintln!("fugue: sandbox unavailable: {why}");
        // SAFETY: _exit ends the process at once, as a forked child should.
        unsafe { libc::_exit(super::net::UNAVAILABLE.into()) };
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
    // SAFETY: as above.
    unsafe { libc::_exit(127) }
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

/// A fresh `/proc` of G's pid namespace, in G's own mount namespace.
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
