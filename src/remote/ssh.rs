//! ssh as fugue drives it: the user's own `ssh`, config, keys, agent and `known_hosts`, with one
//! master connection per host (OpenSSH `ControlMaster`) whose socket is in fugue's private
//! directory, and every later command a channel of it.
//!
//! fugue never answers ssh's questions: every ssh runs with `BatchMode=yes`, so an unknown host
//! key or a login that wants a password fails at once, and its stderr is read to say which, each a
//! code of its own. The master sends keepalives (every 3 s, 3 missed end it), so a host that
//! drops answers `host_unreachable` in about 10 s. `FUGUE_SSH_CONFIG` names a config file to use
//! instead of `~/.ssh/config` (`ssh -F`); the tests use it. Every ssh fugue starts dies with fugue
//! (`PR_SET_PDEATHSIG`, set by one thread that lives as long as the process).

use crate::error::{Error, ErrorKind, Result};
use crossbeam_channel::{Sender, bounded};
use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStderr, Command, Stdio};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// How long the master may take to connect and log in before the host counts as unreachable.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(20);
/// The last lines of ssh's stderr kept to say why it failed.
const KEPT_LINES: usize = 8;

/// A host as a call names it: an ssh destination (`web1`, `deploy@web1.example.com`); ports and
/// jumps come from the ssh config.
pub(crate) fn check_host(host: &str) -> Result<()> {
    let ok = !host.is_empty()
        && host.len() <= 255
        && !host.starts_with(['-', '.', '@'])
        && host.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-@".contains(&b));
    if ok {
        Ok(())
    } else {
        Err(Error::invalid(format!(
            "host {host:?}: an ssh destination as your ssh config names it (letters, digits, \
             '.', '_', '-', '@'; a port or a jump goes in the config)"
        )))
    }
}

/// An ssh command for `host` through the master at `control`, with fugue's fixed options.
pub(crate) fn command(control: &Path) -> Command {
    let mut cmd = Command::new("ssh");
    if let Some(config) = std::env::var_os("FUGUE_SSH_CONFIG").filter(|c| !c.is_empty()) {
        cmd.arg("-F").arg(config);
    }
    cmd.args(["-o", "BatchMode=yes", "-o", "ConnectTimeout=10", "-S"]).arg(control);
    cmd.args(["-o", "ServerAliveInterval=3", "-o", "ServerAliveCountMax=3"]);
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    cmd
}

/// A command to run on `host` over the master at `control`: `sh -c SCRIPT` there.
pub(crate) fn remote(host: &str, control: &Path, script: &str) -> Command {
    let mut cmd = command(control);
    cmd.args(["-o", "ControlMaster=no", "-T", "--", host]);
    cmd.arg(format!("sh -c {}", quote(script)));
    cmd
}

/// `text` as one word for a POSIX shell (and for fish): in single quotes, each of its own quotes
/// closed, escaped and opened again.
pub(crate) fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

/// Starts `cmd` as a child that dies with fugue: from the one thread that spawns them all, since
/// the parent-death signal follows the thread that forked, not the process.
pub(crate) fn spawn(cmd: Command) -> Result<Child> {
    type Job = (Command, Sender<std::io::Result<Child>>);
    static SPAWNER: OnceLock<Sender<Job>> = OnceLock::new();
    let spawner = SPAWNER.get_or_init(|| {
        let (tx, rx) = crossbeam_channel::unbounded::<Job>();
        let _ = crate::threads::spawn(
            "ssh-spawn",
            None,
            Box::new(move || {
                for (mut cmd, answer) in rx {
                    // SAFETY: prctl and setpgid are async-signal-safe and touch no memory of ours.
                    unsafe {
                        cmd.pre_exec(|| {
                            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
                            libc::setpgid(0, 0);
                            Ok(())
                        });
                    }
                    let _ = answer.send(cmd.spawn());
                }
            }),
        );
        tx
    });
    let (tx, rx) = bounded(1);
    spawner.send((cmd, tx)).map_err(|_| Error::internal("the ssh spawner is gone"))?;
    match rx.recv() {
        Ok(Ok(child)) => Ok(child),
        Ok(Err(e)) => Err(Error::new(ErrorKind::SpawnFailed, format!("cannot run ssh: {e}"))),
        Err(_) => Err(Error::internal("the ssh spawner is gone")),
    }
}

/// The last lines an ssh wrote on stderr, kept by a thread that drains it.
#[derive(Clone)]
pub(crate) struct Stderr {
    lines: Arc<parking_lot::Mutex<Vec<String>>>,
    /// Disconnects when ssh's stderr is closed: every line it wrote is kept.
    closed: crossbeam_channel::Receiver<()>,
}

impl Stderr {
    /// Drains `pipe` in a thread of its own (so ssh never blocks on it), keeping its last lines.
    pub(crate) fn drain(pipe: ChildStderr) -> Stderr {
        let (done, closed) = bounded::<()>(0);
        let kept = Stderr { lines: Arc::default(), closed };
        let lines = kept.lines.clone();
        let _ = crate::threads::spawn(
            "ssh-stderr",
            None,
            Box::new(move || {
                let _done = done;
                for line in BufReader::new(pipe).lines().map_while(std::result::Result::ok) {
                    let mut kept = lines.lock();
                    if kept.len() == KEPT_LINES {
                        kept.remove(0);
                    }
                    kept.push(line);
                }
            }),
        );
        kept
    }

