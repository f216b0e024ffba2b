//! The last steps of a sandboxed pane's program before it execs (`apply`), and what its launcher
//! does for it meanwhile (`serve`), over a Unix socket pair the launcher made before it forked.
//!
//! `apply` runs in the program's own process, after every mount is in place: it takes away the
//! means to undo them. For now that is `no_new_privs` (no setuid gain, `sudo` included), Landlock
//! (writes only beneath the plan's paths; Landlock also forbids the program to change mounts) and,
//! without namespaces, the seccomp filter that refuses inet sockets. `serve` runs in a thread of
//! the launcher and answers what the program's process asks over the channel until it closes
//! (the exec closes the program's end); nothing is asked yet.

use super::launch_plan::Plan;
use super::{landlock, seccomp};
use std::io::Read;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};

/// Locks the calling process down as `plan` says; `Err` says which step failed. The process is
/// single-threaded and about to exec.
pub(crate) fn apply(plan: &Plan, channel: &UnixStream) -> Result<(), String> {
    let _ = channel;
    no_new_privs()?;
    let write: Vec<&Path> = plan.write.iter().map(PathBuf::as_path).collect();
    landlock::restrict(landlock::abi(), &write)?;
    if plan.fallback && plan.refuse_inet {
        seccomp::refuse_inet()?;
    }
    Ok(())
}

/// Serves the program's process over `channel` until it closes.
pub(crate) fn serve(channel: UnixStream, plan: &Plan) {
    let _ = plan;
    let mut channel = channel;
    let mut sink = [0u8; 64];
    while channel.read(&mut sink).is_ok_and(|n| n > 0) {}
}

fn no_new_privs() -> Result<(), String> {
    // SAFETY: prctl with these arguments only sets a flag on this process.
    if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
        return Err(format!("no_new_privs: {}", std::io::Error::last_os_error()));
    }
    Ok(())
}
