//! `fugue ls`: the running fugue servers, each with its MCP client and its sessions, windows and
//! panes.
//!
//! Servers are found by their sockets in the control directory; a socket whose process is gone, or
//! that nobody answers, is skipped. Each server gets a short timeout, so one that hangs cannot hang
//! the listing. The hosts a server's calls reach (its open ssh connections) follow, each with what
//! `fugue ls` lists there, over that server's connection. `--json` prints the same as one JSON
//! array, a host as `{"host", "servers"}` (or `"error"`).

use crate::control::dir;
use crate::control::view::{TreePane, TreeSession, TreeWindow, state_words};
use crate::control::wire::Client;
use crate::ids::short_id;
use crate::pane::exit::PaneStatus;
use crate::usage::print_out;
use serde_json::{Value, json};
use std::fmt::Write;
use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How long one server may take to answer.
const TIMEOUT: Duration = Duration::from_secs(2);

pub(crate) const USAGE: &str = "\
Usage: fugue ls [--json] [HOST]

Lists the running fugue servers: each one's pid, MCP client, uptime and working directory, and its
sessions, windows and panes with their state, pid and command, then under each host their calls
reach, that host's. --json prints the same as one JSON array. Exits 1 when no server is running.
With HOST (an ssh destination), lists those on that host, where fugue's calls with that host run,
over ssh.
";

/// `fugue ls`'s options, as `cli` reads them.
pub(crate) struct LsArgs {
    /// `--json`.
    pub(crate) json: bool,
    /// `HOST`: the servers of that host, over ssh.
    pub(crate) host: Option<String>,
}

pub(crate) fn run(args: &LsArgs) -> ExitCode {
    let json = args.json;
    if let Some(host) = &args.host {
        return crate::remote::cli::ls(host, json);
    }
    let mut found = match dir::existing() {
        Ok(dir) => servers(&dir),
        Err(e) => return super::fail(&e.to_string()),
    };
    let shared = add_shared(&mut found);
    let hosts = hosts(&found, json);
    if json {
        found.extend(hosts.iter().map(|(host, listed)| match listed {
            Ok(text) => json!({"host": host, "servers": serde_json::from_slice::<Value>(text.as_bytes()).ok()}),
            Err(why) => json!({"host": host, "error": why}),
        }));
        let text = serde_json::to_string_pretty(&found).unwrap_or_default();
        print_out(&format!("{text}\n"));
    }
    if found.is_empty() {
        return super::fail("no fugue server is running");
    }
    if json {
        return ExitCode::SUCCESS;
    }
    let mut text = String::new();
    for status in &shared {
        describe_shared(status, &mut text);
    }
    for server in &found {
        describe(server, &mut text);
    }
    for (host, listed) in &hosts {
        describe_host(host, listed, &mut text);
    }
    print_out(&text)
}

/// What `fugue ls` lists on each host the servers reach, at once, over each one's open connection;
/// a host once, in name order.
fn hosts(servers: &[Value], json: bool) -> Vec<(String, Result<String, String>)> {
    let mut open: Vec<&Value> =
        servers.iter().flat_map(|s| s["hosts"].as_array()).flatten().collect();
    crate::sort::sort_by_key(&mut open, |h| h["host"].as_str());
    open.dedup_by_key(|h| h["host"].as_str());
    std::thread::scope(|scope| {
        let listing = |h: &Value| {
            let (host, binary) = (h["host"].as_str()?, h["binary"].as_str()?);
            let socket = Path::new(h["socket"].as_str()?);
            Some((host.to_string(), crate::remote::cli::listing(host, socket, binary, json)))
        };
        let running: Vec<_> = open.iter().map(|h| scope.spawn(move || listing(h))).collect();
        running.into_iter().filter_map(|r| r.join().ok().flatten()).collect()
    })
}

/// A host's heading, then what its fugue listed, indented under it.
fn describe_host(host: &str, listed: &Result<String, String>, out: &mut String) {
    match listed {
        Ok(text) => {
            let _ = writeln!(out, "host {}", clean(host));
            // What the host says is printed as any name is: no control characters.
            text.lines().for_each(|line| {
                let _ = writeln!(out, "  {}", clean(line));
            });
        }
        Err(why) => {
            let _ = writeln!(out, "host {}  not listed: {}", clean(host), clean(why));
        }
    }
}

