//! The agent pipeline tools: create a pipeline, watch it, and unblock or cancel it.
//!
//! These handlers check arguments, hand the work to the runtime's `Manager`,
//! and render a pipeline's state as something an agent can act on: where it is, which pane to
//! read, why it is blocked and what it may do about it. `fugue_agent_pipeline_status` can wait, event-driven, for the next
//! change.

use crate::agent::git;
use crate::agent::handle::Handle;
use crate::agent::machine::Control;
use crate::agent::manager::{Manager, NewPipeline};
use crate::agent::record::{
    self, Action, AgentPipeline, Agents, Limits, PipelineStatus, StageType, now,
};
use crate::error::{Error, Result};
use crate::ids::{PaneId, PipelineId};
use crate::runtime::Runtime;
use crate::tool::params::{Name, Params, Raw, Spec, Timeout, params};
use crate::tool::{Answer, Ctx, RUNS, SETS, Tool, schema::*};
use crate::waiter::{Drove, Look, Waiter};
use crate::words::Words;
use crate::words::words;
use serde::Serialize;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The longest task or prompt accepted.
const MAX_PROMPT_BYTES: usize = 1 << 20;

// Defaults of absent arguments, declared in the schemas and applied by the handlers (the limits'
// are `Limits::default()`).
/// `fugue_agent_pipeline_status` `wait_ms`: answer at once.
const WAIT_MS: u64 = 0;

pub(crate) static TOOLS: &[Tool<Runtime>] = &[
    Tool {
        name: "fugue_agent_pipeline_create",
        title: "Create agent pipeline",
        description: "Run `task` through implementer -> analyzer -> qa -> merger in a new git \
                      worktree and branch from base_branch (default: current). Agents are shell \
                      commands run in panes in the worktree, env FUGUE_PROMPT_FILE, \
                      FUGUE_VERDICT_FILE, FUGUE_STAGE, FUGUE_ATTEMPT (man fugue). Analyzer: `fugue \
                      verdict complete|followup|failed [--reason R] [--prompt P]`. QA: exit 0 passes. \
                      Merger: built-in git. Returns at once.",
        hints: RUNS,
        input: CreateParams::schema,
        output: || {
            result(&[
                ("pipeline_id", typed("string")),
                ("branch", typed("string")),
                ("worktree", typed("string")),
            ])
        },
        durable: false,
        asks: false,
        call: |ctx, args| create(ctx, Params::read(args)?),
    },
    Tool {
        name: "fugue_agent_pipeline_status",
        title: "Agent pipeline status",
        description: "One pipeline (pipeline_id) or all: status, stage, pane_id of the running \
                      agent, each stage's attempts and verdict, blocked_reason, allowed_actions, \
                      last `events`. wait_ms: return when the stage changes or it ends \
                      (until=settled: when blocked or done); at once if not running. repo: load \
                      (and resume) that repository's pipelines.",
        // Not read-only: naming a repository resumes its unfinished pipelines.
        hints: SETS,
        input: StatusParams::schema,
        output: || result(&[("pipelines", typed("array"))]),
        durable: true,
        asks: false,
        call: |ctx, args| status(ctx, Params::read(args)?),
    },
    Tool {
        name: "fugue_agent_pipeline_control",
        title: "Control agent pipeline",
        description: "On a blocked pipeline: retry (rerun the blocked stage) or followup (the \
                      implementer runs `prompt`), with fresh loop budgets; `limits` raises limits \
                      first. cancel: kill the running stage and stop; branch and worktree kept.",
        hints: RUNS,
        input: ControlParams::schema,
        output: || result(&[("pipelines", typed("array"))]),
        durable: false,
        asks: false,
        call: |ctx, args| control(ctx, Params::read(args)?),
    },
];

params! {
    /// `fugue_agent_pipeline_create`'s arguments.
    struct CreateParams {
        repo: PathBuf = Spec::new("Git repository path"),
        task: String = Spec::new("First prompt"),
        implementer: String = Spec::new("Command"),
        analyzer: Option<String> = Spec::new(""),
        qa: Option<String> = Spec::new("Test command"),
        merger: Option<String> = Spec::new("Default: git"),
        base_branch: Option<String> = Spec::new(""),
        name: Option<Name> = Spec::new(""),
        idea_id: Option<Name> = Spec::new(""),
        env: Vec<(String, String)> = Spec::new(""),
        limits: Option<NewLimits> = Spec::new("Loop and budget limits"),
    }
}