    /// What ssh said, once it has closed its stderr (or after a second, what it said so far).
    pub(crate) fn text(&self) -> String {
        let _ = self.closed.recv_timeout(Duration::from_secs(1));
        self.lines.lock().join("\n")
    }
}

/// The master connection to one host: an `ssh -M -N` child of fugue and its socket.
pub(crate) struct Master {
    pub(crate) host: String,
    pub(crate) control: PathBuf,
    child: Child,
    pub(crate) stderr: Stderr,
}

impl Master {
    /// Connects to `host` and logs in; its socket is `control`. Answers once the master can take
    /// channels: ssh runs its `LocalCommand` (an echo) only after its socket listens.
    pub(crate) fn connect(host: &str, control: PathBuf) -> Result<Master> {
        let _ = std::fs::remove_file(&control);
        let mut cmd = command(&control);
        cmd.args(["-M", "-N", "-o", "ControlPersist=no", "-o", "PermitLocalCommand=yes"]);
        cmd.args(["-o", "LocalCommand=echo fugue-ready", "--", host]);
        let mut child = spawn(cmd)?;
        let stderr = Stderr::drain(child.stderr.take().expect("piped"));
        let ready = ready_line(child.stdout.take().expect("piped"));
        let master = Master { host: host.to_string(), control, child, stderr };
        match ready.recv_timeout(CONNECT_TIMEOUT) {
            Ok(true) => Ok(master),
            Ok(false) => Err(master.failure()),
            Err(_) => Err(Error::new(
                ErrorKind::HostUnreachable,
                format!("ssh to {host} did not connect and log in within 20 s"),
            )),
        }
    }

    /// Why the master ended, from what ssh said (it has exited or is about to).
    pub(crate) fn failure(mut self) -> Error {
        let _ = self.child.wait();
        classify(&self.host, &self.stderr.text())
    }

    /// Whether the master still runs.
    pub(crate) fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }
}

impl Drop for Master {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.control);
    }
}

/// True once the master's stdout says it is ready; false when it ends first.
fn ready_line(stdout: impl Read + Send + 'static) -> crossbeam_channel::Receiver<bool> {
    let (tx, rx) = bounded(1);
    let _ = crate::threads::spawn(
        "ssh-ready",
        None,
        Box::new(move || {
            let mut lines = BufReader::new(stdout).lines();
            let ready =
                lines.by_ref().map_while(std::result::Result::ok).any(|l| l == "fugue-ready");
            let _ = tx.send(ready);
            lines.for_each(drop);
        }),
    );
    rx
}

/// The error for what ssh said when it failed on `host`: a host key it does not know, a login
/// that needs what only a person can give, or a host it cannot reach.
pub(crate) fn classify(host: &str, said: &str) -> Error {
    let said = said.trim();
    let last = said.lines().rfind(|l| !l.starts_with('@')).unwrap_or("ssh failed");
    if said.contains("Host key verification failed") || said.contains("host key is known") {
        return Error::new(
            ErrorKind::HostKeyUnknown,
            format!(
                "ssh does not know {host}'s host key ({last}); fugue never accepts one itself: \
                 check it and add it (ssh {host} once in a terminal, or ssh-keyscan into \
                 known_hosts)"
            ),
        );
    }
    if said.contains("Permission denied") || said.contains("Too many authentication failures") {
        return Error::new(
            ErrorKind::HostAuth,
            format!(
                "{host} wants a password or a key ssh does not have ({last}); fugue never types \
                 a password: load your key into ssh-agent, or install one (ssh-copy-id {host})"
            ),
        );
    }
    Error::new(ErrorKind::HostUnreachable, format!("cannot reach {host}: {last}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_are_ssh_destinations() {
        for good in ["web1", "deploy@web1.example.com", "a-b_c.d"] {
            check_host(good).unwrap();
        }
        for bad in ["", "-oProxyCommand=x", "a b", "a:22", "a;b", "@x", &"h".repeat(256)] {
            assert!(check_host(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn words_are_quoted_for_the_shell() {
        assert_eq!(quote("a b"), "'a b'");
        assert_eq!(quote("it's"), "'it'\\''s'");
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("printf %s {}", quote("it's $HOME \\ \"x\"")))
            .output()
            .unwrap();
        assert_eq!(String::from_utf8(out.stdout).unwrap(), "it's $HOME \\ \"x\"");
    }

    #[test]
    fn what_ssh_says_gives_the_code() {
        let code = |said: &str| classify("h", said).code();
        assert_eq!(
            code("No ED25519 host key is known for h.\nHost key verification failed."),
            "host_key_unknown"
        );
        assert_eq!(code("root@h: Permission denied (publickey,password)."), "host_auth_needed");
        assert_eq!(code("ssh: connect to host h port 22: Connection refused"), "host_unreachable");
        assert_eq!(code(""), "host_unreachable");
    }
}
