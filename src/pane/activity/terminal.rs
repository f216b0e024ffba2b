//! The pane's terminal as the activity probe reads it: its foreground process group, its slave's
//! path, its mode (a password prompt's, or reads that end by themselves), and whether anything is
//! still on its way through it in either direction.

use crate::pane::Pane;
use std::fs;

/// The pane's terminal as the probe needs it, read under the master's lock.
pub(super) struct Terminal {
    /// The foreground process group.
    pub(super) group: i32,
    /// The slave's path, `/dev/pts/N`, as /proc/PID/fd links name it.
    pub(super) path: String,
    /// Canonical mode with echo off: what a password prompt sets.
    pub(super) secret_prompt: bool,
    /// A read of the terminal ends by itself: raw mode with `VMIN` 0 (`VTIME` is its timer).
    pub(super) timed_reads: bool,
    /// No input fugue sent is still on its way to the program, and no output is still on its way
    /// to fugue: a program found blocked on the terminal has nothing to wake it.
    pub(super) settled: bool,
}

impl Terminal {
    /// The terminal's foreground process group.
    pub(super) fn group(pane: &Pane) -> Option<i32> {
        let master = pane.master.lock();
        let fd = master.as_ref()?.as_raw_fd()?;
        // SAFETY: tcgetpgrp only reads the terminal's state; the fd lives while the lock is held.
        let group = unsafe { libc::tcgetpgrp(fd) };
        (group > 0).then_some(group)
    }

    /// The terminal of `pane`, or `None` when it has none or no foreground group.
    pub(super) fn of(pane: &Pane) -> Option<Terminal> {
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
        // The reader's read is asked after the terminal: output it took from there since is
        // either appended (seen by the waiter) or still held (`reading`).
        let settled = pane.input.pending() == 0
            && !readable(fd)
            && !input_unread(&path)
            && !pane.output().reading();
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
