//! No way back: the last steps before the pane's program runs, after the namespaces and mounts
//! are made, and the launcher's side of them.
//!
//! `lock_tree` (in C, the pane's init, before it forks the program's process): `no_new_privs`,
//! Landlock, then the seccomp filter (`seccomp`), whose listener goes to the launcher over
//! `channel`; the program's process inherits all three. `drop_privileges` (in the program's
//! process, about to exec): every capability dropped (`caps`). `Serving` (in the launcher,
//! outside every restriction, in its wait for the pane's end): answers the filter's questions
//! about sockets (`sockets`) until no process of the pane is left.

use super::launch_plan::Plan;
use super::{caps, landlock, seccomp, sockets};
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Locks this process and the children it forks from now on down for good, but for its
/// capabilities (see `drop_privileges`); see the module's comment. Returns the filter's listener,
/// whose number the launcher has been sent: it must stay open until the launcher says it has taken
/// it (`taken`). Any step that fails fails the sandbox: no program may run.
pub(crate) fn lock_tree(plan: &Plan, channel: &UnixStream) -> Result<OwnedFd, String> {
    no_new_privs()?;
    // The pane's own terminal, reopened by name (`/dev/stdout`, `/proc/self/fd/1`): the pane's
    // `/dev/pts` is its own (`mounts::dev`), where the host's terminal is not, so the rule is on
    // the terminal itself, reached through the descriptor.
    // SAFETY: isatty takes no pointers.
    let terminal = (unsafe { libc::isatty(0) } == 1).then_some(Path::new("/proc/self/fd/0"));
    let write: Vec<&Path> = plan.write.iter().map(PathBuf::as_path).chain(terminal).collect();
    landlock::restrict(landlock::abi(), &write)?;
    let options = seccomp::Options { refuse_inet: plan.refuse_inet, notify: true };
    let listener = seccomp::install(options)?.ok_or("seccomp gave no listener")?;
    send_number(channel, &listener)?;
    Ok(listener)
}

/// Drops every capability of this process, the last step before the program's exec.
pub(crate) fn drop_privileges() -> Result<(), String> {
    caps::drop_all()
}

/// The launcher's side of the pane's filter, one step each time its descriptor is readable:
/// first the channel, on which the listener comes (`recv_fd`), then the listener, whose
/// notifications it answers (`sockets::serve_one`) until no process under the filter is left.
pub(crate) enum Serving {
    Waiting(UnixStream, sockets::Rules),
    Listening(Arc<OwnedFd>, sockets::Rules),
    Over,
}

impl Serving {
    pub(crate) fn new(channel: UnixStream, plan: &Plan) -> Serving {
        Serving::Waiting(channel, sockets::Rules::of(plan))
    }

    /// The descriptor to poll; -1 (which poll passes over) once over.
    pub(crate) fn fd(&self) -> RawFd {
        match self {
            Serving::Waiting(channel, _) => channel.as_raw_fd(),
            Serving::Listening(listener, _) => listener.as_raw_fd(),
            Serving::Over => -1,
        }
    }

    /// One step, after a poll said `revents` of `fd`. The channel closing without a listener (the
    /// sandbox failed before the filter) or the listener hanging up (every process under it
    /// ended) ends the serving.
    pub(crate) fn step(self, revents: libc::c_short) -> Serving {
        match self {
            Serving::Waiting(channel, rules) => match recv_fd(&channel) {
                Some(listener) => Serving::Listening(Arc::new(listener), rules),
                None => Serving::Over,
            },
            Serving::Listening(listener, rules) => {
                let live = revents & libc::POLLIN != 0 && sockets::serve_one(&listener, &rules);
                if live { Serving::Listening(listener, rules) } else { Serving::Over }
            }
            Serving::Over => Serving::Over,
        }
    }
}

fn no_new_privs() -> Result<(), String> {
    // SAFETY: prctl with these arguments only sets a flag on this process.
    if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
        return Err(format!("no_new_privs: {}", std::io::Error::last_os_error()));
    }
    Ok(())
}

/// Hands the listener to the launcher without a call the filter sends to the launcher
/// (`sendmsg` would wait for an answer that cannot come): the descriptor's number is written, with
/// this process's credentials attached by the kernel (the launcher asked for them before this
/// process was forked, `ask_for_credentials`), and the launcher takes the descriptor itself with
/// `pidfd_getfd`, then says it has it (`taken`): until then the number must stay open.
fn send_number(channel: &UnixStream, listener: &OwnedFd) -> Result<(), String> {
    let mut channel = channel;
    channel
        .write_all(&listener.as_raw_fd().to_ne_bytes())
        .map_err(|e| format!("handing the filter's listener to the launcher: {e}"))
}

/// Waits until the launcher has taken the listener (or will never take it: the channel closed).
pub(crate) fn taken(channel: &UnixStream) {
    let mut channel = channel;
    let mut taken = [0u8; 1];
    let _ = channel.read_exact(&mut taken);
}

/// Makes the kernel attach the sender's credentials to what arrives on the launcher's end of the
/// channel; called before the program's process is forked, so the number it writes carries them
/// with no round trip to ask first.
pub(crate) fn ask_for_credentials(channel: &UnixStream) -> Result<(), String> {
    let one: libc::c_int = 1;
    // SAFETY: setsockopt reads one int from `one`, which outlives the call.
    let r = unsafe {
        libc::setsockopt(
            channel.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PASSCRED,
            (&raw const one).cast(),
            4,
        )
    };
    if r != 0 {
        return Err(format!("SO_PASSCRED: {}", std::io::Error::last_os_error()));
    }
    Ok(())
}

/// The launcher's side of `send_fd`; `None` when the channel closes first.
fn recv_fd(channel: &UnixStream) -> Option<OwnedFd> {
    let mut channel_ref = channel;
    let (number, pid) = recv_number(channel)?;
    // SAFETY: pidfd_open takes no pointers.
    let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if pidfd < 0 {
        return None;
    }
    // SAFETY: pidfd_open returned a new descriptor that nothing else owns.
    let pidfd = unsafe { OwnedFd::from_raw_fd(pidfd as i32) };
    // SAFETY: pidfd_getfd takes no pointers.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_getfd, pidfd.as_raw_fd(), number, 0) };
    channel_ref.write_all(b"k").ok()?;
    // SAFETY: pidfd_getfd returned a new descriptor that nothing else owns.
    (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// The descriptor number the other side wrote, and its pid as the kernel attached it.
fn recv_number(channel: &UnixStream) -> Option<(i32, libc::pid_t)> {
    let mut number = [0u8; 4];
    let (n, control) = super::cmsg::recv(channel.as_raw_fd(), &mut number, libc::MSG_WAITALL)?;
    if n != 4 || control.kind != libc::SCM_CREDENTIALS {
        return None;
    }
    let pid = control.payload.get(..4)?.try_into().map(libc::pid_t::from_ne_bytes).ok()?;
    Some((i32::from_ne_bytes(number), pid))
}
