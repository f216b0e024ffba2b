//! Signals for the processes of a pane, and the wait for its child.
//!
//! A pane's child is a session leader (portable-pty calls `setsid`), so everything it starts stays
//! in that session unless it leaves on purpose. Ending a pane therefore signals every process whose
//! session id is the child's pid, found in `/proc`, plus its process group: interactive shells put
//! each job in a group of its own, so the group alone would miss them.

use super::output::Exit;
use std::fs;

/// Blocks until `pid` (our child) ends, without reaping it: while it is a zombie its number stays
/// ours, so its session can still be signalled by that number. `reap` frees it.
pub(crate) fn wait_exited(pid: u32) -> Exit {
    // SAFETY: an all-zero siginfo_t is a valid value for waitid to fill in.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: waitid writes only to `info`, which outlives the call.
        let r = unsafe {
            libc::waitid(libc::P_PID, pid as libc::id_t, &mut info, libc::WEXITED | libc::WNOWAIT)
        };
        if r == 0 {
            break;
        }
        if std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            // Someone else reaped it: the status is lost, say so honestly.
            return Exit { code: None, signal: None };
        }
    }
    // SAFETY: waitid succeeded for a child, so the si_status field is the one that is set.
    let status = unsafe { info.si_status() };
    match info.si_code {
        libc::CLD_EXITED => Exit { code: Some(status), signal: None },
        libc::CLD_KILLED | libc::CLD_DUMPED => Exit { code: None, signal: Some(status) },
        _ => Exit { code: None, signal: None },
    }
}

/// Reaps `pid` once `wait_exited` has seen it end.
pub(crate) fn reap(pid: u32) {
    let mut status: libc::c_int = 0;
    // SAFETY: waitpid writes only to `status`; the child has exited, so this does not block.
    while unsafe { libc::waitpid(pid as libc::pid_t, &mut status, 0) } == -1
        && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR)
    {}
}

/// Sends `signal` to the session led by `leader`: its process group and every member found in /proc.
/// Returns how many processes of the session were still there.
pub(crate) fn signal_session(leader: u32, signal: i32) -> usize {
    // SAFETY: killpg only sends a signal; a stale group id fails with ESRCH.
    unsafe {
        libc::killpg(leader as libc::pid_t, signal);
    }
    let members = session_members(leader);
    for pid in &members {
        // SAFETY: as above, for one process.
        unsafe {
            libc::kill(*pid as libc::pid_t, signal);
        }
    }
    members.len()
}

/// The pids whose session id is `sid`.
pub(crate) fn session_members(sid: u32) -> Vec<u32> {
    let Ok(dir) = fs::read_dir("/proc") else { return Vec::new() };
    dir.filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| session_of(*pid) == Some(sid))
        .collect()
}

/// The session id in `/proc/PID/stat`. The command name may hold spaces and parentheses, so the
/// fields are counted after the last `)`.
pub(crate) fn session_of(pid: u32) -> Option<u32> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    // After the name: state, ppid, pgrp, session.
    rest.split_whitespace().nth(3)?.parse().ok()
}

/// The name of a signal, for messages: `SIGKILL` for 9.
pub(crate) fn signal_name(signal: i32) -> String {
    let name = match signal {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        libc::SIGUSR1 => "SIGUSR1",
        libc::SIGUSR2 => "SIGUSR2",
        _ => return format!("signal {signal}"),
    };
    name.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn our_own_session_is_found() {
        let me = std::process::id();
        let sid = session_of(me).unwrap();
        assert!(session_members(sid).contains(&me));
    }

    #[test]
    fn wait_reports_exit_codes_and_signals_and_reap_frees_the_zombie() {
        let child = std::process::Command::new("sh").args(["-c", "exit 7"]).spawn().unwrap();
        assert_eq!(wait_exited(child.id()), Exit { code: Some(7), signal: None });
        assert!(
            std::fs::read_to_string(format!("/proc/{}/stat", child.id())).unwrap().contains(") Z ")
        );
        reap(child.id());
        assert!(std::fs::metadata(format!("/proc/{}", child.id())).is_err());
        let child = std::process::Command::new("sh").args(["-c", "kill -TERM $$"]).spawn().unwrap();
        assert_eq!(wait_exited(child.id()), Exit { code: None, signal: Some(libc::SIGTERM) });
        reap(child.id());
    }
}
