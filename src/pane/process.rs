//! Signals for the processes of a pane (the one way fugue signals them: `signal`, `signal_group`),
//! and the wait for its child.
//!
//! A pane's child is a session leader (portable-pty calls `setsid`), so everything it starts stays
//! in that session unless it leaves on purpose. Ending a pane therefore signals every process whose
//! session id is the child's pid, found in `/proc`, plus its process group: interactive shells put
//! each job in a group of its own, so the group alone would miss them.

use super::exit::Exit;
use std::fs;

/// A process id as the system calls take it. Ids fit (the kernel's limit is 2^22); one that did
/// not becomes an id no process has, never a negative one, which would name a process group.
pub(crate) fn pid_t(pid: u32) -> libc::pid_t {
    libc::pid_t::try_from(pid).unwrap_or(libc::pid_t::MAX)
}

/// Blocks until `pid` (our child) ends and reaps it.
pub(crate) fn wait(pid: u32) -> Exit {
    let mut status: libc::c_int = 0;
    loop {
        // SAFETY: waitpid writes only to `status`, which outlives the call.
        let r = unsafe { libc::waitpid(pid_t(pid), &raw mut status, 0) };
        if r == pid_t(pid) {
            break;
        }
        if r == -1 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            // Someone else reaped it: the status is lost, say so honestly.
            return Exit::Unknown;
        }
    }
    if libc::WIFEXITED(status) {
        Exit::Code(libc::WEXITSTATUS(status))
    } else if libc::WIFSIGNALED(status) {
        Exit::Signal(libc::WTERMSIG(status))
    } else {
        Exit::Unknown
    }
}

/// Now, in the clock ticks since boot that `/proc/PID/stat` gives start times in.
pub(crate) fn boot_ticks() -> u64 {
    // SAFETY: an all-zero timespec is valid, and clock_gettime only writes to it.
    let mut now: libc::timespec = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    unsafe { libc::clock_gettime(libc::CLOCK_BOOTTIME, &raw mut now) };
    // SAFETY: sysconf only reads a constant.
    let hz = u64::try_from(unsafe { libc::sysconf(libc::_SC_CLK_TCK) }).unwrap_or(100).max(1);
    // The boot-time clock is never negative.
    let (secs, nanos) = (now.tv_sec.cast_unsigned(), now.tv_nsec.cast_unsigned());
    secs * hz + nanos * hz / 1_000_000_000
}

/// The pids whose session id is `sid`.
pub(crate) fn session_members(sid: u32) -> Vec<u32> {
    session_members_started_by(sid, u64::MAX)
}

/// The pids whose session id is `sid` and that started no later than `tick` (see `boot_ticks`).
pub(crate) fn session_members_started_by(sid: u32, tick: u64) -> Vec<u32> {
    let Ok(dir) = fs::read_dir("/proc") else { return Vec::new() };
    dir.filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| stat_of(*pid).is_some_and(|(session, start)| session == sid && start <= tick))
        .collect()
}

/// Every process on the machine by session, from one pass over /proc: closing many panes at once
/// looks once per round instead of once per pane and signal.
#[derive(Default)]
pub(crate) struct Sessions {
    /// Session id -> (pid, start time in boot ticks).
    members: std::collections::HashMap<u32, Vec<(u32, u64)>>,
}

impl Sessions {
    pub(crate) fn scan() -> Sessions {
        let mut members: std::collections::HashMap<u32, Vec<(u32, u64)>> = Default::default();
        if let Ok(dir) = fs::read_dir("/proc") {
            for pid in dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok()) {
                if let Some((sid, start)) = stat_of(pid) {
                    members.entry(sid).or_default().push((pid, start));
                }
            }
        }
        Sessions { members }
    }

    /// The members of session `sid` that started no later than `tick`.
    pub(crate) fn started_by(&self, sid: u32, tick: u64) -> Vec<u32> {
        let members = self.members.get(&sid).map(Vec::as_slice).unwrap_or_default();
        members.iter().filter(|(_, start)| *start <= tick).map(|(pid, _)| *pid).collect()
    }
}

/// The process a sandbox launcher runs the program in: its child that is not the init of the
/// pid namespace it made (pid 1 there); `None` until it exists. The launcher forks twice at once,
/// so the few pids after its own are looked at first, then every process of its session.
pub(crate) fn launched(launcher: u32) -> Option<u32> {
    launched_near(launcher).or_else(|| {
        let dir = fs::read_dir("/proc").ok()?;
        let mut pids = dir.filter_map(|entry| entry.ok()?.file_name().to_str()?.parse().ok());
        pids.find(|pid| {
            stat_of(*pid).is_some_and(|(sid, _)| sid == launcher) && is_launched_by(*pid, launcher)
        })
    })
}