params! {
    /// A new pipeline's `limits`, each with its default (`Limits::default()`).
    struct NewLimits {
        max_attempts: u64 = Spec::new("").range(1, 1000).or(2),
        max_followups: u64 = Spec::new("").range(0, 1000).or(3),
        max_qa_loops: u64 = Spec::new("").range(0, 1000).or(2),
        max_duration_s: u64 = Spec::new("").range(1, MAX_DURATION_S).or(7200),
        max_cost_usd: Option<Raw> = Spec::new("").shaped(no_cost_limit),
    }
}

params! {
    /// The `limits` a control raises: an absent one keeps the pipeline's.
    struct RaisedLimits {
        max_attempts: Option<u64> = Spec::new("").range(1, 1000),
        max_followups: Option<u64> = Spec::new("").range(0, 1000),
        max_qa_loops: Option<u64> = Spec::new("").range(0, 1000),
        max_duration_s: Option<u64> = Spec::new("").range(1, MAX_DURATION_S),
        max_cost_usd: Option<Raw> = Spec::new("").shaped(cost_schema),
    }
}

/// The longest `max_duration_s`: thirty days.
const MAX_DURATION_S: u64 = 30 * 86_400;

/// `max_cost_usd`: a number, or null for none.
fn cost_schema() -> Value {
    json!({"type": ["number", "null"]})
}

/// `max_cost_usd` of a new pipeline: none by default.
fn no_cost_limit() -> Value {
    json!({"type": ["number", "null"], "default": null})
}

/// Counts are at most 1000 (their rows' range), so they fit.
fn count(n: u64) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

impl NewLimits {
    fn limits(self) -> Result<Limits> {
        Ok(Limits {
            max_attempts: count(self.max_attempts),
            max_followups: count(self.max_followups),
            max_qa_loops: count(self.max_qa_loops),
            max_duration_s: self.max_duration_s,
            max_cost_usd: cost(self.max_cost_usd, None)?,
        })
    }
}

impl RaisedLimits {
    /// These limits laid over `base`.
    fn over(self, base: Limits) -> Result<Limits> {
        Ok(Limits {
            max_attempts: self.max_attempts.map_or(base.max_attempts, count),
            max_followups: self.max_followups.map_or(base.max_followups, count),
            max_qa_loops: self.max_qa_loops.map_or(base.max_qa_loops, count),
            max_duration_s: self.max_duration_s.unwrap_or(base.max_duration_s),
            max_cost_usd: cost(self.max_cost_usd, base.max_cost_usd)?,
        })
    }
}

/// `max_cost_usd`: absent keeps `base`, null means no limit, else a non-negative number.
fn cost(asked: Option<Raw>, base: Option<f64>) -> Result<Option<f64>> {
    match asked {
        None => Ok(base),
        Some(Raw(Value::Null)) => Ok(None),
        Some(Raw(v)) => match v.as_f64() {
            Some(usd) if usd.is_finite() && usd >= 0.0 => Ok(Some(usd)),
            _ => Err(Error::invalid("limits.max_cost_usd must be a non-negative number")),
        },
    }
}

fn create(ctx: &Ctx<'_, Runtime>, args: CreateParams) -> Result<Answer> {
    let repo = ctx.dir(Some(args.repo));
    let task = prompt_text("task", Some(args.task))?.unwrap_or_default();
    let agents = Agents {
        implementer: args.implementer,
        analyzer: command("analyzer", args.analyzer)?,
        qa: command("qa", args.qa)?,
        merger: command("merger", args.merger)?,
    };
    let limits = args.limits.map_or_else(|| Ok(Limits::default()), NewLimits::limits)?;
    let request = NewPipeline {
        repo,
        task,
        base_branch: args.base_branch,
        name: args.name.map(|n| n.0),
        idea_id: args.idea_id.map(|n| n.0),
        agents,
        env: args.env,
        limits,
    };
    let handle = ctx.agents.create(request)?;
    let p = handle.snapshot();
    Answer::of(&PipelineCreated {
        pipeline_id: &p.id,
        name: p.name.as_deref(),
        status: p.status.name(),
        branch: &p.job.branch,
        worktree: &p.job.worktree,
        base_branch: &p.job.base_branch,
        base_commit: &p.job.base_commit,
        session: p.session(),
        state_file: handle.store.state_file(&p.id).display().to_string(),
    })
}

/// What `fugue_agent_pipeline_create` answers: the new pipeline and where it works.
#[derive(Serialize)]
struct PipelineCreated<'a> {
    pipeline_id: &'a str,
    name: Option<&'a str>,
    status: &'static str,
    branch: &'a str,
    worktree: &'a str,
    base_branch: &'a str,
    base_commit: &'a str,
    session: String,
    state_file: String,
}

