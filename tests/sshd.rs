//! Private sshd servers on 127.0.0.1 for the tests that need a host to ssh to: keys made here, a
//! config written here, each server on a free port and killed on drop. A test whose sshd cannot
//! start says so through `crate::util::skip`.

use crate::util::{Dir, have};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// The host key and the one user key a set of servers shares.
pub struct Keys {
    pub host: PathBuf,
    pub user: PathBuf,
    pub authorized: PathBuf,
}

impl Keys {
    /// New keys in `dir`; None (after saying why) without ssh, ssh-keygen or sshd.
    pub fn new(dir: &Dir) -> Option<Keys> {
        if !have("ssh") | !have("ssh-keygen") || sshd().is_none() {
            return None;
        }
        for key in ["host", "user"] {
            let made = Command::new("ssh-keygen")
                .args(["-q", "-t", "ed25519", "-N", "", "-f"])
                .arg(dir.join(key))
                .status()
                .is_ok_and(|s| s.success());
            assert!(made, "ssh-keygen failed");
        }
        std::fs::copy(dir.join("user.pub"), dir.join("authorized_keys")).unwrap();
        Some(Keys {
            host: dir.join("host"),
            user: dir.join("user"),
            authorized: dir.join("authorized_keys"),
        })
    }

    /// The host's public key, as known_hosts has it after the host's name.
    pub fn host_public(&self) -> String {
        let text = std::fs::read_to_string(self.host.with_extension("pub")).unwrap();
        text.split_whitespace().take(2).collect::<Vec<_>>().join(" ")
    }
}

fn sshd() -> Option<&'static str> {
    let found = ["/usr/sbin/sshd", "/usr/bin/sshd"].into_iter().find(|p| Path::new(p).exists());
    if found.is_none() {
        crate::util::skip("sshd", "not installed");
    }
    found
}

/// One sshd, listening on a free port of 127.0.0.1.
pub struct Sshd {
    child: Child,
    pub port: u16,
}

impl Sshd {
    /// Starts sshd with its config in `dir` (file `name`), letting in `keys.user`, with `extra`
    /// config lines; None (after saying why) when it will not start.
    pub fn start(dir: &Path, name: &str, keys: &Keys, extra: &str) -> Option<Sshd> {
        let sshd = sshd()?;
        // sshd refuses to start without its privilege separation directory, which the service
        // normally makes.
        let _ = std::fs::create_dir_all("/run/sshd");
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let config = format!(
            "Port {port}\nListenAddress 127.0.0.1\nHostKey {}\nAuthorizedKeysFile {}\n\
             PermitRootLogin yes\nUsePAM no\nStrictModes no\nPidFile none\n{extra}",
            keys.host.display(),
            keys.authorized.display()
        );
        let path = dir.join(name);
        std::fs::write(&path, config).unwrap();
        let mut child = Command::new(sshd)
            .args(["-D", "-e", "-f"])
            .arg(&path)
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // It says when it listens; a failure ends its stderr.
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let listening = lines.by_ref().map_while(Result::ok).any(|l| l.contains("listening"));
        if !listening {
            let _ = child.kill();
            let _ = child.wait();
            crate::util::skip("sshd", "would not start");
            return None;
        }
        std::thread::spawn(move || lines.for_each(drop));
        Some(Sshd { child, port })
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
