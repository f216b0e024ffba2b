//! Remote hosts over ssh, without a network: each "host" is a private sshd on 127.0.0.1 with a
//! port of its own, reached through an ssh config and keys the test makes (`FUGUE_SSH_CONFIG`).
//! Each host's sessions see their own `XDG_RUNTIME_DIR` (sshd's `SetEnv`), so each runs a fugue
//! server of its own, as separate machines would; they share one `$HOME`, so fugue's binary is
//! uploaded there once per test. Every remote server is ended when the test ends. The fugue under
//! test is a dev build, dynamically linked, which fugue sends to a host only when it is named
//! (`FUGUE_REMOTE_BINARY_<ARCH>`, as `Hosts::fugue` does): the host is this machine.

use crate::sshd::{Keys, Sshd};
use crate::util::{BIN, Dir, Fugue, PATIENCE};
use serde_json::{Value, json};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::LazyLock;
use std::time::{Duration, Instant};

/// Hosts `h0`, `h1`, ... for one test.
pub(crate) struct Hosts {
    pub(crate) dir: Dir,
    pub(crate) sshds: Vec<Sshd>,
    pub(crate) config: PathBuf,
}

impl Hosts {
    pub(crate) fn start(n: usize) -> Option<Hosts> {
        Hosts::start_with(n, "")
    }

    /// `n` hosts whose sessions also get the `env` (`NAME=value ...`, sshd's `SetEnv`).
    pub(crate) fn start_with(n: usize, env: &str) -> Option<Hosts> {
        let dir = Dir::new("hosts");
        let keys = Keys::new(&dir)?;
        let home = dir.join("home");
        std::fs::create_dir_all(&home).unwrap();
        let mut sshds = Vec::new();
        for i in 0..n {
            let run = dir.join(&format!("run-{i}"));
            std::fs::create_dir_all(&run).unwrap();
            std::fs::set_permissions(&run, std::fs::Permissions::from_mode(0o700)).unwrap();
            let extra =
                format!("SetEnv HOME={} XDG_RUNTIME_DIR={} {env}\n", home.display(), run.display());
            sshds.push(Sshd::start(&dir.path, &format!("sshd-{i}"), &keys, &extra)?);
        }
        let known: String = sshds
            .iter()
            .map(|s| format!("[127.0.0.1]:{} {}\n", s.port, keys.host_public()))
            .collect();
        let known = dir.write("known_hosts", &known);
        let config: String = sshds
            .iter()
            .enumerate()
            .map(|(i, s)| {
                format!(
                    "Host h{i}\n  HostName 127.0.0.1\n  Port {}\n  User root\n  IdentityFile {}\n  \
                     IdentitiesOnly yes\n  UserKnownHostsFile {}\n  StrictHostKeyChecking yes\n",
                    s.port,
                    keys.user.display(),
                    known.display()
                )
            })
            .collect();
        let config = dir.write("ssh_config", &config);
        Some(Hosts { dir, sshds, config })
    }

    pub(crate) fn fugue(&self) -> Fugue {
        self.fugue_with(&[])
    }

    pub(crate) fn fugue_with(&self, env: &[(&str, &str)]) -> Fugue {
        Fugue::start_with(&self.env(env))
    }

    /// The environment a fugue that reaches these hosts runs with, `more` added.
    pub(crate) fn env<'a>(&'a self, more: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
        let mut all =
            vec![("FUGUE_SSH_CONFIG", self.config.to_str().unwrap()), (OWN_BINARY.as_str(), BIN)];
        all.extend_from_slice(more);
        all
    }

    /// Where fugue's binaries go on the hosts.
    pub(crate) fn bin_dir(&self) -> PathBuf {
        self.dir.join("home/.cache/fugue/bin")
    }

    /// Adds lines to the ssh config.
    fn add_config(&self, text: &str) {
        let mut config = std::fs::read_to_string(&self.config).unwrap();
        config.push_str(text);
        std::fs::write(&self.config, config).unwrap();
    }

    /// The processes that serve host `i`'s connections (sshd's children and theirs), not the
    /// fugue server there, which has left them.
    fn sessions(&self, i: usize) -> Vec<u32> {
        descendants(self.sshds[i].pid())
    }
}