/// An optional agent command: absent, or a non-empty string.
fn command(key: &str, given: Option<String>) -> Result<Option<String>> {
    match given {
        Some(s) if s.trim().is_empty() => {
            Err(Error::invalid(format!("argument '{key}' must not be empty; leave it out instead")))
        }
        given => Ok(given),
    }
}

/// A task or prompt: non-empty, bounded, without NUL.
fn prompt_text(key: &str, given: Option<String>) -> Result<Option<String>> {
    let Some(text) = given else { return Ok(None) };
    if text.trim().is_empty() {
        return Err(Error::invalid(format!("argument '{key}' must not be empty")));
    }
    if text.len() > MAX_PROMPT_BYTES || text.contains('\0') {
        return Err(Error::invalid(format!("argument '{key}' must be under 1 MiB, without NUL")));
    }
    Ok(Some(text))
}

words! {
    /// What ends a status wait: any change, or every pipeline settled.
    enum StatusUntil {
        Change = "change",
        Settled = "settled",
    }
}

params! {
    /// `fugue_agent_pipeline_status`'s arguments.
    struct StatusParams {
        pipeline_id: Option<String> = Spec::new(""),
        repo: Option<PathBuf> = Spec::new(""),
        wait_ms: Timeout = Spec::new("Wait up to this long for a change").or(WAIT_MS),
        until: StatusUntil = Spec::new("What ends the wait"),
        events: Option<usize> = Spec::new("Last events to show: 5 for one pipeline, 0 for all")
            .range(0, 200),
    }
}

fn status(ctx: &Ctx<'_, Runtime>, args: StatusParams) -> Result<Answer> {
    let manager = &ctx.agents;
    let repo = match args.repo {
        Some(path) => Some(load_repo(manager, &ctx.dir(Some(path)))?),
        None => None,
    };
    let Timeout(wait_for) = args.wait_ms;
    let until = args.until;
    let single = args.pipeline_id.map(|key| manager.find(&key)).transpose()?;
    let default_events = if single.is_some() { 5 } else { 0 };
    let events = args.events.unwrap_or(default_events);
    // The wait looks at memory only: the pipelines that can still change. The answer then reads
    // the finished ones from disk, and refreshes those another process drives.
    let of_repo = |h: &Arc<Handle>| repo.as_deref().is_none_or(|r| h.snapshot().job.repo == r);
    let live = || -> Vec<Arc<Handle>> {
        match &single {
            Some(handle) => vec![handle.clone()],
            None => manager.live().into_iter().filter(of_repo).collect(),
        }
    };
    let mut changed = None;
    if !wait_for.is_zero() {
        let events = match &single {
            Some(handle) => handle.subscribe(),
            None => manager.subscribe(),
        };
        changed = Some(wait(ctx, &live, &events, wait_for, until)?);
    }
    manager.refresh_foreign();
    let targets = match &single {
        Some(handle) => {
            handle.refresh();
            vec![handle.clone()]
        }
        None => manager.all().into_iter().filter(of_repo).collect(),
    };
    let pipelines = targets.iter().map(|h| render(h, events, single.is_some())).collect();
    let problems: Vec<UnreadableRecord> = manager
        .problems()
        .iter()
        .map(|p| UnreadableRecord {
            file: p.file.display().to_string(),
            moved_to: p.moved_to.as_ref().map(|m| m.display().to_string()),
            error: p.error.clone(),
        })
        .collect();
    let problems = (!problems.is_empty()).then_some(problems);
    Answer::of(&Pipelines { changed, pipelines, problems })
}

/// What the status and control tools answer.
#[derive(Serialize)]
struct Pipelines {
    /// Whether the wait saw a change (with `wait_ms`).
    #[serde(skip_serializing_if = "Option::is_none")]
    changed: Option<bool>,
    pipelines: Vec<PipelineView>,
    /// State files that could not be read.
    #[serde(skip_serializing_if = "Option::is_none")]
    problems: Option<Vec<UnreadableRecord>>,
}

#[derive(Serialize)]
struct UnreadableRecord {
    file: String,
    moved_to: Option<String>,
    error: String,
}

