//! The pane's end of its terminal as two non-blocking descriptors, and `poll` to wait on them.
//!
//! A blocking write to a terminal whose program does not read waits for room that may never come,
//! and Linux does not always wake it when the program's side closes: the writer thread stayed
//! stuck in the kernel after its pane was closed, holding the terminal. So the terminal is
//! non-blocking, and the reader and the input writer each wait in `poll` — the writer also on a
//! stop pipe that closing the pane hangs up. The descriptors are our own duplicates, closed on exec.

use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, RawFd};

/// Two duplicates of the terminal's master descriptor, for the reader and the writer, with the
/// terminal switched to non-blocking (the flag belongs to the shared open file, so it holds for
/// both).
pub(crate) fn terminal_ends(master: RawFd) -> io::Result<(File, File)> {
    let reader = duplicate(master)?;
    let writer = duplicate(master)?;
    // SAFETY: fcntl on a descriptor we own; it only reads and sets the file status flags.
    unsafe {
        let flags = libc::fcntl(master, libc::F_GETFL);
        if flags < 0 || libc::fcntl(master, libc::F_SETFL, flags | libc::O_NONBLOCK) < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok((reader, writer))
}

fn duplicate(fd: RawFd) -> io::Result<File> {
    // SAFETY: F_DUPFD_CLOEXEC returns a new descriptor that we then own alone.
    let new = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 0) };
    if new < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `new` is a fresh descriptor nobody else holds.
    Ok(unsafe { File::from_raw_fd(new) })
}

/// A pipe, both ends closed on exec: (read end, write end).
pub(crate) fn pipe() -> io::Result<(File, File)> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 writes two descriptors into the array, which we then own.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors are fresh and ours alone.
    Ok(unsafe { (File::from_raw_fd(fds[0]), File::from_raw_fd(fds[1])) })
}

/// Waits until one of `wants` (a file and the events wanted, `libc::POLLIN` / `POLLOUT`) is ready
/// or hung up; returns each one's returned events.
pub(crate) fn wait<const N: usize>(wants: [(&File, i16); N]) -> io::Result<[i16; N]> {
    let mut fds =
        wants.map(|(file, events)| libc::pollfd { fd: file.as_raw_fd(), events, revents: 0 });
    loop {
        // SAFETY: `fds` is a valid array of N pollfd structures for the length of the call.
        let r = unsafe { libc::poll(fds.as_mut_ptr(), N as libc::nfds_t, -1) };
        if r >= 0 {
            return Ok(fds.map(|fd| fd.revents));
        }
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn a_hung_up_pipe_wakes_a_waiter() {
        let (read, write) = pipe().unwrap();
        let waiter = std::thread::spawn(move || wait([(&read, libc::POLLIN)]).unwrap()[0]);
        drop(write);
        assert_ne!(waiter.join().unwrap() & libc::POLLHUP, 0);
    }

    #[test]
    fn a_written_pipe_is_readable() {
        let (read, mut write) = pipe().unwrap();
        write.write_all(b"x").unwrap();
        assert_ne!(wait([(&read, libc::POLLIN)]).unwrap()[0] & libc::POLLIN, 0);
    }
}