impl Drop for Hosts {
    /// Ends every host's fugue server, and with it every process it started.
    fn drop(&mut self) {
        for i in 0..self.sshds.len() {
            let run = self.dir.join(&format!("run-{i}"));
            let Ok(entries) = std::fs::read_dir(run.join("fugue/shared")) else { continue };
            for entry in entries.map_while(Result::ok) {
                let name = entry.file_name().to_string_lossy().to_string();
                if let Some(server) = name.strip_suffix(".pid") {
                    let _ = Command::new(BIN)
                        .args(["kill-server", server])
                        .env("XDG_RUNTIME_DIR", &run)
                        .output();
                }
            }
        }
    }
}

/// The setting that names the binary for hosts of this machine's architecture.
pub(crate) static OWN_BINARY: LazyLock<String> =
    LazyLock::new(|| format!("FUGUE_REMOTE_BINARY_{}", std::env::consts::ARCH));

/// Every process below `pid`.
fn descendants(pid: u32) -> Vec<u32> {
    let mut parents = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().map_while(Result::ok) {
        let Ok(child) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{child}/stat")) else { continue };
        let ppid = stat.rsplit(')').next().and_then(|r| r.split_whitespace().nth(1));
        if let Some(ppid) = ppid.and_then(|p| p.parse::<u32>().ok()) {
            parents.push((child, ppid));
        }
    }
    let mut found = vec![pid];
    let mut i = 0;
    while i < found.len() {
        let parent = found[i];
        found.extend(parents.iter().filter(|(_, p)| *p == parent).map(|(c, _)| *c));
        i += 1;
    }
    found.remove(0);
    found
}

/// The SHA-256 of a file, as `sha256sum` gives it.
pub(crate) fn sha256(path: &str) -> String {
    let out = Command::new("sha256sum").arg(path).output().unwrap();
    String::from_utf8(out.stdout).unwrap().split_whitespace().next().unwrap().to_string()
}

/// The name fugue's own binary has on a host.
pub(crate) fn binary_name() -> String {
    format!("fugue-{}-{}", env!("CARGO_PKG_VERSION"), &sha256(BIN)[..16])
}

#[test]
fn exec_on_a_host_gives_the_exact_exit_and_cwd() {
    let Some(hosts) = Hosts::start(1) else { return };
    let mut f = hosts.fugue();
    let answer =
        f.call("fugue_exec", json!({"host": "h0", "command": "cd /usr/share && (exit 7)"}));
    assert_eq!(answer["status"], "failed", "{answer}");
    assert_eq!(answer["exit_code"], 7, "{answer}");
    assert_eq!(answer["cwd"], "/usr/share", "{answer}");
    let pane = answer["pane_id"].as_str().unwrap().to_string();
    assert!(pane.starts_with("h0:"), "{pane}");
    // The same shell, by its id: what ran there ran over ssh, in the host's session.
    let again =
        f.call("fugue_exec", json!({"pane_id": pane, "command": "pwd; echo $SSH_CONNECTION"}));
    assert_eq!(again["status"], "ok", "{again}");
    let port = hosts.sshds[0].port.to_string();
    assert!(again["output"].as_str().unwrap().contains("/usr/share\n127.0.0.1 "), "{again}");
    assert!(again["output"].as_str().unwrap().ends_with(&port), "{again}");
    // The binary there: fugue's own, private, under its version and hash.
    let placed = hosts.bin_dir().join(binary_name());
    let mode = std::fs::metadata(&placed).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700);
    assert_eq!(sha256(placed.to_str().unwrap()), sha256(BIN));
    let listed = f.call("fugue_list_sessions", json!({}));
    assert_eq!(listed["hosts"][0]["host"], "h0", "{listed}");
    let text = listed["hosts"][0].to_string();
    assert!(text.contains(&pane), "{listed}");
}

