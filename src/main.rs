//! fugue: a terminal multiplexer for AI agents, speaking MCP over stdio.
//!
//! This file is the command line: it parses arguments by hand and hands each command to one
//! function. `serve` wires the pieces together — the runtime that owns panes and agent pipelines
//! (`runtime`), the protocol (`mcp`), the line loop (`rpc`), the control socket that `ls` and
//! `attach` use (`control`) — and waits for a reason to stop: end of input, a signal, or a broken
//! stdout. Stopping ends every process fugue started and removes the socket.

mod agent;
mod attach;
mod cancel;
mod config;
mod control;
mod error;
mod files;
mod ids;
mod inherit;
mod jsonrpc;
mod layout;
mod line;
mod log;
mod mcp;
mod mux;
mod pane;
mod procfs;
mod remote;
mod rpc;
mod runtime;
mod sandbox;
mod server;
mod shell;
mod tempdir;
mod tool;
mod tools;
mod usage;
mod waiter;
mod watch;
mod words;

use cancel::Cancel;
use mcp::Mcp;
use rpc::{Connection, Stop, Writer};
use runtime::Runtime;
use serde_json::{Map, Value};
use std::process::ExitCode;
use std::sync::Arc;
use tool::call::Progress;
use usage::{USAGE, print_out, usage_error};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    // A pane's launcher and the network holder: before anything else reads the arguments, since
    // the pane's own command line follows.
    match args.first().map(String::as_str) {
        Some("__sandbox-exec") => return sandbox::launch::main(&args[1..]),
        Some("__sandbox-net") if args.len() == 1 => return sandbox::net::holder_main(),
        _ => {}
    }
    let words: Vec<&str> = args.iter().map(String::as_str).collect();
    match words.as_slice() {
        [command, rest @ ..] if rest.iter().any(|w| matches!(*w, "-h" | "--help")) => {
            match command_usage(command) {
                Some(usage) => print_out(usage),
                None => usage_error(&format!("unknown command {command:?}")),
            }
        }
        [] => serve_command(&[]),
        [first, ..] if sandbox::Flags::is_flag(first) => serve_command(&words),
        ["serve", rest @ ..] => serve_command(rest),
        ["__server", name, flags @ ..] => match sandbox::Flags::parse(flags) {
            Ok((flags, rest)) if rest.is_empty() => match sandbox_policy(flags) {
                Ok(policy) => server::daemon::main(name, policy),
                Err(why) => usage_error(&why),
            },
            _ => usage_error("__server takes a name and sandbox flags"),
        },
        ["kill-server", rest @ ..] => server::cli::kill_server(rest),
        ["call", "--shared", name, tool] => call_shared(name, tool, "{}"),
        ["call", "--shared", name, tool, json] => call_shared(name, tool, json),
        ["-h" | "--help" | "help"] => print_out(USAGE),
        ["-V" | "--version"] => print_out(&format!("fugue {}\n", env!("CARGO_PKG_VERSION"))),
        ["tools"] => list_tools(),
        ["tools", ..] => usage_error("tools takes no arguments"),
        ["verdict", ..] => agent::verdict::cli(&args[1..]),
        ["ls", rest @ ..] => attach::ls::run(rest),
        ["attach", rest @ ..] => attach::run(rest),
        ["call", tool] => call(tool, "{}"),
        ["call", tool, json] => call(tool, json),
        ["call", ..] => usage_error("call takes a tool name and at most one JSON argument object"),
        [other, ..] => usage_error(&format!("unknown command {other:?}")),
    }
}

const SERVE_USAGE: &str = "\
Usage: fugue [serve] [SANDBOX OPTIONS]
       fugue serve --shared [NAME]

Runs the MCP server: JSON-RPC, one message a line, on stdin and stdout; logs go to stderr. It
stops when stdin closes, on SIGINT, SIGTERM or SIGHUP, or when stdout is gone, and ends every
process it started first.

With --shared (or FUGUE_SERVER=NAME), it is a front for this user's shared server NAME (default:
default) instead, starting it when it is not running: the server keeps every pane, session and
agent pipeline when the front ends, and serves several fronts at once (see fugue(1), SHARED
SERVER).

