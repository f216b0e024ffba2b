//! A `fugue_run_pipeline` call's arguments, checked and turned into the plan it runs: the steps,
//! where the shell starts, and the options, each default read from the constant its schema declares.

use crate::config::Config;
use crate::error::{Error, Result};
use crate::tool::{self, args::Args};
use crate::tools::common::responses::Responses;
use crate::tools::common::{Tails, asking, check_cwd, check_unique, command};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The most steps one pipeline takes.
pub(super) const MAX_STEPS: usize = 100;
/// The defaults of `timeout_ms`, `stop_on_error` and `cleanup` (the pane stays for follow-ups),
/// declared in the tool's schema (`pipeline.rs`) and applied here.
pub(super) const TIMEOUT_MS: u64 = 600_000;
pub(super) const STOP_ON_ERROR: bool = true;
pub(super) const CLEANUP: bool = false;

pub(super) struct Step {
    pub(super) name: String,
    pub(super) command: String,
    /// Its `responses`, until the step is typed with them.
    pub(super) responses: Option<Responses>,
}

pub(super) struct Plan {
    pub(super) steps: Vec<Step>,
    /// Where the shell starts: the caller's `cwd`, taken from the caller's directory.
    pub(super) cwd: PathBuf,
    pub(super) env: Vec<(String, String)>,
    pub(super) stop_on_error: bool,
    pub(super) timeout: Duration,
    pub(super) cleanup: bool,
    /// The steps' `output_tail`s: `tail_lines`, `tails` and `keep`.
    pub(super) tails: Tails,
    /// `on_input: stop`: interrupt a step found asking.
    pub(super) stop_asking: bool,
}

pub(super) fn parse_plan(args: &Args<'_>, base: &Path, config: &Config) -> Result<Plan> {
    let items = args.array("commands")?.ok_or_else(|| {
        Error::invalid("argument 'commands' is required: a list of {command, name?}")
    })?;
    if items.is_empty() || items.len() > MAX_STEPS {
        return Err(Error::invalid(format!(
            "'commands' has {} items; give 1 to {MAX_STEPS}",
            items.len()
        )));
    }
    let steps = items
        .iter()
        .enumerate()
        .map(|(i, item)| parse_step(i, item, config.max_regex_bytes))
        .collect::<Result<Vec<_>>>()?;
    check_unique(&steps.iter().map(|s| s.name.clone()).collect::<Vec<_>>(), "steps")?;
    let cwd = match args.path("cwd")? {
        Some(dir) => {
            let dir = tool::dir(base, Some(dir));
            check_cwd(&dir, "pipeline")?;
            dir
        }
        None => tool::dir(base, None),
    };
    Ok(Plan {
        steps,
        cwd,
        env: args.env("env")?,
        stop_on_error: args.bool("stop_on_error")?.unwrap_or(STOP_ON_ERROR),
        timeout: crate::tools::common::run_timeout(args, TIMEOUT_MS)?,
        cleanup: args.bool("cleanup")?.unwrap_or(CLEANUP),
        tails: Tails::parse(args, config)?,
        stop_asking: asking::stops(args)?,
    })
}

/// The longest `command` a pipeline's pane shows.
const MAX_SHOWN: usize = 256;

impl Plan {
    /// What the pipeline's pane shows as its `command`: the steps as one command line, joined as
    /// they run (`&&` when the first failure stops them, `;` otherwise), cut at `MAX_SHOWN` bytes.
    pub(super) fn shown(&self) -> String {
        let join = if self.stop_on_error { " && " } else { " ; " };
        let steps: Vec<String> =
            self.steps.iter().map(|s| s.command.trim().replace('\n', "; ")).collect();
        let line = steps.join(join);
        if line.len() <= MAX_SHOWN {
            return line;
        }
        let mut end = MAX_SHOWN;
        while !line.is_char_boundary(end) {
            end -= 1;
        }
        format!("{}…", &line[..end])
    }
}

fn parse_step(index: usize, item: &Value, regex_limit: usize) -> Result<Step> {
    let what = format!("commands[{index}]");
    let item = Args::object(&what, item)?;
    if let Some(key) = item.unknown(&["command", "name", "responses"]).first() {
        return Err(Error::invalid(format!(
            "{what}: unknown key '{key}'; a step takes command, name and responses (cwd and env \
             apply to the whole pipeline)"
        )));
    }
    let command = command(&item, &what)?;
    let name = item.name("name")?.unwrap_or_else(|| format!("step-{}", index + 1));
    let responses = Responses::parse(&item, regex_limit)?;
    Ok(Step { name, command, responses })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(commands: &[&str], stop_on_error: bool) -> Plan {
        Plan {
            steps: commands
                .iter()
                .map(|c| Step { name: String::new(), command: (*c).to_string(), responses: None })
                .collect(),
            cwd: PathBuf::from("/"),
            env: Vec::new(),
            stop_on_error,
            timeout: Duration::from_secs(1),
            cleanup: false,
            tails: Tails { lines: 10, all: false, keep: None, bytes: 3584 },
            stop_asking: true,
        }
    }

    #[test]
    fn the_pane_shows_the_steps_joined_as_they_run() {
        assert_eq!(
            plan(&["cd /src", "make\nmake test "], true).shown(),
            "cd /src && make; make test"
        );
        assert_eq!(plan(&["false", "true"], false).shown(), "false ; true");
        let long = plan(&[&"é".repeat(200)], true).shown();
        assert!(long.len() <= MAX_SHOWN + '…'.len_utf8() && long.ends_with('…'), "{long}");
    }
}