#[test]
fn a_remote_programs_question_is_answered_and_until_fires_there() {
    let Some(hosts) = Hosts::start(1) else { return };
    let mut f = hosts.fugue();
    let answer = f.call(
        "fugue_exec",
        json!({"host": "h0", "command": "read -p 'Name? ' n; echo hello $n",
               "responses": {"Name\\?": "bob"}}),
    );
    assert_eq!(answer["status"], "ok", "{answer}");
    assert!(answer["output"].as_str().unwrap().ends_with("hello bob"), "{answer}");
    let ready = f.call("fugue_create_session", json!({"host": "h0", "name": "srv"}));
    assert!(ready["session_id"].as_str().unwrap().starts_with("h0:"), "{ready}");
    let server = f.call(
        "fugue_exec",
        json!({"pane_id": "h0:srv", "command": "echo booting; sleep 0.3; echo 'listening on 8123'; sleep 30",
               "until": "listening on (\\d+)"}),
    );
    assert_eq!(server["status"], "ready", "{server}");
    assert_eq!(server["groups"][0], "8123", "{server}");
    let shown = f.call("fugue_get_output", json!({"pane_id": ready["pane_id"], "lines": 5}));
    assert!(shown["output"].as_str().unwrap().contains("listening on 8123"), "{shown}");
    // Progress the host's fugue reports on a long call reaches the client, with its last line.
    let args = json!({"host": "h0", "command": "echo step-one; sleep 2.5; echo step-two"});
    let id = f.submit("tools/call", crate::util::tool_params("fugue_exec", args, Some("far")));
    crate::util::wait_for_progress(&mut f, "far");
    let answer = crate::util::structured(&f.response(&id));
    assert_eq!(answer["status"], "ok", "{answer}");
    let said = crate::util::progress_for(&f, "far");
    assert!(said.iter().any(|p| p["message"] == "step-one"), "{said:?}");
}

#[test]
fn fugue_wait_spans_two_hosts_and_a_local_pane() {
    let Some(hosts) = Hosts::start(2) else { return };
    let mut f = hosts.fugue();
    let start = |f: &mut Fugue, host: Option<&str>, command: &str| {
        let mut args = json!({"command": command, "timeout_ms": 1});
        if let Some(host) = host {
            args["host"] = json!(host);
        }
        let answer = f.call("fugue_exec", args);
        assert_eq!(answer["status"], "running", "{answer}");
        answer["pane_id"].as_str().unwrap().to_string()
    };
    let a = start(&mut f, Some("h0"), "sleep 0.5; (exit 3)");
    let b = start(&mut f, Some("h1"), "sleep 0.8; echo b done");
    let local = start(&mut f, None, "sleep 0.2; (exit 5)");
    let waited = f
        .call("fugue_wait", json!({"pane_ids": [a, b, local], "mode": "all", "timeout_ms": 20000}));
    assert_eq!(waited["status"], "done", "{waited}");
    let result = |id: &str| {
        waited["results"].as_array().unwrap().iter().find(|r| r["pane_id"] == id).cloned().unwrap()
    };
    assert_eq!(result(&a)["exit_code"], 3, "{waited}");
    assert_eq!(result(&b)["status"], "ok", "{waited}");
    assert!(result(&b)["output"].as_str().unwrap().contains("b done"), "{waited}");
    assert_eq!(result(&local)["exit_code"], 5, "{waited}");
    assert_eq!(waited["fired"].as_array().unwrap().len(), 3, "{waited}");
}

#[test]
fn one_call_fans_a_command_out_over_twenty_hosts() {
    let Some(hosts) = Hosts::start(20) else { return };
    let mut f = hosts.fugue();
    // The first call puts fugue's binary in the hosts' shared home; the fan-out finds it there.
    let first = f.call("fugue_exec", json!({"host": "h0", "command": "true"}));
    assert_eq!(first["status"], "ok", "{first}");
    let commands: Vec<Value> = (0..20)
        .map(|i| {
            json!({"host": format!("h{i}"), "name": format!("n{i}"),
                        "command": format!("echo $XDG_RUNTIME_DIR; exit {}", i % 4)})
        })
        .collect();
    let answer = f.call("fugue_run_parallel", json!({"commands": commands, "tails": "all"}));
    let results = answer["results"].as_array().unwrap();
    assert_eq!(results.len(), 20, "{answer}");
    for (i, result) in results.iter().enumerate() {
        assert_eq!(result["name"], format!("n{i}"), "{result}");
        assert_eq!(result["host"], format!("h{i}"), "{result}");
        assert_eq!(result["exit_code"], i % 4, "{result}");
        let tail = result["output_tail"].as_str().unwrap();
        assert!(tail.ends_with(&format!("run-{i}")), "{result}");
    }
}