Sandbox options (see fugue(1), SANDBOX): the panes' processes are confined by the kernel; fugue
itself is not.
  --sandbox MODE     off (the default; FUGUE_SANDBOX=MODE sets it too), workspace-write (reads
                     everywhere; writes only under the writable roots, the temporary directory,
                     the terminal and the devices; every .git in the roots read-only) or read-only
                     (writes only to the terminal, the devices and a private TMPDIR)
  --writable DIR     a writable root (repeatable; default: the working directory)
  --network on|off   off (the default in a sandbox): the panes share a private loopback and reach
                     nothing else
  --writable-git     leave the roots' .git writable
  --pass-env NAME    pass this secret-looking variable (*KEY*, *TOKEN*, *SECRET*, *PASSWORD*,
                     *CREDENTIAL*) or socket-naming one (SSH_AUTH_SOCK, DOCKER_HOST, TMUX, ...)
                     to the panes all the same (repeatable)
  --allow-unix-socket PATH
                     let the panes connect to this Unix socket outside the writable roots and
                     the private /tmp (repeatable; others are refused)
";

const CALL_USAGE: &str = "\
Usage: fugue call TOOL [JSON]
       fugue call --shared NAME TOOL [JSON]

Runs one tool in this process with the JSON object as its arguments (default {}), prints its
structured result as JSON and ends every process it started. Exits 0 on success, 1 when the tool
fails (the error JSON is printed), 2 on a bad call. `fugue tools` lists the tools.

With --shared, the call is made in shared server NAME (started if needed), and what it starts
stays there.
";

const TOOLS_USAGE: &str = "\
Usage: fugue tools

Lists the tools, one line each: name and what it does.
";

/// The usage of one command, for `fugue COMMAND --help`; `None` for an unknown command.
fn command_usage(command: &str) -> Option<&'static str> {
    Some(match command {
        "serve" => SERVE_USAGE,
        "call" => CALL_USAGE,
        "tools" => TOOLS_USAGE,
        "verdict" => agent::verdict::USAGE,
        "ls" => attach::ls::USAGE,
        "kill-server" => server::cli::USAGE,
        "attach" => attach::USAGE,
        "help" | "-h" | "--help" => USAGE,
        _ => return None,
    })
}

/// `fugue [serve] ...`: the sandbox flags, then a server or a front for a shared one.
fn serve_command(words: &[&str]) -> ExitCode {
    let (flags, rest) = match sandbox::Flags::parse(words) {
        Ok(parsed) => parsed,
        Err(why) => return usage_error(&why),
    };
    let shared = match rest.as_slice() {
        [] => std::env::var("FUGUE_SERVER").ok().filter(|n| !n.is_empty()),
        ["--shared"] => Some("default".to_string()),
        ["--shared", name] => Some((*name).to_string()),
        _ => {
            return usage_error("serve takes no arguments but --shared [NAME] and sandbox options");
        }
    };
    // A front's policy is what it asks of the shared server (which it starts with it).
    let policy = match sandbox_policy(flags) {
        Ok(policy) => policy,
        Err(why) => return usage_error(&why),
    };
    match shared {
        Some(name) => server::front::serve(&name, &policy),
        None => serve(policy),
    }
}

/// The server's sandbox policy, made before anything starts and handed to the runtime; with a
/// sandbox, fugue's temporary directories go into one private directory that the panes cannot
/// see. Without one, fugue's directories are known all the same, for a call that asks for a
/// sandbox of its own to cover them.
fn sandbox_policy(flags: sandbox::Flags) -> Result<Arc<sandbox::Policy>, String> {
    let policy = flags.policy(&own_cwd(), Vec::new())?;
    let mut hidden = vec![control::dir::path()];
    let state_dir = &config::config().state_dir;
    if let Some(dir) = state_dir {
        hidden.push(dir.clone());
    }
    let state_in_roots = state_dir.is_none();
    hidden.extend(sandbox::state_dirs(&policy.writable, state_in_roots));
    if let Ok(log) = server::log_path("default")
        && let Some(dir) = log.parent().and_then(std::path::Path::parent)
    {
        hidden.push(dir.to_path_buf());
    }
    let private = if policy.mode == sandbox::Mode::Off {
        tempdir::private_path(false)
    } else {
        tempdir::private_base()
    };
    let private = private.map_err(|e| e.to_string())?;
    hidden.push(private.clone());
    Ok(Arc::new(sandbox::Policy { hidden, private, state_in_roots, ..policy }))
}

