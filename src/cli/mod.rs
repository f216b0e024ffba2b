//! The command line, parsed once: every word `main` is given becomes one typed [`Invocation`], each
//! variant holding its command's options, and each front-end takes its own typed options; no
//! front-end reads words.
//!
//! Three commands are fugue's own: `__sandbox-exec` (a pane's launcher), `__sandbox-net` (the
//! network holder) and `__sandbox-layout` (a layout template's holder) are read before anything else, since the pane's own command line follows.
//! A misuse says which front-end explains it, since each has its own way (`Misuse`).

mod sandbox_flags;

use crate::agent::record::AnalyzerVerdict;
use crate::agent::verdict;
use crate::attach::{self, ls};
use crate::runtime::Runtime;
use crate::sandbox::Flags;
use crate::usage::USAGE;
use crate::words::Words;
use crate::{mcp, server, tool};
use serde_json::{Map, Value};
use std::path::PathBuf;

pub(crate) use sandbox_flags::parse as sandbox_flags;

/// One command line, read.
pub(crate) enum Invocation {
    /// `fugue [serve] [SANDBOX OPTIONS] [--shared [NAME]]`: a server, or a front for shared
    /// server `shared`.
    Serve { flags: Flags, shared: Option<String> },
    /// `fugue __server NAME [SANDBOX OPTIONS]`: shared server NAME itself, as a front starts it.
    Server { name: String, flags: Flags },
    /// `fugue __sandbox-exec PLAN -- PROGRAM [ARGS...]`.
    SandboxExec { plan: String, program: Vec<String> },
    /// `fugue __sandbox-net`.
    SandboxNet,
    /// `fugue __sandbox-layout PLAN`.
    SandboxLayout { plan: String },
    /// `fugue kill-server [NAME]`.
    KillServer { name: String },
    /// `fugue call [--shared NAME] TOOL [JSON]`: the tool, its arguments, and the sandbox
    /// (from `FUGUE_SANDBOX`) of its panes.
    Call {
        shared: Option<String>,
        tool: &'static tool::Registered<Runtime>,
        arguments: Map<String, Value>,
        flags: Flags,
    },
    /// `fugue tools`.
    Tools,
    /// `fugue verdict VERDICT [OPTIONS]`.
    Verdict(verdict::VerdictArgs),
    /// `fugue ls [--json] [HOST]`.
    Ls(ls::LsArgs),
    /// `fugue attach [--server PID|NAME] [--input] [SPEC]`.
    Attach(attach::AttachArgs),
    /// `fugue help`, `fugue COMMAND --help`: the usage to print.
    Help(&'static str),
    /// `fugue --version`.
    Version,
}

/// A command line that cannot be run, and what to say, in the way of the front-end it names.
#[derive(Debug)]
pub(crate) enum Misuse {
    /// `fugue: MESSAGE` and the usage; exit 2.
    Usage(String),
    /// `fugue verdict: MESSAGE` and its usage; exit 2.
    Verdict(String),
    /// The launcher's line is malformed (exit 125, as every launcher failure).
    Launcher,
}

impl From<String> for Misuse {
    fn from(message: String) -> Self {
        Misuse::Usage(message)
    }
}

/// Reads the command line (the arguments after the program's name).
pub(crate) fn parse(args: &[String]) -> Result<Invocation, Misuse> {
    match args.split_first() {
        Some((first, rest)) if first == "__sandbox-exec" => return launcher(rest),
        Some((first, [])) if first == "__sandbox-net" => return Ok(Invocation::SandboxNet),
        Some((first, [plan])) if first == "__sandbox-layout" => {
            return Ok(Invocation::SandboxLayout { plan: plan.clone() });
        }
        _ => {}
    }
    let words: Vec<&str> = args.iter().map(String::as_str).collect();
    match words.as_slice() {
        [command, rest @ ..] if rest.iter().any(|w| matches!(*w, "-h" | "--help")) => {
            command_usage(command)
                .map(Invocation::Help)
                .ok_or_else(|| Misuse::Usage(format!("unknown command {command:?}")))
        }
        [] => serve(&[]),
        [first, ..] if sandbox_flags::is_flag(first) => serve(&words),
        ["serve", rest @ ..] => serve(rest),
        ["__server", name, flags @ ..] => match sandbox_flags(flags) {
            Ok((flags, rest)) if rest.is_empty() => {
                Ok(Invocation::Server { name: (*name).to_string(), flags })
            }
            _ => Err(Misuse::Usage("__server takes a name and sandbox flags".into())),
        },
        ["kill-server", rest @ ..] => kill_server(rest),
        ["call", "--shared", name, tool] => call(Some(name), tool, "{}"),
        ["call", "--shared", name, tool, json] => call(Some(name), tool, json),
        ["-h" | "--help" | "help"] => Ok(Invocation::Help(USAGE)),
        ["-V" | "--version"] => Ok(Invocation::Version),
        ["tools"] => Ok(Invocation::Tools),
        ["tools", ..] => Err(Misuse::Usage("tools takes no arguments".into())),
        ["verdict", rest @ ..] => {
            verdict_args(rest).map(Invocation::Verdict).map_err(Misuse::Verdict)
        }
        ["ls", rest @ ..] => ls_args(rest).map(Invocation::Ls),
        ["attach", rest @ ..] => attach_args(rest).map(Invocation::Attach),
        ["call", tool] => call(None, tool, "{}"),
        ["call", tool, json] => call(None, tool, json),
        ["call", ..] => {
            Err(Misuse::Usage("call takes a tool name and at most one JSON argument object".into()))
        }
        [other, ..] => Err(Misuse::Usage(format!("unknown command {other:?}"))),
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
        "verdict" => verdict::USAGE,
        "ls" => ls::USAGE,
        "kill-server" => server::cli::USAGE,
        "attach" => attach::USAGE,
        "help" | "-h" | "--help" => USAGE,
        _ => return None,
    })
}