/// Loads a repository's pipelines (its `.state`, unless `FUGUE_STATE_DIR` holds them all) and
/// returns the repository's path as pipelines record it.
fn load_repo(manager: &Arc<Manager>, path: &Path) -> Result<String> {
    let repo = git::main_worktree(path)?;
    let repo = repo.canonicalize().unwrap_or(repo);
    manager.load_root(&manager.root_for(&repo), false)?;
    Ok(repo.display().to_string())
}

/// What a waiter compares: which pipelines exist, and for each its status, stage, attempt and
/// the attempt's pane (a caller that saw a stage before its pane existed learns the pane).
type Fingerprint = (PipelineId, PipelineStatus, Option<StageType>, u32, Option<PaneId>);

fn keys(handles: &[Arc<Handle>]) -> Vec<Fingerprint> {
    handles
        .iter()
        .map(|h| {
            let p = h.snapshot();
            let (attempt, pane) =
                p.current.map_or((0, None), |s| (p.stage(s).attempt, p.stage(s).run_id.clone()));
            (p.id.clone(), p.status, p.current, attempt, pane)
        })
        .collect()
}

/// Waits until a target changes stage or ends (`Change`), or none is running (`Settled`).
/// Returns whether that happened before the deadline.
fn wait(
    ctx: &Ctx<'_, Runtime>,
    targets: &dyn Fn() -> Vec<Arc<Handle>>,
    events: &crossbeam_channel::Receiver<()>,
    within: Duration,
    until: StatusUntil,
) -> Result<bool> {
    let started = Instant::now();
    let mut waiter = Waiter::new()
        .cancel(ctx.cancel.receiver())
        .until(started + within)
        .heartbeat(ctx.progress.heartbeat())
        .on(events.clone());
    let first = keys(&targets());
    let look = |(): &mut ()| {
        let handles = targets();
        let running = handles
            .iter()
            .any(|h| h.is_driven_here() && h.snapshot().status == PipelineStatus::Running);
        let changed = until == StatusUntil::Change && keys(&handles) != first;
        if !running || changed { Look::Done(()) } else { Look::Again(None) }
    };
    let report = |(): &()| {
        let secs = started.elapsed().as_secs_f64();
        ctx.progress.report(secs, Some(within.as_secs_f64()), "waiting for the pipeline");
    };
    match waiter.drive(&mut (), look, report) {
        Drove::Done(()) => Ok(true),
        Drove::Deadline => Ok(false),
        Drove::Cancelled => Err(Error::cancelled()),
    }
}

params! {
    /// `fugue_agent_pipeline_control`'s arguments.
    struct ControlParams {
        pipeline_id: String = Spec::new(""),
        action: Action = Spec::new("").required(),
        prompt: Option<String> = Spec::new(""),
        limits: Option<RaisedLimits> = Spec::new("Limits to raise; others kept"),
    }
}

fn control(ctx: &Ctx<'_, Runtime>, args: ControlParams) -> Result<Answer> {
    let manager = &ctx.agents;
    let handle = manager.find(&args.pipeline_id)?;
    let prompt = prompt_text("prompt", args.prompt)?;
    let action = match (args.action, prompt) {
        (Action::Retry, None) => Control::Retry,
        (Action::Followup, Some(prompt)) => Control::Followup(prompt),
        (Action::Followup, None) => return Err(Error::invalid("followup needs 'prompt'")),
        (Action::Cancel, None) => Control::Cancel,
        (Action::Retry | Action::Cancel, Some(_)) => {
            return Err(Error::invalid("'prompt' goes with action followup only"));
        }
    };
    let limits = match args.limits {
        Some(_) if action == Control::Cancel => {
            return Err(Error::invalid("'limits' goes with retry or followup"));
        }
        Some(raised) => Some(raised.over(handle.snapshot().limits)?),
        None => None,
    };
    manager.control(&handle, action, limits, ctx.cancel)?;
    let pipelines = vec![render(&handle, 5, true)];
    Answer::of(&Pipelines { changed: None, pipelines, problems: None })
}

/// A pipeline as status shows it. `full` adds the stages, limits and job; a listing stays short.
fn render(handle: &Handle, events: usize, full: bool) -> PipelineView {
    let p = handle.snapshot();
    let skip = p.events.len().saturating_sub(events);
    let events = p.events[skip..]
        .iter()
        .map(|e| EventView {
            at: e.timestamp,
            kind: e.event_type.clone(),
            stage: e.stage.map(StageType::name),
            description: e.description.clone(),
        })
        .collect();
    let driven_by = !handle.is_driven_here() && !p.status.is_terminal();
    PipelineView {
        pipeline_id: p.id.clone(),
        name: p.name.clone(),
        status: p.status.name(),
        stage: p.current.map(StageType::name),
        pane_id: p.running().and_then(|s| p.stage(s).run_id.clone()),
        blocked_reason: p.blocked.as_ref().map(|b| b.reason.clone()),
        allowed_actions: p.allowed_actions(),
        branch: p.job.branch.clone(),
        cost_usd: p.cost_usd,
        updated_at: p.updated_at,
        driven_by: driven_by.then(|| handle.driven_by()),
        details: full.then(|| Details::of(&p)),
        events,
    }
}