fn serve(policy: Arc<sandbox::Policy>) -> ExitCode {
    let (stop_tx, stop_rx) = crossbeam_channel::bounded::<Stop>(8);
    let on_signal = stop_tx.clone();
    if let Err(e) = ctrlc::set_handler(move || {
        let _ = on_signal.try_send(Stop::Signal);
    }) {
        log::warn(&format!("cannot install the signal handler: {e}"));
    }
    let runtime = Arc::new(Runtime::start(true, policy));
    let mcp = Arc::new(Mcp::new(runtime.clone(), own_cwd()));
    // Before the stdin loop starts, so the socket exists once the client has its first answer.
    let control = control::socket::start(mcp.clone(), Box::new(|| None))
        .map_err(|e| {
            log::warn(&format!("no control socket (fugue ls and attach cannot see us): {e}"))
        })
        .ok();
    let writer = Arc::new(Writer::new(Box::new(std::io::stdout()), stop_tx.clone()));
    let connection = Connection::new(mcp, writer, rpc::Bounds::of(&runtime.config));
    let reader = connection.clone();
    let started = std::thread::Builder::new()
        .name("stdin".into())
        .spawn(move || reader.read_loop(std::io::stdin().lock(), stop_tx));
    if let Err(e) = started {
        log::error(&format!("cannot start the stdin reader: {e}"));
        return ExitCode::FAILURE;
    }
    let why = stop_rx.recv().unwrap_or(Stop::Eof);
    log::info(&format!("stopping: {why:?}"));
    connection.cancel_all();
    // Gone from `fugue ls` at once; attached clients see the end when the process exits.
    drop(control);
    runtime.shutdown();
    sandbox::net::stop();
    sandbox::shared_tmp::remove();
    // The stdin thread may be blocked in read(); the process exit ends it.
    std::process::exit(0)
}

/// fugue's working directory, the base of its calls' paths. If it cannot be read (it was
/// removed), `.` makes each pane that needs it fail with why, as the process's own calls would.
fn own_cwd() -> std::path::PathBuf {
    std::env::current_dir().unwrap_or_else(|_| ".".into())
}

/// A tool and its arguments from the command line, checked.
fn call_args(
    name: &str,
    json: &str,
) -> Result<(&'static tool::Registered<Runtime>, Map<String, Value>), ExitCode> {
    let Some(tool) = mcp::registry::find(name) else {
        return Err(usage_error(&format!("unknown tool {name:?}; `fugue tools` lists them")));
    };
    match crate::tool::order::parse(json.as_bytes()) {
        Ok(Value::Object(map)) => Ok((tool, map)),
        Ok(_) => Err(usage_error("the arguments must be a JSON object")),
        Err(e) => Err(usage_error(&format!("the arguments are not valid JSON: {e}"))),
    }
}

fn call(name: &str, json: &str) -> ExitCode {
    let (tool, arguments) = match call_args(name, json) {
        Ok(checked) => checked,
        Err(code) => return code,
    };
    // FUGUE_SANDBOX confines the call's panes as it does a server's.
    let policy = match sandbox::Flags::parse(&[]).and_then(|(flags, _)| sandbox_policy(flags)) {
        Ok(policy) => policy,
        Err(why) => return usage_error(&why),
    };
    let runtime = Runtime::start(false, policy);
    let cancel = Arc::new(Cancel::default());
    let on_signal = cancel.clone();
    let _ = ctrlc::set_handler(move || on_signal.cancel());
    let progress = Progress::none();
    let cwd = own_cwd();
    let ctx = tool::Ctx { runtime: &runtime, cwd: &cwd, cancel: &cancel, progress: &progress };
    let result = crate::mcp::shaped(remote::call(tool, &ctx, &arguments));
    runtime.shutdown();
    print_result(&result)
}

/// `fugue call --shared NAME TOOL JSON`: the same call, made in shared server NAME.
fn call_shared(server: &str, name: &str, json: &str) -> ExitCode {
    let (tool, arguments) = match call_args(name, json) {
        Ok(checked) => checked,
        Err(code) => return code,
    };
    let policy = match sandbox::Flags::parse(&[]).and_then(|(flags, _)| sandbox_policy(flags)) {
        Ok(policy) => policy,
        Err(why) => return usage_error(&why),
    };
    match server::front::call(server, tool.tool.name, &Value::Object(arguments), &policy) {
        Ok(result) => print_result(&result),
        Err(e) => {
            log::error(&e);
            ExitCode::FAILURE
        }
    }
}

/// A tool's result as `fugue call` prints it: the structured content; failing if it failed.
fn print_result(result: &Value) -> ExitCode {
    let failed = result["isError"] == Value::Bool(true);
    let body = serde_json::to_string_pretty(&result["structuredContent"]).unwrap_or_default();
    print_out(&format!("{body}\n"));
    if failed { ExitCode::FAILURE } else { ExitCode::SUCCESS }
}

fn list_tools() -> ExitCode {
    let mut text = String::new();
    for tool in mcp::registry::all().iter().map(|r| r.tool) {
        let first = tool.description.split(". ").next().unwrap_or("").trim_end_matches('.');
        text.push_str(&format!("{:<32} {first}\n", tool.name));
    }
    print_out(&text)
}
