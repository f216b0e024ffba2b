//! The command line's words to a person: the usage, command output on stdout, and a usage error.
//!
//! A leaf below `main` and the commands it hands off to (`attach`, `ls`, `kill-server`), which
//! answer a person the same way.

use std::io::Write;
use std::process::ExitCode;

pub(crate) const USAGE: &str = "\
fugue — a terminal multiplexer for AI agents, speaking MCP over stdio

Usage:
  fugue [serve]            run the MCP server on stdin/stdout (logs go to stderr)
  fugue [serve] --sandbox workspace-write|read-only [--writable DIR] [--network on|off] ...
                           the same, each pane's processes confined by the kernel (FUGUE_SANDBOX)
  fugue serve --shared [NAME]
                           be a front for this user's shared server NAME (default: default),
                           starting it if needed; its panes outlive the front (also FUGUE_SERVER)
  fugue call TOOL [JSON]   run one tool in-process and print its JSON result
  fugue call --shared NAME TOOL [JSON]
                           the same, in shared server NAME (starting it if needed)
  fugue kill-server [NAME] end shared server NAME and every process it started
  fugue tools              list the tools, one line each
  fugue verdict complete|followup|failed [--reason TEXT] [--prompt TEXT] [--cost USD]
                           write an agent-pipeline verdict to $FUGUE_VERDICT_FILE
  fugue ls [--json]        list the running fugue servers with their sessions and panes
  fugue attach [--server PID|NAME] [--input] [SESSION[:WINDOW]]
                           watch a window's panes live in this terminal (C-b ? lists the keys)
  fugue --help | --version
  fugue COMMAND --help     one command's usage

Environment: FUGUE_SERVER, FUGUE_SANDBOX, FUGUE_SHELL, FUGUE_STATE_DIR, FUGUE_LOG, FUGUE_SCROLLBACK_BYTES, FUGUE_MAX_PANES,
FUGUE_MAX_SESSIONS, FUGUE_MAX_CALLS, FUGUE_MAX_LINE_BYTES, FUGUE_MAX_OUTPUT_BYTES (see fugue(1)).
";

/// Command output (not the protocol): `--help`, `tools`, `call`, `ls`, the end of `attach`.
pub(crate) fn print_out(text: &str) -> ExitCode {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|_| out.flush()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(_) => ExitCode::FAILURE,
    }
}

/// A command line fugue cannot take: the message, then the usage, on stderr; exit status 2.
pub(crate) fn usage_error(message: &str) -> ExitCode {
    let _ = writeln!(std::io::stderr(), "fugue: {message}\n\n{USAGE}");
    ExitCode::from(2)
}