#[test]
fn a_dropped_host_answers_unreachable_and_its_panes_live_on() {
    let Some(hosts) = Hosts::start(1) else { return };
    let mut f = hosts.fugue();
    let started = f.call(
        "fugue_exec",
        json!({"host": "h0", "command": "echo first; sleep 2; echo second; sleep 60", "until": "first"}),
    );
    assert_eq!(started["status"], "ready", "{started}");
    let pane = started["pane_id"].as_str().unwrap().to_string();
    let id = f.submit(
        "tools/call",
        json!({"name": "fugue_wait",
        "arguments": {"pane_ids": [pane], "timeout_ms": 120000}}),
    );
    // The host freezes: its connections stop answering, as a machine that dropped off the network.
    let frozen = hosts.sessions(0);
    assert!(!frozen.is_empty());
    frozen.iter().for_each(|&p| crate::util::signal(p, libc::SIGSTOP));
    let since = Instant::now();
    let answer = f.response_within(&id, PATIENCE).expect("an answer");
    let took = since.elapsed();
    frozen.iter().for_each(|&p| crate::util::signal(p, libc::SIGKILL));
    let error = crate::util::structured(&answer);
    assert_eq!(error["error"]["code"], "host_unreachable", "{answer}");
    assert!(took < Duration::from_secs(15), "{took:?}");
    // The next call connects again and finds the pane, its output whole, its command still running.
    let shown = f.call("fugue_get_output", json!({"pane_id": pane}));
    let output = shown["output"].as_str().unwrap();
    assert!(output.contains("first") && output.contains("second"), "{shown}");
    assert_eq!(shown["status"], "running", "{shown}");
}

#[test]
fn an_older_fugue_there_is_left_alone_and_a_corrupted_upload_is_replaced() {
    let Some(hosts) = Hosts::start(1) else { return };
    let bin = hosts.bin_dir();
    std::fs::create_dir_all(&bin).unwrap();
    let marker = hosts.dir.join("ran");
    let script = format!("#!/bin/sh\ntouch {}\n", marker.display());
    let older = bin.join("fugue-0.0.1-0123456789abcdef");
    let corrupted = bin.join(binary_name());
    for file in [&older, &corrupted] {
        std::fs::write(file, &script).unwrap();
        std::fs::set_permissions(file, std::fs::Permissions::from_mode(0o700)).unwrap();
    }
    let mut f = hosts.fugue();
    let answer = f.call("fugue_exec", json!({"host": "h0", "command": "echo there"}));
    assert_eq!(answer["status"], "ok", "{answer}");
    assert!(!marker.exists(), "a binary whose hash is wrong was run");
    assert_eq!(std::fs::read_to_string(&older).unwrap(), script, "the older fugue was touched");
    assert_eq!(sha256(corrupted.to_str().unwrap()), sha256(BIN), "not replaced");
}

