//! The physical limit: a command run on a bare PTY and drained by one read loop, nothing else.
//!
//! This is what any terminal multiplexer must do at least: open a PTY, start the command as the
//! session leader on its slave side, and read the master until end of file. The time from the
//! start to the reaped exit, with every byte read, is the baseline fugue's ingestion is held to.

use crate::client::{R, thread_cpu};
use std::fs::File;
use std::io::Read;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Runs `/bin/sh -c command` on a fresh 24×80 PTY, reading with a 64 KiB buffer (as fugue does).
/// Returns the bytes read, the time from spawn to the reaped exit, and the CPU the read loop used.
pub fn drain(command: &str) -> R<(u64, Duration, Duration)> {
    let (master, slave) = open()?;
    let started = Instant::now();
    let mut cmd = Command::new("/bin/sh");
    cmd.arg("-c").arg(command);
    on_terminal(&mut cmd, &slave)?;
    let mut child = cmd.spawn().map_err(|e| format!("cannot start /bin/sh: {e}"))?;
    // The parent's copies of the slave must close, or the master never sees end of file.
    drop(cmd);
    drop(slave);
    let mut master = File::from(master);
    let mut buf = vec![0u8; 64 << 10];
    let mut total = 0u64;
    let cpu = thread_cpu();
    loop {
        match master.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => total += n as u64,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break, // EIO: the last slave holder is gone
        }
    }
    let cpu = thread_cpu() - cpu;
    child.wait().map_err(|e| e.to_string())?;
    Ok((total, started.elapsed(), cpu))
}

/// A fresh 24×80 PTY pair, both ends close-on-exec.
pub fn open() -> R<(OwnedFd, OwnedFd)> {
    let (mut master, mut slave) = (-1, -1);
    let size = libc::winsize { ws_row: 24, ws_col: 80, ws_xpixel: 0, ws_ypixel: 0 };
    // SAFETY: openpty writes the two descriptors; the name and termios pointers may be null.
    let r = unsafe {
        libc::openpty(&mut master, &mut slave, std::ptr::null_mut(), std::ptr::null(), &size)
    };
    if r != 0 {
        return Err(format!("openpty: {}", std::io::Error::last_os_error()));
    }
    // SAFETY: openpty succeeded, so both are open descriptors that nothing else owns.
    let (master, slave) = unsafe { (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) };
    // The child gets the slave as its stdio only, never these originals.
    for fd in [&master, &slave] {
        // SAFETY: fcntl on a descriptor we own.
        unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETFD, libc::FD_CLOEXEC) };
    }
    Ok((master, slave))
}

/// Gives `cmd` the PTY's slave side as stdin, stdout and stderr, and makes it the leader of a new
/// session whose controlling terminal that is, as a terminal starts a shell.
pub fn on_terminal(cmd: &mut Command, slave: &OwnedFd) -> R<()> {
    for stdio in 0..3 {
        let fd = slave.try_clone().map_err(|e| e.to_string())?;
        match stdio {
            0 => cmd.stdin(Stdio::from(fd)),
            1 => cmd.stdout(Stdio::from(fd)),
            _ => cmd.stderr(Stdio::from(fd)),
        };
    }
    // SAFETY: setsid and ioctl are async-signal-safe; the closure touches no parent state.
    unsafe {
        cmd.pre_exec(|| {
            if libc::setsid() == -1 || libc::ioctl(0, libc::TIOCSCTTY, 0) == -1 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    Ok(())
}
