//! What the tools that run commands share, below their handlers (`tools::parallel`,
//! `tools::pipeline`, `tools::expect`, `tools::wait` and the wait behind `fugue_exec`): argument checks and their schemas, the text tail of a stretch of output,
//! closing a run's panes at once, stopping a program that asks (`asking`), and answering it with
//! the `responses` given up front (`responses`); the watchdog for silent work (`quiet`). In: arguments and panes; out: checked values,
//! tails, closed panes, typed answers. Nothing here waits: the handlers sleep in the one `Waiter`.

pub(crate) mod asking;
pub(crate) mod quiet;
pub(crate) mod responses;

use crate::config::Config;
use crate::error::{Error, Result};
use crate::mux::Mux;
use crate::pane::Pane;
use crate::pane::budget::{self, Budget, Fitted};
use crate::pane::search::compile;
use crate::tool::args::Args;
use crate::tool::params::{Param, Spec};
use crate::words::words;
use regex::Regex;
use serde_json::Value;
use std::path::Path;
use std::sync::Arc;

/// The longest `quiet_ms`: one day.
const MAX_QUIET_MS: u64 = 86_400_000;

/// The `quiet_ms` row (`quiet::Quiet`; absent: no watchdog), described so.
pub(crate) const fn quiet_row(description: &'static str) -> Spec {
    Spec::new(description).range(quiet::MIN_QUIET_MS, MAX_QUIET_MS)
}

/// The most lines an `output_tail` may ask for.
const MAX_TAIL_LINES: u64 = 1000;

/// The least bytes one `output_tail` gets when several share the answer's budget.
const MIN_TAIL_BYTES: usize = 512;

words! {
    /// Which results of a run get an `output_tail`; the default keeps a green run small.
    pub(crate) enum WhichTails {
        Failed = "failed",
        All = "all",
    }
}

/// The rows both run tools share (`timeout_ms` has each tool's own default).
pub(crate) const TAIL_LINES: Spec =
    Spec::new("Lines per output_tail; 0 for none").range(0, MAX_TAIL_LINES).or(10);
pub(crate) const TAILS: Spec = Spec::new("Which results get an output_tail");
pub(crate) const RUN_TIMEOUT: Spec = Spec::new("Limit for the whole call");
/// `keep`, described once, in fugue_exec's schema; the other tools refer to it.
pub(crate) const KEEP: Spec = Spec::new("Regex: more lines to keep");
pub(crate) const KEEP_AS_EXECS: Spec = Spec::new("As fugue_exec's");
/// The rows of fugue_run_pipeline that are fugue_run_parallel's, described there once.
pub(crate) const AS_PARALLELS: Spec = Spec::new("As fugue_run_parallel's");

/// A command to run: non-empty, not blank, no NUL (it cannot pass through exec or a file read by
/// a shell).
#[derive(Clone, Debug)]
pub(crate) struct Command(pub(crate) String);

impl Param for Command {
    fn read(args: &Args<'_>, key: &str, spec: &Spec) -> Result<Command> {
        let command = String::read(args, key, spec)?;
        if command.trim().is_empty() {
            return Err(Error::invalid(format!("argument '{}' is blank", args.at(key))));
        }
        if command.contains('\0') {
            return Err(Error::invalid(format!("argument '{}' contains NUL", args.at(key))));
        }
        Ok(Command(command))
    }
    fn schema(spec: &Spec) -> Value {
        String::schema(spec)
    }
    fn required(spec: &Spec) -> bool {
        String::required(spec)
    }
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
pub(crate) fn keep(keep: Option<&str>, limit: usize) -> Result<Option<Regex>> {
    keep.map(|keep| compile(keep, limit)).transpose()
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
    pub(crate) fn new(
        lines: usize,
        tails: WhichTails,
        keep: Option<&str>,
        config: &Config,
    ) -> Result<Tails> {
        Ok(Tails {
            lines,
            all: tails == WhichTails::All,
            keep: self::keep(keep, config.max_regex_bytes)?,
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
