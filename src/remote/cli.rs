//! `fugue ls HOST` and `fugue attach HOST:SESSION[:WINDOW]`: the same commands run on the host,
//! by the fugue there, over the user's ssh (with a terminal for attach), against the shared server
//! this fugue's calls use there. Plain `fugue ls` lists the hosts a running fugue reaches too, each
//! over that fugue's own master connection (`listing`), so no new login is made.

use super::ssh::{self, Master, quote};
use super::{hosts, upload};
use crate::usage::usage_error;
use std::io::{Read, Write};
use std::path::Path;
use std::process::{ExitCode, Stdio};
use std::time::Duration;

/// Runs `fugue ARGS` on `host` in this terminal; `{server}` in ARGS is the host's server name.
fn run_there(host: &str, args: &[&str], tty: bool) -> ExitCode {
    if let Err(e) = ssh::check_host(host) {
        return usage_error(e.message());
    }
    let found = hosts::control_path().and_then(|control| {
        let master = Master::connect(host, control)?;
        let binary = upload::ensure(&master)?;
        Ok((master, binary))
    });
    let (master, binary) = match found {
        Ok(found) => found,
        Err(e) => return fail(&format!("{}: {}", e.code(), e.message())),
    };
    let server = hosts::server_name(&binary);
    let words: Vec<String> = args.iter().map(|a| quote(&a.replace("{server}", &server))).collect();
    let script = format!("exec {} {}", binary.remote_path(), words.join(" "));
    let mut cmd = ssh::command(&master.control);
    cmd.args(["-o", "ControlMaster=no", if tty { "-t" } else { "-T" }, "--", host]);
    cmd.arg(format!("sh -c {}", quote(&script)));
    cmd.stdin(Stdio::inherit()).stdout(Stdio::inherit()).stderr(Stdio::inherit());
    match cmd.status() {
        Ok(status) if status.success() => ExitCode::SUCCESS,
        Ok(status) => ExitCode::from(u8::try_from(status.code().unwrap_or(1)).unwrap_or(1)),
        Err(e) => fail(&format!("cannot run ssh: {e}")),
    }
}

/// Says why on stderr; exit status 1.
fn fail(why: &str) -> ExitCode {
    let _ = writeln!(std::io::stderr(), "fugue: {why}");
    ExitCode::FAILURE
}

/// `fugue ls HOST [--json]`.
pub(crate) fn ls(host: &str, json: bool) -> ExitCode {
    let args: &[&str] = if json { &["ls", "--json"] } else { &["ls"] };
    run_there(host, args, false)
}

/// How long one host's listing may take.
const LISTING_TIMEOUT: Duration = Duration::from_secs(5);

/// What `fugue ls [--json]` prints on `host`, run by fugue's binary there (`binary`, a path for
/// its shell) over the open master at `socket`; or why not, in a line.
pub(crate) fn listing(
    host: &str,
    socket: &Path,
    binary: &str,
    json: bool,
) -> Result<String, String> {
    ssh::check_host(host).map_err(|e| e.message().to_string())?;
    let script = format!("exec {binary} ls{}", if json { " --json" } else { "" });
    let mut child = ssh::spawn(ssh::remote(host, socket, &script)).map_err(|e| e.to_string())?;
    let stderr = ssh::Stderr::drain(child.stderr.take().expect("piped"));
    let mut stdout = child.stdout.take().expect("piped");
    let (tx, rx) = crossbeam_channel::bounded(1);
    let _ = crate::threads::spawn(
        "ls-host",
        None,
        Box::new(move || {
            let mut out = String::new();
            let _ = stdout.read_to_string(&mut out);
            let _ = tx.send(out);
        }),
    );
    let out = rx.recv_timeout(LISTING_TIMEOUT);
    if out.is_err() {
        let _ = child.kill();
    }
    let status = child.wait().map_err(|e| e.to_string())?;
    match out {
        Ok(out) if status.success() => Ok(out),
        Ok(_) => Err(stderr.text().lines().last().unwrap_or("failed").to_string()),
        Err(_) => Err(format!("no answer within {} s", LISTING_TIMEOUT.as_secs())),
    }
}

/// `fugue attach [--input] HOST:SPEC`: the host's attach, on its fugue's server there.
pub(crate) fn attach(host: &str, spec: &str, input: bool) -> ExitCode {
    let mut args = vec!["attach", "--server", "{server}"];
    if input {
        args.push("--input");
    }
    if !spec.is_empty() {
        args.push(spec);
    }
    run_there(host, &args, true)
}
