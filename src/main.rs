//! fugue: a terminal multiplexer for AI agents, speaking MCP over stdio.
//!
//! This file runs the command line: `cli` reads it once into a typed `Invocation`, and each command
//! goes to one function. `serve` wires the pieces together — the runtime that owns panes and agent pipelines
//! (`runtime`), the protocol (`mcp`), the line loop (`rpc`), the control socket that `ls` and
//! `attach` use (`control`) — and waits for a reason to stop: end of input, a signal, or a broken
//! stdout. Stopping ends every process fugue started and removes the socket.

mod agent;
mod attach;
mod cancel;
mod cli;
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
mod passwd;
mod procfs;
mod remote;
mod rpc;
mod runtime;
mod sandbox;
mod server;
mod shell;
mod sort;
mod tempdir;
mod threads;
mod tool;
mod tools;
mod usage;
mod waiter;
mod watch;
mod words;

use cancel::Cancel;
use cli::{Invocation, Misuse};
use mcp::Mcp;
use rpc::{Connection, StopCause, Writer};
use runtime::Runtime;
use serde_json::{Map, Value};
use std::process::ExitCode;
use std::sync::Arc;
use tool::call::Progress;
use usage::{print_out, usage_error};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match cli::parse(&args) {
        Ok(command) => run(command),
        Err(Misuse::Usage(why)) => usage_error(&why),
        Err(Misuse::Verdict(why)) => agent::verdict::misuse(&why),
        Err(Misuse::Launcher) => sandbox::launch::misuse(),
    }
}

/// Hands the command to its front-end, with its typed options.
fn run(command: Invocation) -> ExitCode {
    match command {
        Invocation::SandboxExec { plan, program } => sandbox::launch::main(&plan, &program),
        Invocation::SandboxNet => sandbox::net::holder_main(),
        Invocation::SandboxLayout { plan } => sandbox::template::holder_main(&plan),
        Invocation::Serve { flags, shared } => serve_command(flags, shared),
        Invocation::Server { name, flags } => match sandbox_policy(flags) {
            Ok(policy) => {
                server::daemon::main(&name, policy, config::config().state_dir.as_deref())
            }
            Err(why) => usage_error(&why),
        },
        Invocation::KillServer { name } => server::cli::kill_server(&name),
        Invocation::Call { shared, tool, arguments, flags } => match sandbox_policy(flags) {
            Ok(policy) => match shared {
                Some(server) => call_shared(&server, tool, arguments, &policy),
                None => call(tool, &arguments, policy),
            },
            Err(why) => usage_error(&why),
        },
        Invocation::Help(usage) => print_out(usage),
        Invocation::Version => print_out(&format!("fugue {}\n", env!("CARGO_PKG_VERSION"))),
        Invocation::Tools => list_tools(),
        Invocation::Verdict(args) => agent::verdict::cli(args),
        Invocation::Ls(args) => attach::ls::run(&args),
        Invocation::Attach(args) => attach::run(args),
    }
}

/// `fugue [serve] ...`: a server, or a front for shared server `shared`.
fn serve_command(flags: sandbox::Flags, shared: Option<String>) -> ExitCode {
    // A front's policy is what it asks of the shared server (which it starts with it).
    let policy = match sandbox_policy(flags) {
        Ok(policy) => policy,
        Err(why) => return usage_error(&why),
    };
    match shared {
        Some(name) => server::front::serve(&name, &policy, config::config()),
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
    if let Ok(log) = server::log_path(state_dir.as_deref(), "default")
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
    let (stop_tx, stop_rx) = crossbeam_channel::bounded::<StopCause>(8);
    let on_signal = stop_tx.clone();
    if let Err(e) = ctrlc::set_handler(move || {
        let _ = on_signal.try_send(StopCause::Signal);
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
    let started = threads::spawn(
        "stdin",
        None,
        Box::new(move || reader.read_loop(std::io::stdin().lock(), stop_tx)),
    );
    if let Err(e) = started {
        log::error(&format!("cannot start the stdin reader: {e}"));
        return ExitCode::FAILURE;
    }
    let why = stop_rx.recv().unwrap_or(StopCause::Eof);
    log::info(&format!("stopping: {why:?}"));
    connection.cancel_all();
    // Gone from `fugue ls` at once; attached clients see the end when the process exits.
    drop(control);
    runtime.shutdown();
    // The stdin thread may be blocked in read(); the process exit ends it.
    std::process::exit(0)
}

/// fugue's working directory, the base of its calls' paths. If it cannot be read (it was
/// removed), `.` makes each pane that needs it fail with why, as the process's own calls would.
fn own_cwd() -> std::path::PathBuf {
    std::env::current_dir().unwrap_or_else(|_| ".".into())
}

/// `fugue call TOOL JSON`: the tool run in this process, whose panes end with it.
fn call(
    tool: &'static tool::Registered<Runtime>,
    arguments: &Map<String, Value>,
    policy: Arc<sandbox::Policy>,
) -> ExitCode {
    let runtime = Runtime::start(false, policy);
    let cancel = Arc::new(Cancel::default());
    let on_signal = cancel.clone();
    let _ = ctrlc::set_handler(move || on_signal.cancel());
    let progress = Progress::none();
    let cwd = own_cwd();
    let ctx = tool::Ctx { runtime: &runtime, cwd: &cwd, cancel: &cancel, progress: &progress };
    let result = crate::mcp::shaped(remote::call(tool, &ctx, arguments));
    runtime.shutdown();
    print_result(&result)
}

/// `fugue call --shared NAME TOOL JSON`: the same call, made in shared server NAME.
fn call_shared(
    server: &str,
    tool: &'static tool::Registered<Runtime>,
    arguments: Map<String, Value>,
    policy: &sandbox::Policy,
) -> ExitCode {
    let arguments = Value::Object(arguments);
    match server::front::call(server, tool.tool.name, &arguments, policy, config::config()) {
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
