//! A `fugue_run_pipeline` call's arguments, checked and turned into the plan it runs: the steps,
//! where the shell starts, and the options, each default read from the constant its schema declares.

use crate::config::Config;
use crate::error::Result;
use crate::tool;
use crate::tool::params::{Name, Ordered, Spec, Timeout, params};
use crate::tools::common::asking::OnInput;
use crate::tools::common::responses::{AS_EXECS, Responses};
use crate::tools::common::{
    AS_PARALLELS, Command, KEEP_AS_EXECS, RUN_TIMEOUT, TAIL_LINES, Tails, WhichTails, check_cwd,
    check_unique,
};
use crate::tools::panes::ENV;
use crate::tools::{SANDBOX_AS_EXECS, SandboxArg};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The most steps one pipeline takes.
pub(super) const MAX_STEPS: usize = 100;
/// The defaults of `timeout_ms`, `stop_on_error` and `cleanup` (the pane stays for follow-ups),
/// declared in the tool's schema (`pipeline.rs`) and applied here.
pub(super) const TIMEOUT_MS: u64 = 600_000;
pub(super) const STOP_ON_ERROR: bool = true;
pub(super) const CLEANUP: bool = false;

pub(super) struct PipelineStep {
    pub(super) name: String,
    pub(super) command: String,
    /// Its `responses`, until the step is typed with them.
    pub(super) responses: Option<Responses>,
}

pub(super) struct PipelinePlan {
    pub(super) steps: Vec<PipelineStep>,
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

params! {
    /// One step of `fugue_run_pipeline`.
    pub(super) struct StepParams {
        command: Command = Spec::new(""),
        name: Option<Name> = Spec::new("Default step-N"),
        responses: Option<Ordered> = AS_EXECS,
    }
}

params! {
    /// `fugue_run_pipeline`'s arguments.
    pub(super) struct PipelineParams {
        commands: Vec<StepParams> = Spec::new("").range(1, MAX_STEPS as u64),
        cwd: Option<PathBuf> = Spec::new(""),
        env: Vec<(String, String)> = ENV,
        stop_on_error: bool = Spec::new("Stop at the first failing step").or_bool(STOP_ON_ERROR),
        timeout_ms: Timeout = RUN_TIMEOUT.or(TIMEOUT_MS),
        cleanup: bool = Spec::new("Close the pane at the end").or_bool(CLEANUP),
        sandbox: Option<SandboxArg> = SANDBOX_AS_EXECS,
        tail_lines: usize = Spec { description: AS_PARALLELS.description, ..TAIL_LINES },
        tails: WhichTails = AS_PARALLELS,
        keep: Option<String> = KEEP_AS_EXECS,
        on_input: OnInput = AS_PARALLELS,
    }
}

/// The plan of a call, and the sandbox it asked for.
pub(super) fn parse_plan(
    args: PipelineParams,
    base: &Path,
    config: &Config,
) -> Result<(PipelinePlan, Option<SandboxArg>)> {
    let steps = args
        .commands
        .into_iter()
        .enumerate()
        .map(|(i, item)| parse_step(i, item, config.max_regex_bytes))
        .collect::<Result<Vec<_>>>()?;
    check_unique(&steps.iter().map(|s| s.name.clone()).collect::<Vec<_>>(), "steps")?;
    let cwd = match args.cwd {
        Some(dir) => {
            let dir = tool::dir(base, Some(dir));
            check_cwd(&dir, "pipeline")?;
            dir
        }
        None => tool::dir(base, None),
    };
    let plan = PipelinePlan {
        steps,
        cwd,
        env: args.env,
        stop_on_error: args.stop_on_error,
        timeout: args.timeout_ms.0,
        cleanup: args.cleanup,
        tails: Tails::new(args.tail_lines, args.tails, args.keep.as_deref(), config)?,
        stop_asking: args.on_input == OnInput::Stop,
    };
    Ok((plan, args.sandbox))
}

/// The longest `command` a pipeline's pane shows.
const MAX_SHOWN: usize = 256;

impl PipelinePlan {
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

fn parse_step(index: usize, item: StepParams, regex_limit: usize) -> Result<PipelineStep> {
    let name = item.name.map_or_else(|| format!("step-{}", index + 1), |n| n.0);
    let responses = Responses::parse(item.responses.as_ref(), regex_limit)?;
    Ok(PipelineStep { name, command: item.command.0, responses })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(commands: &[&str], stop_on_error: bool) -> PipelinePlan {
        PipelinePlan {
            steps: commands
                .iter()
                .map(|c| PipelineStep {
                    name: String::new(),
                    command: (*c).to_string(),
                    responses: None,
                })
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