/// A pipeline in the status and control tools' answers.
#[derive(Serialize)]
struct PipelineView {
    pipeline_id: PipelineId,
    name: Option<String>,
    status: &'static str,
    stage: Option<&'static str>,
    pane_id: Option<PaneId>,
    blocked_reason: Option<String>,
    allowed_actions: &'static [Action],
    branch: String,
    cost_usd: f64,
    updated_at: u64,
    /// Who drives a pipeline another process runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    driven_by: Option<&'static str>,
    #[serde(flatten)]
    details: Option<Details>,
    events: Vec<EventView>,
}

#[derive(Serialize)]
struct EventView {
    at: u64,
    #[serde(rename = "type")]
    kind: String,
    stage: Option<&'static str>,
    description: String,
}

/// What a full view adds: the stages, the loops and limits, and the job.
#[derive(Serialize)]
struct Details {
    stages: Vec<StageView>,
    idea_id: Option<String>,
    followups: u32,
    qa_loops: u32,
    duration_ms: u64,
    limits: Limits,
    repo: String,
    base_branch: String,
    base_commit: String,
    worktree: String,
    merged_commit: Option<String>,
    created_at: u64,
    completed_at: Option<u64>,
}

#[derive(Serialize)]
struct StageView {
    stage: &'static str,
    status: record::StageStatus,
    attempt: u32,
    failures: u32,
    verdict: Option<&'static str>,
    reason: Option<String>,
    cost_usd: f64,
    pane_id: Option<PaneId>,
    agent: String,
}

impl Details {
    fn of(p: &AgentPipeline) -> Details {
        let stages = p
            .stages
            .iter()
            .map(|s| StageView {
                stage: s.stage_type.name(),
                status: s.status,
                attempt: s.attempt,
                failures: s.failures,
                verdict: s.verdict.map(record::AnalyzerVerdict::name),
                reason: s.reason.clone(),
                cost_usd: s.cost_usd,
                pane_id: s.run_id.clone(),
                agent: s.agent_name.clone(),
            })
            .collect();
        Details {
            stages,
            idea_id: p.idea_id.clone(),
            followups: p.followups,
            qa_loops: p.qa_loops,
            duration_ms: p.elapsed_ms(now()),
            limits: p.limits.clone(),
            repo: p.job.repo.clone(),
            base_branch: p.job.base_branch.clone(),
            base_commit: p.job.base_commit.clone(),
            worktree: p.job.worktree.clone(),
            merged_commit: p.merged_commit.clone(),
            created_at: p.created_at,
            completed_at: p.completed_at,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::args::Args;
    use serde_json::Map;

    fn limits(value: Value) -> Result<NewLimits> {
        let map: Map<String, Value> = value.as_object().unwrap().clone();
        NewLimits::read(&Args::new(&map))
    }

    #[test]
    fn a_new_pipelines_limits_default_to_the_records() {
        assert_eq!(limits(json!({})).unwrap().limits().unwrap(), Limits::default());
        let schema = NewLimits::schema();
        let default = Limits::default();
        assert_eq!(schema["properties"]["max_attempts"]["default"], default.max_attempts);
        assert_eq!(schema["properties"]["max_duration_s"]["default"], default.max_duration_s);
        assert_eq!(schema["properties"]["max_cost_usd"]["default"], Value::Null);
    }

    #[test]
    fn raised_limits_keep_the_others_and_null_lifts_the_cost() {
        let base = Limits { max_cost_usd: Some(5.0), ..Limits::default() };
        let map = json!({"max_attempts": 9, "max_cost_usd": null});
        let raised = RaisedLimits::read(&Args::new(map.as_object().unwrap())).unwrap();
        let raised = raised.over(base.clone()).unwrap();
        assert_eq!(raised, Limits { max_attempts: 9, max_cost_usd: None, ..base });
        let err = limits(json!({"max_qa_loops": 1001})).unwrap_err();
        assert_eq!(err.message(), "argument 'max_qa_loops' must be between 0 and 1000, got 1001");
    }
}
