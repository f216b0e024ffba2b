//! What the kernel says of a process, for everything that looks: its `/proc/PID/stat` line
//! (state, process group, session, start time), whether a pid is in use, and who fugue runs as.
//!
//! One parser for the stat line, which is easy to get wrong: the command name may hold spaces,
//! parentheses and bytes that are not UTF-8, so the fields are counted after the last `)`. It
//! reads the file with one read(2) into a buffer longer than any stat line: a scan of every
//! process on the machine reads this file thousands of times.

use std::fs::File;
use std::os::unix::fs::FileExt;

/// The fields of a stat line that fugue uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Stat {
    /// `R`, `S`, `D`, `T`, `Z`, ...
    pub(crate) state: u8,
    pub(crate) group: i32,
    pub(crate) session: u32,
    /// When it started, in clock ticks since boot: with the pid, it names a process once and
    /// for all.
    pub(crate) start: u64,
}

impl Stat {
    /// A zombie or a dead task: the pid is no longer a running process.
    pub(crate) fn ended(&self) -> bool {
        matches!(self.state, b'Z' | b'X')
    }
}

/// The stat line of process `pid`.
pub(crate) fn stat(pid: u32) -> Option<Stat> {
    stat_at(&format!("/proc/{pid}/stat"))
}

/// The stat line at `path` (a process's, or a thread's `/proc/PID/task/TID/stat`).
pub(crate) fn stat_at(path: &str) -> Option<Stat> {
    let mut buf = [0u8; 2048];
    let n = File::open(path).ok()?.read_at(&mut buf, 0).ok()?;
    parse(&buf[..n])
}

fn parse(line: &[u8]) -> Option<Stat> {
    let rest = std::str::from_utf8(&line[line.iter().rposition(|b| *b == b')')? + 1..]).ok()?;
    let mut fields = rest.split_whitespace();
    // After the name: state, ppid, pgrp, session, and the start time 19 fields after the state.
    let state = *fields.next()?.as_bytes().first()?;
    let group = fields.nth(1)?.parse().ok()?;
    let session = fields.next()?.parse().ok()?;
    let start = fields.nth(15)?.parse().ok()?;
    Some(Stat { state, group, session, start })
}

/// Whether a process with this pid exists. A live pid may be a recycled one: a caller that must
/// be sure compares the start time too, or tries to connect.
pub(crate) fn alive(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else { return false };
    // SAFETY: signal 0 only checks that the process exists and may be signalled.
    let r = unsafe { libc::kill(pid, 0) };
    r == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// The user fugue runs as.
pub(crate) fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions, cannot fail and touches no memory.
    unsafe { libc::geteuid() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_survive_odd_command_names() {
        let line = b"123 (a) b (c)) S 1 77 78 0 -1 4194560 1 2 3 4 5 6 7 8 20 0 1 0 4242 9 10";
        let stat = parse(line).unwrap();
        assert_eq!(stat, Stat { state: b'S', group: 77, session: 78, start: 4242 });
        assert!(!stat.ended());
        assert_eq!(parse(b"no parenthesis S 1"), None);
    }

    #[test]
    fn our_own_line_reads() {
        let thread = stat_at("/proc/thread-self/stat").unwrap();
        assert_eq!(thread.state, b'R', "the thread reads its own stat while it runs");
        let own = stat(std::process::id()).unwrap();
        assert_eq!(own.group, thread.group);
        assert!(own.start <= thread.start, "the process began before its thread");
        assert!(alive(std::process::id()));
    }
}
