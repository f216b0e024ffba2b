//! What a remote host costs: fugue's calls over ssh against plain `ssh host true`, in one run.
//!
//! The hosts are private sshd servers on 127.0.0.1 (as root: sshd logs in only as the user it runs
//! as otherwise), each with its own port and its own `XDG_RUNTIME_DIR` (sshd's `SetEnv`), so each
//! runs a fugue server of its own as separate machines would; they share a `$HOME`. Keys, config
//! and `known_hosts` are made for the run; every host's server is ended afterwards. The 20 hosts
//! of the fan-out are 20 fugue servers on this machine's cores, each starting a pane, so the
//! fan-out's target is against one host alone (≤ 10×), not against a fleet of real machines.

use crate::client::{Fugue, R};
use crate::clock::{median, ms, show};
use crate::figures::Bench;
use crate::report::Row;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub const EXEC_FIG: &str = "remote `fugue_exec` of `true` over the shared connection";
pub const FIRST_FIG: &str = "first call to a new host (connect + upload + start)";
pub const FANOUT_FIG: &str = "`fugue_run_parallel` of `true` on 20 hosts";
const HOSTS: usize = 20;

/// The hosts of one run; ends their servers and sshds when dropped.
struct World {
    dir: PathBuf,
    sshds: Vec<Child>,
    config: PathBuf,
    bin: PathBuf,
}

impl World {
    fn new(bin: &Path, n: usize) -> R<World> {
        let dir = std::env::temp_dir().join(format!("fugue-bench-remote-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("home")).map_err(|e| e.to_string())?;
        let mut world = World { dir, sshds: Vec::new(), config: PathBuf::new(), bin: bin.into() };
        for key in ["host", "user"] {
            run(Command::new("ssh-keygen")
                .args(["-q", "-t", "ed25519", "-N", "", "-f"])
                .arg(world.dir.join(key)))?;
        }
        std::fs::copy(world.dir.join("user.pub"), world.dir.join("authorized_keys"))
            .map_err(|e| e.to_string())?;
        let host_key =
            std::fs::read_to_string(world.dir.join("host.pub")).map_err(|e| e.to_string())?;
        let host_key: Vec<&str> = host_key.split_whitespace().take(2).collect();
        let (mut config, mut known) = (String::new(), String::new());
        for i in 0..n {
            let port = world.sshd(i)?;
            known.push_str(&format!("[127.0.0.1]:{port} {}\n", host_key.join(" ")));
            config.push_str(&format!(
                "Host h{i}\n  HostName 127.0.0.1\n  Port {port}\n  User root\n  IdentityFile {}\n  \
                 IdentitiesOnly yes\n  UserKnownHostsFile {}\n  StrictHostKeyChecking yes\n",
                world.dir.join("user").display(),
                world.dir.join("known_hosts").display()
            ));
        }
        std::fs::write(world.dir.join("known_hosts"), known).map_err(|e| e.to_string())?;
        world.config = world.dir.join("ssh_config");
        std::fs::write(&world.config, config).map_err(|e| e.to_string())?;
        Ok(world)
    }

    /// Starts host `i`'s sshd; its port.
    fn sshd(&mut self, i: usize) -> R<u16> {
        let run = self.dir.join(format!("run-{i}"));
        std::fs::create_dir_all(&run).map_err(|e| e.to_string())?;
        std::fs::set_permissions(&run, std::fs::Permissions::from_mode(0o700))
            .map_err(|e| e.to_string())?;
        let _ = std::fs::create_dir_all("/run/sshd");
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| e.to_string())?
            .port();
        let config = format!(
            "Port {port}\nListenAddress 127.0.0.1\nHostKey {}\nAuthorizedKeysFile {}\nPermitRootLogin yes\n\
             UsePAM no\nStrictModes no\nPidFile none\nMaxStartups 100\nSetEnv HOME={} XDG_RUNTIME_DIR={}\n",
            self.dir.join("host").display(),
            self.dir.join("authorized_keys").display(),
            self.dir.join("home").display(),
            run.display()
        );
        let path = self.dir.join(format!("sshd-{i}"));
        std::fs::write(&path, config).map_err(|e| e.to_string())?;
        let sshd = ["/usr/sbin/sshd", "/usr/bin/sshd"]
            .into_iter()
            .find(|p| Path::new(p).exists())
            .ok_or("no sshd")?;
        let mut child = Command::new(sshd)
            .args(["-D", "-e", "-f"])
            .arg(&path)
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| e.to_string())?;
        let mut lines = BufReader::new(child.stderr.take().ok_or("no stderr")?).lines();
        let listening = lines.by_ref().map_while(Result::ok).any(|l| l.contains("listening"));
        self.sshds.push(child);
        if !listening {
            return Err("sshd would not start".into());
        }
        std::thread::spawn(move || lines.for_each(drop));
        Ok(port)
    }

    fn fugue(&self) -> R<Fugue> {
        Fugue::start_with(&self.bin, &[("FUGUE_SSH_CONFIG", self.config.to_str().unwrap_or(""))])
    }

    /// `ssh h0 true`, as a person would run it: a connection and a login of its own.
    fn ssh_true(&self) -> R<Duration> {
        let started = Instant::now();
        run(Command::new("ssh").arg("-F").arg(&self.config).args([
            "-o",
            "BatchMode=yes",
            "h0",
            "true",
        ]))?;
        Ok(started.elapsed())
    }