fn launcher(rest: &[String]) -> Result<Invocation, Misuse> {
    match rest {
        [plan, dash, program @ ..] if dash == "--" && !program.is_empty() => {
            Ok(Invocation::SandboxExec { plan: plan.clone(), program: program.to_vec() })
        }
        _ => Err(Misuse::Launcher),
    }
}

/// `fugue [serve] ...`: the sandbox flags, then `--shared [NAME]` or nothing.
fn serve(words: &[&str]) -> Result<Invocation, Misuse> {
    let (flags, rest) = sandbox_flags(words)?;
    let shared = match rest.as_slice() {
        [] => std::env::var("FUGUE_SERVER").ok().filter(|n| !n.is_empty()),
        ["--shared"] => Some("default".to_string()),
        ["--shared", name] => Some((*name).to_string()),
        _ => {
            return Err(Misuse::Usage(
                "serve takes no arguments but --shared [NAME] and sandbox options".into(),
            ));
        }
    };
    Ok(Invocation::Serve { flags, shared })
}

fn kill_server(rest: &[&str]) -> Result<Invocation, Misuse> {
    match rest {
        [] => Ok(Invocation::KillServer { name: "default".into() }),
        [name] => Ok(Invocation::KillServer { name: (*name).to_string() }),
        _ => Err(Misuse::Usage("kill-server takes at most one server NAME".into())),
    }
}

/// A tool and its arguments, checked; the sandbox of its panes from `FUGUE_SANDBOX`, as a
/// server's.
fn call(shared: Option<&str>, name: &str, json: &str) -> Result<Invocation, Misuse> {
    let Some(tool) = mcp::registry::find(name) else {
        return Err(Misuse::Usage(format!("unknown tool {name:?}; `fugue tools` lists them")));
    };
    let arguments = match tool::order::parse(json.as_bytes()) {
        Ok(Value::Object(map)) => map,
        Ok(_) => return Err(Misuse::Usage("the arguments must be a JSON object".into())),
        Err(e) => return Err(Misuse::Usage(format!("the arguments are not valid JSON: {e}"))),
    };
    let (flags, _) = sandbox_flags(&[])?;
    Ok(Invocation::Call { shared: shared.map(str::to_string), tool, arguments, flags })
}

fn ls_args(rest: &[&str]) -> Result<ls::LsArgs, Misuse> {
    let (json, host) = match rest {
        [] => (false, None),
        ["--json"] => (true, None),
        [host] => (false, Some(*host)),
        [host, "--json"] | ["--json", host] => (true, Some(*host)),
        _ => return Err(Misuse::Usage("ls takes no arguments but --json and a HOST".into())),
    };
    Ok(ls::LsArgs { json, host: host.map(str::to_string) })
}

/// `fugue verdict VERDICT [--reason TEXT] [--prompt TEXT | --prompt-file PATH] [--cost USD]
/// [--file PATH]`.
fn verdict_args(rest: &[&str]) -> Result<verdict::VerdictArgs, String> {
    let (word, rest) = rest
        .split_first()
        .ok_or_else(|| format!("which verdict: {}?", AnalyzerVerdict::words()))?;
    let verdict = AnalyzerVerdict::from_word(word)
        .ok_or_else(|| format!("{word:?} is not one of {}", AnalyzerVerdict::words()))?;
    let mut args =
        verdict::VerdictArgs { verdict, reason: None, prompt: None, cost: None, file: None };
    let mut rest = rest.iter();
    while let Some(flag) = rest.next() {
        let mut value =
            || rest.next().map(|v| v.to_string()).ok_or(format!("{flag} needs a value"));
        match *flag {
            "--reason" => args.reason = Some(value()?),
            "--prompt" => args.prompt = Some(verdict::FollowUp::Text(value()?)),
            "--prompt-file" => args.prompt = Some(verdict::FollowUp::File(value()?)),
            "--cost" => args.cost = Some(cost(&value()?)?),
            "--file" => args.file = Some(PathBuf::from(value()?)),
            other => return Err(format!("unknown option {other:?}")),
        }
    }
    Ok(args)
}

/// `--cost USD`: a finite, non-negative number.
fn cost(text: &str) -> Result<f64, String> {
    let usd: f64 = text.parse().map_err(|_| format!("--cost {text:?} is not a number"))?;
    if !usd.is_finite() || usd < 0.0 {
        return Err(format!("--cost {text} must be a non-negative number"));
    }
    Ok(usd)
}