#[test]
fn another_architecture_is_refused_unless_a_binary_is_configured() {
    let dir = Dir::new("fake-uname");
    dir.write("uname", "#!/bin/sh\necho riscv64\n");
    std::fs::set_permissions(dir.join("uname"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!("PATH={}:/usr/local/bin:/usr/bin:/bin", dir.path_str());
    let Some(hosts) = Hosts::start_with(1, &path) else { return };
    let mut f = hosts.fugue();
    let refused = f.call_err("fugue_exec", json!({"host": "h0", "command": "true"}));
    assert_eq!(refused["code"], "host_unsupported", "{refused}");
    assert!(refused["message"].as_str().unwrap().contains("riscv64"), "{refused}");
    // A binary for it, configured: (the host is this machine, so this fugue runs there).
    let mut f = hosts.fugue_with(&[("FUGUE_REMOTE_BINARY_riscv64", BIN)]);
    let answer = f.call("fugue_exec", json!({"host": "h0", "command": "echo ok"}));
    assert_eq!(answer["status"], "ok", "{answer}");
}

#[test]
fn an_unknown_host_key_a_password_and_no_route_are_each_said() {
    let Some(hosts) = Hosts::start(1) else { return };
    let port = hosts.sshds[0].port;
    let empty = hosts.dir.write("empty_known_hosts", "");
    let stranger = hosts.dir.join("stranger");
    let made = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-f"])
        .arg(&stranger)
        .status()
        .unwrap();
    assert!(made.success());
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    hosts.add_config(&format!(
        "Host newkey\n  HostName 127.0.0.1\n  Port {port}\n  User root\n  IdentityFile {user}\n  \
         UserKnownHostsFile {empty}\n  StrictHostKeyChecking yes\n\
         Host nokey\n  HostName 127.0.0.1\n  Port {port}\n  User root\n  IdentityFile {stranger}\n  \
         IdentitiesOnly yes\n  UserKnownHostsFile {known}\n\
         Host gone\n  HostName 127.0.0.1\n  Port {closed}\n",
        user = hosts.dir.join("user").display(),
        empty = empty.display(),
        stranger = stranger.display(),
        known = hosts.dir.join("known_hosts").display(),
    ));
    let mut f = hosts.fugue();
    for (host, code) in [
        ("newkey", "host_key_unknown"),
        ("nokey", "host_auth_needed"),
        ("gone", "host_unreachable"),
    ] {
        let error = f.call_err("fugue_exec", json!({"host": host, "command": "true"}));
        assert_eq!(error["code"], code, "{host}: {error}");
    }
    assert!(std::fs::read_to_string(&empty).unwrap().is_empty(), "a host key was accepted");
}

#[test]
fn ls_and_attach_reach_a_hosts_sessions() {
    let Some(hosts) = Hosts::start(1) else { return };
    let mut f = hosts.fugue();
    let made = f.call(
        "fugue_create_session",
        json!({"host": "h0", "name": "far", "command": "echo far-away-marker; sleep 60"}),
    );
    let pane = made["pane_id"].as_str().unwrap().trim_start_matches("h0:").to_string();
    let listed = Command::new(BIN)
        .args(["ls", "h0"])
        .env("FUGUE_SSH_CONFIG", &hosts.config)
        .env(&*OWN_BINARY, BIN)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&listed.stdout);
    assert!(listed.status.success(), "{text} {}", String::from_utf8_lossy(&listed.stderr));
    assert!(text.contains("session far") && text.contains(&pane[..8]), "{text}");
    // attach runs in a pane of this fugue: a real terminal, as a person's.
    let mut env = json!({"FUGUE_SSH_CONFIG": hosts.config.to_str().unwrap()});
    env[OWN_BINARY.as_str()] = json!(BIN);
    let watcher = f.call(
        "fugue_create_session",
        json!({"command": format!("{BIN} attach h0:far"), "env": env}),
    );
    let watcher = watcher["pane_id"].as_str().unwrap().to_string();
    f.screen_until(&watcher, "far-away-marker");
}

/// A host is an ssh destination, never an option: what would make ssh run a command of its own is
/// refused before ssh starts. And a fan-out takes at most 64 commands. Neither needs a host.
#[test]
fn a_host_that_is_an_option_is_refused_and_a_fan_out_has_a_limit() {
    let dir = Dir::new("host-option");
    let marker = dir.join("ran");
    let mut f = Fugue::start();
    for host in [format!("-oProxyCommand=touch {}", marker.display()), "a b".into(), "".into()] {
        let error = f.call_err("fugue_exec", json!({"host": host, "command": "true"}));
        assert_eq!(error["code"], "invalid_argument", "{host}: {error}");
    }
    assert!(!marker.exists(), "ssh ran the host's option");
    let commands: Vec<Value> =
        (0..65).map(|i| json!({"host": format!("h{i}"), "command": "true"})).collect();
    let error = f.call_err("fugue_run_parallel", json!({"commands": commands}));
    assert_eq!(error["code"], "invalid_argument", "{error}");
    assert!(error["message"].as_str().unwrap().contains("64"), "{error}");
    let mut bad = commands[..3].to_vec();
    bad.push(json!({"host": "-x", "command": "true"}));
    let bad = json!({"commands": bad});
    let error = f.call_err("fugue_run_parallel", bad);
    assert_eq!(error["code"], "invalid_argument", "{error}");
}

/// Plain `fugue ls` lists, after this machine's sessions, those of each host a running fugue
/// reaches, under the host, over that fugue's own connection.
#[test]
fn plain_ls_lists_the_sessions_of_the_hosts_a_fugue_reaches() {
    let Some(hosts) = Hosts::start(1) else { return };
    let runtime = Dir::new("ls-runtime");
    let mut f = hosts.fugue_with(&[("XDG_RUNTIME_DIR", runtime.path_str())]);
    f.call("fugue_create_session", json!({"name": "near", "command": "sleep 60"}));
    let far = json!({"host": "h0", "name": "far", "command": "sleep 60"});
    let made = f.call("fugue_create_session", far);
    let pane = made["pane_id"].as_str().unwrap().trim_start_matches("h0:")[..8].to_string();
    // Without the ssh config that names h0: ls goes over the running fugue's open connection.
    let ls = |json: bool| {
        let mut cmd = Command::new(BIN);
        cmd.arg("ls").args(json.then_some("--json")).env("XDG_RUNTIME_DIR", runtime.path_str());
        let out = cmd.env_remove("FUGUE_SSH_CONFIG").output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    let text = ls(false);
    let at = |needle: &str| text.find(needle).unwrap_or_else(|| panic!("no {needle:?}: {text}"));
    assert!(at("session near") < at("\nhost h0\n"), "{text}");
    assert!(at("\nhost h0\n") < at("    session far"), "{text}");
    assert!(at("\nhost h0\n") < at(&pane), "{text}");
    let listed: Value = serde_json::from_str(&ls(true)).unwrap();
    let host = listed.as_array().unwrap().iter().find(|s| s["host"] == "h0").expect("h0 listed");
    let names: Vec<&Value> = host["servers"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| {
            s["sessions"].as_array().into_iter().flatten().map(|session| &session["name"])
        })
        .collect();
    assert!(names.contains(&&json!("far")), "{listed}");
}

/// A name with a `:` would read as `HOST:NAME`: every create tool refuses it, saying why, and
/// nothing is made. Needs no host.
#[test]
fn a_name_with_a_colon_is_refused_as_it_would_name_a_host() {
    let mut f = Fugue::start();
    let made = f.call("fugue_create_session", json!({"name": "s", "command": "sleep 60"}));
    for (tool, args) in [
        ("fugue_create_session", json!({"name": "web1:build"})),
        ("fugue_create_window", json!({"session_id": "s", "name": "a:b"})),
        (
            "fugue_create_pane",
            json!({"session_id": "s", "window_id": made["window_id"], "name": "x:1"}),
        ),
    ] {
        let error = f.call_err(tool, args);
        assert_eq!(error["code"], "invalid_argument", "{tool}: {error}");
        assert!(error["message"].as_str().unwrap().contains("':'"), "{tool}: {error}");
    }
    let listed = f.call("fugue_list_sessions", json!({}));
    let sessions = listed["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 1, "{listed}");
    assert_eq!(sessions[0]["windows"].as_array().unwrap().len(), 1, "{listed}");
    assert_eq!(sessions[0]["windows"][0]["panes"].as_array().unwrap().len(), 1, "{listed}");
}

/// A dynamically linked fugue (as cargo builds one for development) is not sent to a host: the
/// static build beside it in cargo's target directory goes instead, and without one the call is
/// `host_unsupported` saying what to do, with nothing uploaded.
#[test]
fn a_dynamic_fugue_is_never_sent_and_the_static_build_goes_instead() {
    let Some(hosts) = Hosts::start(1) else { return };
    let target = Dir::new("dev-target");
    let put = |from: &Path, to: &str| {
        let to = target.join(to);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        if std::fs::hard_link(from, &to).is_err() {
            std::fs::copy(from, &to).unwrap();
        }
    };
    put(Path::new(BIN), "debug/fugue");
    let start = || {
        let mut cmd = Command::new(target.join("debug/fugue"));
        cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::inherit());
        cmd.env("SHELL", "/bin/sh").env("FUGUE_SSH_CONFIG", &hosts.config);
        cmd.env_remove(&*OWN_BINARY).env_remove("FUGUE_SHELL");
        let mut f = Fugue::spawn_command(cmd);
        f.handshake();
        f
    };
    let refused = start().call_err("fugue_exec", json!({"host": "h0", "command": "true"}));
    assert_eq!(refused["code"], "host_unsupported", "{refused}");
    let said = refused["message"].as_str().unwrap();
    assert!(said.contains("make static") && said.contains(&*OWN_BINARY), "{refused}");
    let uploaded = std::fs::read_dir(hosts.bin_dir()).map(Iterator::count).unwrap_or(0);
    assert_eq!(uploaded, 0, "a binary was uploaded");
    let arch = std::env::consts::ARCH;
    let cargo_target = Path::new(BIN).parent().unwrap().parent().unwrap();
    let built = cargo_target.join(format!("{arch}-unknown-linux-gnu/release/fugue"));
    if !built.exists() {
        return crate::util::skip("make static", "no static build to send instead");
    }
    put(&built, &format!("{arch}-unknown-linux-gnu/release/fugue"));
    let answer = start().call("fugue_exec", json!({"host": "h0", "command": "echo static"}));
    assert_eq!(answer["output"], "static", "{answer}");
    let sent = std::fs::read_dir(hosts.bin_dir()).unwrap().next().unwrap().unwrap().path();
    assert_eq!(sha256(sent.to_str().unwrap()), sha256(built.to_str().unwrap()));
}