    /// Removes fugue's binaries from the hosts' home, so the next first call uploads.
    fn forget_upload(&self) {
        let _ = std::fs::remove_dir_all(self.dir.join("home/.cache"));
    }

    fn kill_servers(&self) {
        for i in 0..self.sshds.len() {
            let run = self.dir.join(format!("run-{i}"));
            let Ok(entries) = std::fs::read_dir(run.join("fugue/shared")) else { continue };
            for name in
                entries.map_while(Result::ok).map(|e| e.file_name().to_string_lossy().to_string())
            {
                if let Some(server) = name.strip_suffix(".pid") {
                    let _ = Command::new(&self.bin)
                        .args(["kill-server", server])
                        .env("XDG_RUNTIME_DIR", &run)
                        .output();
                }
            }
        }
    }
}

impl Drop for World {
    fn drop(&mut self) {
        self.kill_servers();
        for child in &mut self.sshds {
            let _ = child.kill();
            let _ = child.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn run(cmd: &mut Command) -> R<()> {
    let out = cmd.stdin(Stdio::null()).output().map_err(|e| e.to_string())?;
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).trim().to_string())
    }
}

fn exec(fugue: &mut Fugue, host: &str) -> R<Duration> {
    let (answer, took) =
        fugue.call_timed("fugue_exec", json!({"host": host, "command": "true"}))?;
    if answer["status"] != "ok" {
        return Err(format!("remote exec: {answer}"));
    }
    Ok(took)
}

pub fn remote(b: &Bench) -> R<Vec<Row>> {
    let have = |p: &str| {
        Command::new("sh")
            .args(["-c", &format!("command -v {p}")])
            .output()
            .is_ok_and(|o| o.status.success())
    };
    // SAFETY: geteuid has no preconditions and touches no memory.
    let root = unsafe { libc::geteuid() } == 0;
    if !have("ssh") || !have("ssh-keygen") || !root {
        let why = "needs ssh, ssh-keygen, sshd and root";
        return Ok([EXEC_FIG, FIRST_FIG, FANOUT_FIG].map(|f| Row::skipped(f, "—", why)).into());
    }
    let world = World::new(&b.fugue, HOSTS)?;
    let (mut first, mut started, mut plain) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..b.reps(4) {
        world.forget_upload();
        world.kill_servers();
        let mut fugue = world.fugue()?;
        first.push(exec(&mut fugue, "h0")?);
        fugue.close()?;
        world.kill_servers();
        let mut fugue = world.fugue()?;
        started.push(exec(&mut fugue, "h0")?);
        fugue.close()?;
        plain.push(world.ssh_true()?);
    }
    let mut fugue = world.fugue()?;
    exec(&mut fugue, "h0")?;
    let (mut ours, mut theirs) = (Vec::new(), Vec::new());
    for _ in 0..b.reps(40) {
        ours.push(exec(&mut fugue, "h0")?);
        theirs.push(world.ssh_true()?);
    }
    let (one, many) = fan_out(&mut fugue, b)?;
    fugue.close()?;
    let (ssh, warm) = (median(&theirs), median(&ours));
    let base = median(&plain);
    Ok(vec![
        Row {
            baseline: format!("`ssh h0 true` median {}", show(ssh)),
            fugue: format!("median {} (n={})", show(warm), ours.len()),
            ratio: format!("{:.1}× faster", ms(ssh) / ms(warm).max(1e-9)),
            ..Row::new(EXEC_FIG, "≥ 10× faster than ssh")
        }
        .judge(ms(ssh) >= 10.0 * ms(warm)),
        Row {
            baseline: format!("`ssh h0 true` median {}", show(base)),
            fugue: format!(
                "median {} with the upload, {} with the binary there (n={})",
                show(median(&first)),
                show(median(&started)),
                first.len()
            ),
            ratio: format!(
                "{:.1}× / {:.1}×",
                ms(median(&first)) / ms(base),
                ms(median(&started)) / ms(base)
            ),
            ..Row::new(FIRST_FIG, "—")
        },
        Row {
            baseline: format!("1 host median {}", show(one)),
            fugue: format!("median {}", show(many)),
            ratio: format!("{:.1}×", ms(many) / ms(one).max(1e-9)),
            ..Row::new(FANOUT_FIG, "≤ 10× one host")
        }
        .judge(ms(many) <= 10.0 * ms(one)),
    ])
}

/// The median of `fugue_run_parallel` of `true` on one host and on all, each host connected.
fn fan_out(fugue: &mut Fugue, b: &Bench) -> R<(Duration, Duration)> {
    let on = |n: usize| -> Value {
        let commands: Vec<Value> =
            (0..n).map(|i| json!({"host": format!("h{i}"), "command": "true"})).collect();
        json!({"commands": commands})
    };
    fugue.call("fugue_run_parallel", on(HOSTS))?;
    let (mut one, mut many) = (Vec::new(), Vec::new());
    for _ in 0..b.reps(10) {
        one.push(fugue.call_timed("fugue_run_parallel", on(1))?.1);
        let (answer, took) = fugue.call_timed("fugue_run_parallel", on(HOSTS))?;
        if answer["status"] != "completed" {
            return Err(format!("fan-out: {answer}"));
        }
        many.push(took);
    }
    Ok((median(&one), median(&many)))
}