fn attach_args(rest: &[&str]) -> Result<attach::AttachArgs, Misuse> {
    let mut args = attach::AttachArgs { server: None, input: false, spec: None };
    let mut words = rest.iter();
    while let Some(word) = words.next() {
        match *word {
            "--input" => args.input = true,
            "--server" => {
                let pid = words.next().ok_or_else(|| {
                    Misuse::Usage("--server needs a pid or a shared server's name".into())
                })?;
                args.server = Some(match pid.parse() {
                    Ok(pid) => attach::Server::Pid(pid),
                    Err(_) if server::check_name(pid).is_ok() => {
                        attach::Server::Name((*pid).to_string())
                    }
                    Err(_) => {
                        return Err(Misuse::Usage(format!(
                            "--server {pid:?} is not a pid or a name"
                        )));
                    }
                });
            }
            flag if flag.starts_with('-') => {
                return Err(Misuse::Usage(format!("attach has no option {flag}")));
            }
            spec if args.spec.is_none() => args.spec = Some(spec.to_string()),
            _ => return Err(Misuse::Usage("attach takes one SESSION[:WINDOW] at most".into())),
        }
    }
    Ok(args)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn words(line: &[&str]) -> Vec<String> {
        line.iter().map(|w| w.to_string()).collect()
    }

    fn verdict_line(line: &[&str]) -> Result<(PathBuf, Value), String> {
        verdict::build(verdict_args(line)?)
    }

    #[test]
    fn the_cli_builds_what_the_reader_accepts() {
        let (path, value) = verdict_line(&[
            "followup", "--reason", "r", "--prompt", "do x", "--cost", "1.5", "--file", "/tmp/v",
        ])
        .unwrap();
        assert_eq!(path, PathBuf::from("/tmp/v"));
        let v = verdict::parse(&value).unwrap();
        assert_eq!(v.followup_prompt.as_deref(), Some("do x"));
        assert_eq!(v.cost_usd, Some(1.5));
        for bad in [
            &["maybe", "--reason", "r", "--file", "f"][..],
            &["followup", "--reason", "r", "--file", "f"],
            &["complete", "--reason", "r", "--cost", "-2", "--file", "f"],
            &["complete", "--reason", "r", "--bogus", "--file", "f"],
            &["complete", "--reason"],
            &[],
        ] {
            assert!(verdict_line(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_reason_is_optional_but_a_followup_needs_its_prompt() {
        for word in ["complete", "failed"] {
            let (_, value) = verdict_line(&[word, "--file", "f"]).unwrap();
            assert_eq!(value, json!({"verdict": word}));
            assert_eq!(verdict::parse(&value).unwrap().reason, verdict::NO_REASON);
        }
        let err = verdict_line(&["followup", "--file", "f"]).unwrap_err();
        assert!(err.contains("--prompt"), "{err}");
    }

    #[test]
    fn attach_options_parse() {
        let o = attach_args(&["--server", "42", "--input", "build:0"]).unwrap();
        assert!(matches!(o.server, Some(attach::Server::Pid(42))));
        assert_eq!((o.input, o.spec.as_deref()), (true, Some("build:0")));
        let named = attach_args(&["--server", "work"]).unwrap();
        assert!(matches!(named.server, Some(attach::Server::Name(n)) if n == "work"));
        assert!(attach_args(&["--server"]).is_err());
        assert!(attach_args(&["--server", "x/y"]).is_err());
        assert!(attach_args(&["a", "b"]).is_err());
        assert!(attach_args(&["--follow"]).is_err());
    }

    #[test]
    fn each_command_line_reads_as_its_command() {
        let read = |line: &[&str]| parse(&words(line));
        assert!(
            matches!(read(&["ls", "--json", "box"]), Ok(Invocation::Ls(a)) if a.json && a.host.as_deref() == Some("box"))
        );
        assert!(
            matches!(read(&["kill-server"]), Ok(Invocation::KillServer { name }) if name == "default")
        );
        assert!(
            matches!(read(&["serve", "--shared", "w"]), Ok(Invocation::Serve { shared: Some(n), .. }) if n == "w")
        );
        assert!(
            matches!(read(&["attach", "--help"]), Ok(Invocation::Help(u)) if u == attach::USAGE)
        );
        assert!(matches!(
            read(&["__sandbox-exec", "{}", "--", "sh"]),
            Ok(Invocation::SandboxExec { .. })
        ));
        assert!(matches!(read(&["__sandbox-exec", "{}"]), Err(Misuse::Launcher)));
        assert!(
            matches!(read(&["call", "no_such_tool"]), Err(Misuse::Usage(m)) if m.contains("unknown tool"))
        );
        assert!(matches!(read(&["kill-server", "a", "b"]), Err(Misuse::Usage(_))));
        assert!(
            matches!(read(&["frobnicate"]), Err(Misuse::Usage(m)) if m == "unknown command \"frobnicate\"")
        );
    }
}
