//! The sandbox's own helper processes, the network holder (`net`) and the layout holders
//! (`template`): each is fugue's own binary, started with its stdio piped, says `ready` (and what
//! it has to tell) on its first line or why not on stderr, and ends when its stdin closes.

use crate::error::{Error, ErrorKind, Result};
use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Stdio};

/// Starts `cmd` and waits for its first line: the child and what follows `ready` on it, or the
/// child's own words on why it could not, after `what`, as `sandbox_unavailable`.
pub(super) fn start(cmd: &mut Command, what: &str) -> Result<(Child, String)> {
    let unavailable = |why: String| Error::new(ErrorKind::SandboxUnavailable, why);
    cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = crate::inherit::spawn(cmd)
        .map_err(|e| unavailable(format!("{what}: cannot start: {e}")))?;
    let mut line = String::new();
    if let Some(out) = child.stdout.take() {
        let _ = BufReader::new(out).read_line(&mut line);
    }
    let said = line.trim_end().strip_prefix("ready").map(|rest| rest.trim().to_string());
    if let Some(said) = said {
        return Ok((child, said));
    }
    let mut why = String::new();
    if let Some(mut err) = child.stderr.take() {
        let _ = err.read_to_string(&mut why);
    }
    let _ = child.kill();
    end(child);
    let why = why.trim().trim_start_matches("fugue: sandbox unavailable: ");
    Err(unavailable(format!("{what}: {why}")))
}

/// Ends a helper: closing its stdin is its signal; then it is reaped.
pub(super) fn end(mut child: Child) {
    drop(child.stdin.take());
    let _ = child.wait();
}
