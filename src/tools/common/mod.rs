//! What the tools that run commands share, below their handlers (`tools::parallel`,
//! `tools::pipeline`, `tools::expect`, `tools::wait` and the wait behind `fugue_exec`): argument checks and their schemas, the text tail of a stretch of output,
//! closing a run's panes at once, stopping a program that asks (`asking`), and answering it with
//! the `responses` given up front (`responses`). In: arguments and panes; out: checked values,
//! tails, closed panes, typed answers. Nothing here waits: the handlers sleep in the one `Waiter`.

pub(crate) mod asking;
pub(crate) mod responses;

use crate::config::Config;
use crate::error::{Error, Result};
use crate::mux::Mux;
use crate::pane::Pane;
use crate::pane::budget::{self, Budget, Fitted};
use crate::pane::search::compile;
use crate::tool::args::Args;
use crate::tool::choice::Choice;
use crate::tool::schema::{integer_or, string};
use crate::words::words;
use regex::Regex;
use serde_json::Value;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// The longest total timeout `fugue_run_parallel` and `fugue_run_pipeline` accept: one day.
const MAX_RUN_TIMEOUT_MS: u64 = 86_400_000;

/// The most lines an `output_tail` may ask for.
const MAX_TAIL_LINES: u64 = 1000;

/// The least bytes one `output_tail` gets when several share the answer's budget.
const MIN_TAIL_BYTES: usize = 512;

/// The default `tail_lines` of both run tools.
const TAIL_LINES: u64 = 10;

words! {
    /// Which results of a run get an `output_tail`; the default keeps a green run small.
    enum WhichTails {
        Failed = "failed",
        All = "all",
    }
}

/// The `timeout_ms` argument of a run tool, with its default (the one its schema declares).
pub(crate) fn run_timeout(args: &Args<'_>, default_ms: u64) -> Result<Duration> {
    let ms = args.u64("timeout_ms", 1, MAX_RUN_TIMEOUT_MS)?.unwrap_or(default_ms);
    Ok(Duration::from_millis(ms))
}

/// The `tail_lines` argument; 0 turns tails off.
pub(crate) fn tail_lines(args: &Args<'_>) -> Result<usize> {
    Ok(args.u64("tail_lines", 0, MAX_TAIL_LINES)?.unwrap_or(TAIL_LINES) as usize)
}

/// The `tails` argument: whether green commands get an `output_tail` too (`all`), or only failed
/// and timed-out ones (`failed`, the default: a green run stays small).
pub(crate) fn all_tails(args: &Args<'_>) -> Result<bool> {
    Ok(WhichTails::parse(args, "tails")? == WhichTails::All)
}

/// The schema of the arguments both run tools share, each with its default.
pub(crate) fn run_schema(timeout_ms: u64) -> [(&'static str, Value); 4] {
    [
        ("timeout_ms", integer_or("Limit for the whole call", timeout_ms)),
        ("tail_lines", integer_or("Lines per output_tail; 0 for none", TAIL_LINES)),
        ("tails", WhichTails::schema("Which results get an output_tail")),
        keep_schema(),
    ]
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
    crate::pane::check_cwd(cwd)
        .map_err(|e| Error::new(e.kind(), format!("{what}: {}", e.message())))
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

/// The last `lines` lines a command printed between the offsets `from` and `to`, at most 16 KB:
/// a progress message, or an error's quote of a shell's last words.
pub(crate) fn tail(pane: &Pane, from: u64, to: u64, lines: usize) -> String {
    crate::pane::tail::lines(pane, from, to, lines, 16 << 10)
}

/// The `keep` argument: a regex for lines that answers keep as they keep errors (see
/// `pane::budget`); checked, like every pattern, before anything runs, and compiled within
/// `limit` bytes (`FUGUE_MAX_REGEX_BYTES`).
pub(crate) fn keep(args: &Args<'_>, limit: usize) -> Result<Option<Regex>> {
    args.str("keep")?.map(|keep| compile(keep, limit)).transpose()
}

/// The schema of `keep`.
pub(crate) fn keep_schema() -> (&'static str, Value) {
    ("keep", string("Regex: more lines to keep"))
}

/// The `output_tail`s of a run's results: the last `tail_lines` lines of each, with the lines
/// that matter before them, the answer's budget shared among the results that show one.
pub(crate) struct Tails {
    pub(crate) lines: usize,
    /// Green results get one too (`tails: all`).
    pub(crate) all: bool,
    pub(crate) keep: Option<Regex>,
    /// The answer's budget, shared among the tails (`budget::default_bytes`).
    pub(crate) bytes: usize,
}

impl Tails {
    /// The run tools' `tail_lines`, `tails` and `keep`, within the limits `config` sets.
    pub(crate) fn parse(args: &Args<'_>, config: &Config) -> Result<Tails> {
        Ok(Tails {
            lines: tail_lines(args)?,
            all: all_tails(args)?,
            keep: keep(args, config.max_regex_bytes)?,
            bytes: budget::default_bytes(config.max_output_bytes),
        })
    }

    /// The tail of what a command printed between `from` and `to`, one of `shown` tails in the
    /// answer; none when `tail_lines` is 0. `stays`: the pane stays, so the lines left out can be
    /// read from it.
    pub(crate) fn of(
        &self,
        pane: &Pane,
        range: (u64, u64),
        shown: usize,
        stays: bool,
    ) -> Option<Fitted> {
        if self.lines == 0 {
            return None;
        }
        let bytes = (self.bytes / shown.max(1)).max(MIN_TAIL_BYTES);
        let tail = budget::output(
            pane,
            range.0,
            range.1,
            &Budget::tail(bytes, self.lines, self.keep.as_ref()),
        );
        Some(if stays { tail } else { tail.without_since() })
    }
}

/// Ends a run's panes together, one close grace for all of them (see `pane::close_panes`).
/// `detach` also removes them from the registry first, as `fugue_close_pane` does; otherwise they
/// stay, dead, with their output readable until someone closes them.
pub(crate) fn end_run_panes(mux: &Mux, panes: &[Arc<Pane>], detach: bool) {
    if detach {
        mux.close_remaining(panes);
    } else {
        let panes: Vec<&Pane> = panes.iter().map(|p| p.as_ref()).collect();
        crate::pane::close_panes(&panes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicate_names_are_refused() {
        assert!(check_unique(&["a".into(), "b".into()], "steps").is_ok());
        let err = check_unique(&["a".into(), "a".into()], "steps").unwrap_err();
        assert!(err.message().contains("\"a\""));
    }
}