/// Every live server's `info` with its `sessions` added, oldest first.
pub(crate) fn servers(dir: &Path) -> Vec<Value> {
    let mut found: Vec<Value> = dir::sockets(dir)
        .into_iter()
        .filter(|(pid, _)| crate::procfs::alive(*pid))
        .filter_map(|(_, path)| query(&path))
        .collect();
    crate::sort::sort_by_key(&mut found, |s| s["started_at"].as_u64().unwrap_or(0));
    found
}

/// Joins each shared server's status (from its own socket) to its entry; a name that is not live
/// gets an entry of its own with just `shared`. Returns the statuses, by name.
fn add_shared(found: &mut Vec<Value>) -> Vec<Value> {
    let statuses: Vec<Value> =
        crate::server::cli::list().into_iter().filter(|s| s["state"] != "none").collect();
    for status in &statuses {
        let entry = found
            .iter_mut()
            .find(|s| s["shared"]["name"] == status["name"] && s["pid"] == status["pid"]);
        match entry {
            Some(server) => server["shared"]["status"] = status.clone(),
            None => found.push(json!({"shared": {"name": status["name"], "status": status}})),
        }
    }
    statuses
}

/// One line per shared server name: its state, version and fronts.
fn describe_shared(status: &Value, out: &mut String) {
    let name = clean(status["name"].as_str().unwrap_or(""));
    let state = status["state"].as_str().unwrap_or("unknown");
    let _ = write!(out, "shared {name}  {state}");
    if let Some(pid) = status["pid"].as_u64() {
        let _ = write!(out, "  pid {pid}");
    }
    if let Some(version) = status["version"].as_str() {
        let _ = write!(out, "  fugue {}  proto {}", clean(version), status["proto"]);
    }
    if let Some(fronts) = status["fronts"].as_u64() {
        let _ = write!(out, "  {fronts} front{}", if fronts == 1 { "" } else { "s" });
    }
    out.push('\n');
}

fn query(path: &Path) -> Option<Value> {
    let mut client = Client::connect(path, Some(TIMEOUT)).ok()?;
    let mut info = client.call("hello", json!({})).ok()?;
    info["sessions"] = client.call("tree", json!({})).ok()?["sessions"].take();
    Some(info)
}

fn describe(server: &Value, out: &mut String) {
    if server["pid"].is_null() {
        return; // a shared server that is not live: its line is already out
    }
    let client = if let Some(fronts) = server["shared"]["fronts"].as_array() {
        shared_clients(server["shared"]["name"].as_str().unwrap_or(""), fronts)
    } else {
        match server["client"]["name"].as_str() {
            Some(name) => {
                let version = server["client"]["version"].as_str().unwrap_or("");
                clean(format!("{name} {version}").trim_end())
            }
            None => "unknown".to_string(),
        }
    };
    let _ = writeln!(
        out,
        "fugue {}  client {client}  up {}  {}",
        server["pid"],
        uptime(server["started_at"].as_u64().unwrap_or(0)),
        clean(server["cwd"].as_str().unwrap_or("")),
    );
    let sessions: Vec<TreeSession> = match serde_json::from_value(server["sessions"].clone()) {
        Ok(sessions) => sessions,
        Err(e) => {
            // A server of another version may answer in another shape: say so, not "no sessions".
            let _ = writeln!(out, "  sessions unreadable: {e}");
            return;
        }
    };
    if sessions.is_empty() {
        out.push_str("  no sessions\n");
    }
    for session in &sessions {
        let name = clean(&session.name);
        let empty = if session.windows.is_empty() { "  (no windows)" } else { "" };
        let _ = writeln!(out, "  session {name}{empty}");
        for window in &session.windows {
            describe_window(&name, window, out);
        }
    }
}

fn describe_window(session: &str, window: &TreeWindow, out: &mut String) {
    let panes = &window.panes;
    let _ = writeln!(
        out,
        "    window {session}:{}  {}x{}  {} pane{}",
        clean(&window.name),
        window.cols,
        window.rows,
        panes.len(),
        if panes.len() == 1 { "" } else { "s" },
    );
    for pane in panes {
        let name = pane.name.as_deref().map(|n| format!(" {}", clean(n))).unwrap_or_default();
        let command = clean(pane.command.as_deref().unwrap_or("(shell)"));
        let pid = pane.pid.map_or("?".to_string(), |pid| pid.to_string());
        let _ = writeln!(
            out,
            "      pane {}{name}  {}  pid {pid}  {command}",
            short_id(&pane.id),
            live_state(pane)
        );
    }
}