fn launched_near(launcher: u32) -> Option<u32> {
    (launcher + 1..=launcher + 8).find(|pid| is_launched_by(*pid, launcher))
}

/// Whether `pid` is `launcher`'s child and not pid 1 of a namespace.
fn is_launched_by(pid: u32, launcher: u32) -> bool {
    let Ok(status) = fs::read_to_string(format!("/proc/{pid}/status")) else { return false };
    let field =
        |name: &str| status.lines().find_map(|l| l.strip_prefix(name)).map_or("", str::trim);
    field("PPid:") == launcher.to_string()
        && field("NSpid:").split_whitespace().last().is_some_and(|n| n != "1")
}

/// Waits, at most until `deadline`, for the launcher `launcher` to start the program
/// (`launched`); `None` if it ended first or the deadline passed.
pub(crate) fn launched_by(launcher: u32, deadline: std::time::Instant) -> Option<u32> {
    for look in 1.. {
        // Every tenth look reads every process; the others only the pids after the launcher's.
        let found = if look % 10 == 0 { launched(launcher) } else { launched_near(launcher) };
        if found.is_some() {
            return found;
        }
        let live = crate::procfs::stat(launcher).is_some_and(|s| !s.ended());
        if !live || std::time::Instant::now() >= deadline {
            return None;
        }
        // The launcher tells no one when it forks; it does so within milliseconds of starting.
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    None
}

/// Sends `signal` to the group `leader` and to each of `members`; returns how many members.
pub(crate) fn signal_members(leader: u32, members: &[u32], sig: i32) -> usize {
    signal_group(leader, sig);
    for pid in members {
        signal(*pid, sig);
    }
    members.len()
}

/// Sends `signal` to the process `pid`: the one place fugue signals a process of a pane (or of an
/// agent's run); the caller has made sure the id is still the process it means.
pub(crate) fn signal(pid: u32, sig: i32) {
    // SAFETY: kill only sends a signal; a stale id fails with ESRCH.
    unsafe { libc::kill(pid_t(pid), sig) };
}

/// Sends `signal` to every process of the group `group`.
pub(crate) fn signal_group(group: u32, sig: i32) {
    // SAFETY: killpg only sends a signal; a stale id fails with ESRCH.
    unsafe { libc::killpg(pid_t(group), sig) };
}

/// The session id and start time of `pid`.
fn stat_of(pid: u32) -> Option<(u32, u64)> {
    crate::procfs::stat(pid).map(|s| (s.session, s.start))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn our_own_session_is_found() {
        let me = std::process::id();
        let sid = stat_of(me).unwrap().0;
        assert!(session_members(sid).contains(&me));
    }

    #[test]
    fn wait_reports_exit_codes_and_signals() {
        // `wait` is what reaps these children, so std's `Child` is dropped unwaited on purpose.
        let child = std::process::Command::new("sh").args(["-c", "exit 7"]).spawn().unwrap().id();
        assert_eq!(wait(child), Exit::Code(7));
        assert!(std::fs::metadata(format!("/proc/{child}")).is_err(), "reaped");
        let killed = std::process::Command::new("sh").args(["-c", "kill -TERM $$"]).spawn();
        assert_eq!(wait(killed.unwrap().id()), Exit::Signal(libc::SIGTERM));
    }

    #[test]
    fn a_command_name_with_parentheses_and_bad_utf8_is_parsed() {
        use std::os::unix::ffi::OsStrExt;
        let dir = std::env::temp_dir().join(format!("fugue-stat-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        // The kernel's name for a process is its file name: ") \xff (x".
        let name = std::ffi::OsStr::from_bytes(b") \xff (x");
        let link = dir.join(name);
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink("/bin/sleep", &link).unwrap();
        let mut child = std::process::Command::new(&link).arg("5").spawn().unwrap();
        let (sid, _) = stat_of(child.id()).expect("stat parsed");
        assert_eq!(sid, stat_of(std::process::id()).unwrap().0);
        child.kill().unwrap();
        child.wait().unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn start_times_separate_old_members_from_new_ones() {
        let me = std::process::id();
        let (sid, start) = stat_of(me).unwrap();
        assert!(start <= boot_ticks());
        assert!(session_members_started_by(sid, boot_ticks()).contains(&me));
        assert!(!session_members_started_by(sid, start.saturating_sub(1)).contains(&me));
    }
}
