//! Orchestration tools: one call instead of a polling loop.
//!
//! `expect` waits for a pattern in a pane's output, `parallel` fans commands out over panes, and
//! `pipeline` runs steps in one shell. All of them block on pane events and the call's cancel
//! channel with deadlines; none of them sleeps to poll. This file holds what they share: argument
//! checks, the text tail of a stretch of output, exit fields, and closing many panes at once.

pub(crate) mod expect;
pub(crate) mod parallel;
pub(crate) mod pipeline;

use crate::error::{Error, ErrorKind, Result};
use crate::mux::Mux;
use crate::pane::output::Exit;
use crate::pane::process::signal_name;
use crate::pane::{Pane, text};
use crate::runtime::Tool;
use crate::tool::args::Args;
use serde_json::{Value, json};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// The orchestration tools in `tools/list` order.
pub(crate) static TOOLS: &[Tool] = &[expect::TOOL, parallel::TOOL, pipeline::TOOL];

/// How often a waiting call reports progress when the client asked for it (the spec wants at
/// most 2 s between notifications).
pub(crate) const HEARTBEAT: Duration = Duration::from_secs(1);

/// The longest total timeout `fugue_run_parallel` and `fugue_run_pipeline` accept: one day.
const MAX_RUN_TIMEOUT_MS: u64 = 86_400_000;

/// The most lines an `output_tail` may ask for.
const MAX_TAIL_LINES: u64 = 1000;

/// The most bytes of one `output_tail`: a red result should cost a few hundred tokens, not a
/// minified bundle printed on one line.
const MAX_TAIL_BYTES: usize = 16 << 10;

/// How far back from its end a tail looks for line starts.
const TAIL_SCAN_BYTES: u64 = 256 << 10;

/// The `timeout_ms` argument of a run tool, with its default.
pub(crate) fn run_timeout(args: &Args<'_>, default_ms: u64) -> Result<Duration> {
    let ms = args.u64("timeout_ms", 1, MAX_RUN_TIMEOUT_MS)?.unwrap_or(default_ms);
    Ok(Duration::from_millis(ms))
}

/// The `tail_lines` argument, default 10; 0 turns tails off.
pub(crate) fn tail_lines(args: &Args<'_>) -> Result<usize> {
    Ok(args.u64("tail_lines", 0, MAX_TAIL_LINES)?.unwrap_or(10) as usize)
}

/// A command to run: non-empty, no NUL (it cannot pass through exec or a file read by a shell).
pub(crate) fn command(item: &Args<'_>, what: &str) -> Result<String> {
    let command = match item.str("command")? {
        Some(c) => c,
        None => return Err(Error::invalid(format!("{what}: 'command' is required"))),
    };
    if command.trim().is_empty() {
        return Err(Error::invalid(format!("{what}: 'command' is empty")));
    }
    if command.contains('\0') {
        return Err(Error::invalid(format!("{what}: 'command' contains NUL")));
    }
    Ok(command.to_string())
}

/// Checks a working directory before anything starts, so a typo fails the call instead of one
/// command in the middle of it.
pub(crate) fn check_cwd(cwd: &Path, what: &str) -> Result<()> {
    match std::fs::metadata(cwd) {
        Ok(meta) if meta.is_dir() => Ok(()),
        Ok(_) => Err(Error::new(
            ErrorKind::BadCwd,
            format!("{what}: cwd {} is not a directory", cwd.display()),
        )),
        Err(e) => Err(Error::new(ErrorKind::BadCwd, format!("{what}: cwd {}: {e}", cwd.display()))),
    }
}

/// Rejects a name used twice, since results and `failed_at` refer to steps by name.
pub(crate) fn check_unique(names: &[String], what: &str) -> Result<()> {
    for (i, name) in names.iter().enumerate() {
        if names[..i].contains(name) {
            return Err(Error::invalid(format!(
                "two {what} are named {name:?}; names must be unique"
            )));
        }
    }
    Ok(())
}