/// The pane's state words (`view::state_words`); for a running pane, with its directory and the
/// command its shell runs, as far as they are known.
fn live_state(pane: &TreePane) -> String {
    let mut state = state_words(&pane.state, &pane.doing);
    if pane.state.status != PaneStatus::Running {
        return state;
    }
    if let Some(cwd) = &pane.doing.cwd {
        let _ = write!(state, "  in {}", clean(cwd));
    }
    if let Some(command) = &pane.doing.current_command {
        let _ = write!(state, "  running {}", clean(command));
    }
    state
}

/// "shared NAME, fronts: claude-code 2.0 (pid 7, in /src/app), ..." for a shared server's client
/// column: each front's directory is where its calls work.
fn shared_clients(name: &str, fronts: &[Value]) -> String {
    let list: Vec<String> = fronts
        .iter()
        .map(|f| {
            let who = match f["client"]["name"].as_str() {
                Some(n) => format!("{n} {}", f["client"]["version"].as_str().unwrap_or("")),
                None => "unknown".into(),
            };
            match f["cwd"].as_str() {
                Some(dir) => format!("{} (pid {}, in {dir})", who.trim_end(), f["pid"]),
                None => format!("{} (pid {})", who.trim_end(), f["pid"]),
            }
        })
        .collect();
    let list = if list.is_empty() { "none".to_string() } else { list.join(", ") };
    clean(&format!("shared {name}, fronts: {list}"))
}

fn uptime(started_ms: u64) -> String {
    let now =
        SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0);
    let secs = now.saturating_sub(started_ms) / 1000;
    match secs {
        0..60 => format!("{secs}s"),
        60..3600 => format!("{}m{:02}s", secs / 60, secs % 60),
        _ => format!("{}h{:02}m", secs / 3600, secs % 3600 / 60),
    }
}

/// Names and commands come from the agent: one line each, no control characters.
fn clean(s: &str) -> String {
    super::width::printable(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_reads_as_a_tree() {
        let server = json!({
            "pid": 42, "started_at": 0, "cwd": "/work",
            "client": {"name": "claude-code", "version": "2.0"},
            "sessions": [{"name": "build", "windows": [{"name": "0", "rows": 24, "cols": 80,
                "panes": [
                    {"id": "0123456789", "name": "tests", "status": "exited", "exit_code": 3,
                     "signal": null, "pid": 7, "command": "make\ntest"},
                    {"id": "abcdef", "name": null, "status": "running", "exit_code": null,
                     "signal": null, "pid": 8, "command": null}]}]},
                {"name": "idle", "windows": []}],
        });
        let mut out = String::new();
        describe(&server, &mut out);
        let lines: Vec<&str> = out.lines().collect();
        assert!(lines[0].starts_with("fugue 42  client claude-code 2.0  up "), "{out}");
        assert!(lines[0].ends_with("/work"));
        assert_eq!(lines[1], "  session build");
        assert_eq!(lines[2], "    window build:0  80x24  2 panes");
        assert_eq!(lines[3], "      pane 01234567 tests  exited 3  pid 7  make test");
        assert_eq!(lines[4], "      pane abcdef  running  pid 8  (shell)");
        assert_eq!(lines[5], "  session idle  (no windows)");
    }

    #[test]
    fn a_tree_of_another_shape_is_said_to_be_unreadable() {
        let server = json!({"pid": 42, "started_at": 0, "cwd": "/", "sessions": [{"name": 5}]});
        let mut out = String::new();
        describe(&server, &mut out);
        assert!(out.lines().nth(1).unwrap().starts_with("  sessions unreadable: "), "{out}");
    }

    #[test]
    fn uptime_reads_naturally() {
        let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as u64;
        assert_eq!(uptime(now - 5_000), "5s");
        assert_eq!(uptime(now - 125_000), "2m05s");
        assert_eq!(uptime(now - 7_260_000), "2h01m");
    }
}