/// Adds `exit_code` (null when there is none) and, only when a signal ended the process,
/// `signal`.
pub(crate) fn add_exit(value: &mut Value, exit: Option<Exit>) {
    value["exit_code"] = json!(exit.and_then(|e| e.code));
    if let Some(signal) = exit.and_then(|e| e.signal) {
        value["signal"] = json!(signal_name(signal));
    }
}

/// The last `lines` lines, in the text view, of the output between the offsets `from` and `to`,
/// at most `MAX_TAIL_BYTES`. Only the end of the range is rendered, so a command that printed
/// megabytes costs no more than one that printed a page.
pub(crate) fn tail(pane: &Pane, from: u64, to: u64, lines: usize) -> String {
    if lines == 0 || to <= from {
        return String::new();
    }
    let scan_from = from.max(to.saturating_sub(TAIL_SCAN_BYTES));
    let (bytes, start) = pane.output().with(|s| s.ring.copy(scan_from, to));
    let mut begin = line_start_back(&bytes, lines);
    if begin == 0 && start > from {
        // The copy starts inside a line that began earlier: drop that fragment.
        begin = bytes.iter().position(|b| *b == b'\n').map_or(0, |i| i + 1);
    }
    let rendered = text::render(&bytes[begin..]);
    let skip = rendered.len().saturating_sub(lines);
    clip_front(rendered[skip..].join("\n"), MAX_TAIL_BYTES)
}

/// The start of the line `lines` lines back from the end of `bytes` (0 when there are fewer).
fn line_start_back(bytes: &[u8], lines: usize) -> usize {
    let mut end = bytes.len();
    // A final newline ends the last line; it does not begin an empty one.
    if end > 0 && bytes[end - 1] == b'\n' {
        end -= 1;
    }
    bytes[..end]
        .iter()
        .enumerate()
        .rev()
        .filter(|(_, b)| **b == b'\n')
        .nth(lines - 1)
        .map_or(0, |(i, _)| i + 1)
}

/// Keeps the last `max` bytes of `text`, cut at a character boundary.
fn clip_front(text: String, max: usize) -> String {
    if text.len() <= max {
        return text;
    }
    let mut start = text.len() - max;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    text[start..].to_string()
}

/// Ends panes together (the first on this thread, each other on its own), so ten stuck commands
/// take one close grace, not ten. `detach` also removes them from the registry (before any signal, as `fugue_close_pane`
/// does); otherwise they stay, dead, with their output readable until someone closes them.
pub(crate) fn close_panes(mux: &Mux, panes: &[Arc<Pane>], detach: bool) {
    let close = |pane: &Arc<Pane>| {
        if detach {
            // A pane someone else closed meanwhile is already gone: nothing to do.
            let _ = mux.close_pane(&pane.id);
        } else {
            pane.close();
        }
    };
    std::thread::scope(|scope| {
        // The first on this thread: closing one pane should not cost a thread.
        for pane in panes.iter().skip(1) {
            scope.spawn(move || close(pane));
        }
        if let Some(first) = panes.first() {
            close(first);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_starts_are_found_from_the_end() {
        assert_eq!(line_start_back(b"a\nb\nc\n", 2), 2);
        assert_eq!(line_start_back(b"a\nb\nc", 2), 2);
        assert_eq!(line_start_back(b"a\nb\nc\n", 5), 0);
        assert_eq!(line_start_back(b"", 1), 0);
    }

    #[test]
    fn clipping_keeps_whole_characters() {
        assert_eq!(clip_front("abc✓".to_string(), 2), "");
        assert_eq!(clip_front("abc✓".to_string(), 3), "✓");
        assert_eq!(clip_front("ab".to_string(), 5), "ab");
    }

    #[test]
    fn duplicate_names_are_refused() {
        assert!(check_unique(&["a".into(), "b".into()], "steps").is_ok());
        let err = check_unique(&["a".into(), "a".into()], "steps").unwrap_err();
        assert!(err.message().contains("\"a\""));
    }
}
