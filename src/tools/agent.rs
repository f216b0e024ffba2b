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
use crate::runtime::{Ctx, Tool};
use crate::tool::args::Args;
use crate::tool::choice::Choice;
use crate::tool::{Answer, RUNS, SETS, schema::*};
use crate::waiter::{Waiter, Woke};
use crate::words::Words;
use crate::words::words;
use serde::Serialize;
use serde_json::{Value, json};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The longest `wait_ms`: one hour.
const MAX_WAIT_MS: u64 = 3_600_000;
/// The longest task or prompt accepted.
const MAX_PROMPT_BYTES: usize = 1 << 20;

// Defaults of absent arguments, declared in the schemas and applied by the handlers (the limits'
// are `Limits::default()`).
/// `fugue_agent_pipeline_status` `wait_ms`: answer at once.
const WAIT_MS: u64 = 0;

pub(crate) static TOOLS: &[Tool] = &[
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
        input: || {
            object(
                &[
                    ("repo", string("Git repository path")),
                    ("task", string("First prompt")),
                    ("implementer", string("Command")),
                    ("analyzer", typed("string")),
                    ("qa", string("Test command")),
                    ("merger", string("Default: git")),
                    ("base_branch", typed("string")),
                    ("name", typed("string")),
                    ("idea_id", typed("string")),
                    ("env", typed("object")),
                    ("limits", limits_schema(Some(&Limits::default()))),
                ],
                &["repo", "task", "implementer"],
            )
        },
        output: || {
            result(&[
                ("pipeline_id", typed("string")),
                ("branch", typed("string")),
                ("worktree", typed("string")),
            ])
        },
        durable: false,
        asks: false,
        call: create,
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
        input: || {
            object(
                &[
                    ("pipeline_id", typed("string")),
                    ("repo", typed("string")),
                    ("wait_ms", integer_or("Wait up to this long for a change", WAIT_MS)),
                    ("until", Until::schema("What ends the wait")),
                    ("events", integer("Last events to show: 5 for one pipeline, 0 for all")),
                ],
                &[],
            )
        },
        output: || result(&[("pipelines", typed("array"))]),
        durable: true,
        asks: false,
        call: status,
    },
    Tool {
        name: "fugue_agent_pipeline_control",
        title: "Control agent pipeline",
        description: "On a blocked pipeline: retry (rerun the blocked stage) or followup (the \
                      implementer runs `prompt`), with fresh loop budgets; `limits` raises limits \
                      first. cancel: kill the running stage and stop; branch and worktree kept.",
        hints: RUNS,
        input: || {
            object(
                &[
                    ("pipeline_id", typed("string")),
                    ("action", json!({"enum": Action::names()})),
                    ("prompt", typed("string")),
                    ("limits", limits_schema(None)),
                ],
                &["pipeline_id", "action"],
            )
        },
        output: || result(&[("pipelines", typed("array"))]),
        durable: false,
        asks: false,
        call: control,
    },
];

/// The `limits` object: with `defaults` (a new pipeline) each limit declares its default; without
/// (control), an absent limit keeps the pipeline's.
fn limits_schema(defaults: Option<&Limits>) -> Value {
    let count = |key: &str, value: Option<u64>| {
        let mut schema = json!({"type": "integer"});
        if let Some(value) = value {
            schema["default"] = json!(value);
        }
        (key.to_string(), schema)
    };
    let mut cost = json!({"type": ["number", "null"]});
    if let Some(d) = defaults {
        cost["default"] = json!(d.max_cost_usd);
    }
    let properties: serde_json::Map<String, Value> = [
        count("max_attempts", defaults.map(|d| u64::from(d.max_attempts))),
        count("max_followups", defaults.map(|d| u64::from(d.max_followups))),
        count("max_qa_loops", defaults.map(|d| u64::from(d.max_qa_loops))),
        count("max_duration_s", defaults.map(|d| d.max_duration_s)),
        ("max_cost_usd".to_string(), cost),
    ]
    .into_iter()
    .collect();
    let description =
        if defaults.is_some() { "Loop and budget limits" } else { "Limits to raise; others kept" };
    json!({"type": "object", "description": description, "properties": properties,
           "additionalProperties": false})
}

fn create(ctx: &Ctx<'_>, args: &Args<'_>) -> Result<Answer> {
    let repo = args.path("repo")?.ok_or_else(|| Error::invalid("argument 'repo' is required"))?;
    let repo = ctx.dir(Some(repo));
    let task =
        prompt_text(args, "task")?.ok_or_else(|| Error::invalid("argument 'task' is required"))?;
    let agents = Agents {
        implementer: args.required_str("implementer")?.to_string(),
        analyzer: command(args, "analyzer")?,
        qa: command(args, "qa")?,
        merger: command(args, "merger")?,
    };
    let idea_id = args.name("idea_id")?;
    let limits = limits(args, Limits::default())?;
    let request = NewPipeline {
        repo,
        task,
        base_branch: args.str("base_branch")?.map(str::to_string),
        name: args.name("name")?,
        idea_id,
        agents,
        env: args.env("env")?,
        limits,
    };
    let handle = ctx.agents.create(request)?;
    let p = handle.snapshot();
    Answer::of(&Created {
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
struct Created<'a> {
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
fn command(args: &Args<'_>, key: &str) -> Result<Option<String>> {
    match args.str(key)? {
        None => Ok(None),
        Some(s) if s.trim().is_empty() => {
            Err(Error::invalid(format!("argument '{key}' must not be empty; leave it out instead")))
        }
        Some(s) => Ok(Some(s.to_string())),
    }
}

/// A task or prompt: non-empty, bounded, without NUL.
fn prompt_text(args: &Args<'_>, key: &str) -> Result<Option<String>> {
    let Some(text) = args.str(key)? else { return Ok(None) };
    if text.trim().is_empty() {
        return Err(Error::invalid(format!("argument '{key}' must not be empty")));
    }
    if text.len() > MAX_PROMPT_BYTES || text.contains('\0') {
        return Err(Error::invalid(format!("argument '{key}' must be under 1 MiB, without NUL")));
    }
    Ok(Some(text.to_string()))
}

/// `limits`, laid over `base`.
fn limits(args: &Args<'_>, base: Limits) -> Result<Limits> {
    let Some(value) = args.value("limits") else { return Ok(base) };
    let inner = Args::object("limits", value)?;
    let known = ["max_attempts", "max_followups", "max_qa_loops", "max_duration_s", "max_cost_usd"];
    let unknown = inner.unknown(&known);
    if !unknown.is_empty() {
        return Err(Error::invalid(format!(
            "limits: unknown key {}; known: {}",
            unknown.join(", "),
            known.join(", ")
        )));
    }
    let small = |key: &str, min: u64, default: u32| -> Result<u32> {
        Ok(inner.u64(key, min, 1000)?.map_or(default, |n| n as u32))
    };
    let cost = match value.get("max_cost_usd") {
        None => base.max_cost_usd,
        Some(Value::Null) => None,
        Some(v) => match v.as_f64() {
            Some(usd) if usd.is_finite() && usd >= 0.0 => Some(usd),
            _ => return Err(Error::invalid("limits.max_cost_usd must be a non-negative number")),
        },
    };
    Ok(Limits {
        max_attempts: small("max_attempts", 1, base.max_attempts)?,
        max_followups: small("max_followups", 0, base.max_followups)?,
        max_qa_loops: small("max_qa_loops", 0, base.max_qa_loops)?,
        max_duration_s: inner.u64("max_duration_s", 1, 30 * 86_400)?.unwrap_or(base.max_duration_s),
        max_cost_usd: cost,
    })
}

words! {
    /// What ends a status wait: any change, or every pipeline settled.
    enum Until {
        Change = "change",
        Settled = "settled",
    }
}

fn status(ctx: &Ctx<'_>, args: &Args<'_>) -> Result<Answer> {
    let manager = &ctx.agents;
    let repo = match args.path("repo")? {
        Some(path) => Some(load_repo(manager, &ctx.dir(Some(path)))?),
        None => None,
    };
    let wait_ms = args.u64("wait_ms", 0, MAX_WAIT_MS)?.unwrap_or(WAIT_MS);
    let until = Until::parse(args, "until")?;
    let single = args.str("pipeline_id")?.map(|key| manager.find(key)).transpose()?;
    let default_events = if single.is_some() { 5 } else { 0 };
    let events = args.u64("events", 0, 200)?.map_or(default_events, |n| n as usize);
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
    if wait_ms > 0 {
        let events = match &single {
            Some(handle) => handle.subscribe(),
            None => manager.subscribe(),
        };
        changed = Some(wait(ctx, &live, &events, Duration::from_millis(wait_ms), until)?);
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
    let problems: Vec<Problem> = manager
        .problems()
        .iter()
        .map(|p| Problem {
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
    problems: Option<Vec<Problem>>,
}

#[derive(Serialize)]
struct Problem {
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
type Key = (String, PipelineStatus, Option<StageType>, u32, Option<String>);

fn keys(handles: &[Arc<Handle>]) -> Vec<Key> {
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
    ctx: &Ctx<'_>,
    targets: &dyn Fn() -> Vec<Arc<Handle>>,
    events: &crossbeam_channel::Receiver<()>,
    within: Duration,
    until: Until,
) -> Result<bool> {
    let started = Instant::now();
    let mut waiter = Waiter::new()
        .cancel(ctx.cancel.receiver())
        .until(started + within)
        .heartbeat(ctx.progress.heartbeat())
        .on(events.clone());
    let first = keys(&targets());
    loop {
        let handles = targets();
        let running = handles
            .iter()
            .any(|h| h.is_driven_here() && h.snapshot().status == PipelineStatus::Running);
        if !running || (until == Until::Change && keys(&handles) != first) {
            return Ok(true);
        }
        match waiter.sleep(None) {
            Woke::Look => {}
            Woke::Heartbeat => {
                let secs = started.elapsed().as_secs_f64();
                ctx.progress.report(secs, Some(within.as_secs_f64()), "waiting for the pipeline");
            }
            Woke::Deadline => return Ok(false),
            Woke::Cancelled => return Err(Error::cancelled()),
        }
    }
}

fn control(ctx: &Ctx<'_>, args: &Args<'_>) -> Result<Answer> {
    let manager = &ctx.agents;
    let handle = manager.find(args.required_str("pipeline_id")?)?;
    let prompt = prompt_text(args, "prompt")?;
    let action = match (Action::required(args, "action")?, prompt) {
        (Action::Retry, None) => Control::Retry,
        (Action::Followup, Some(prompt)) => Control::Followup(prompt),
        (Action::Followup, None) => return Err(Error::invalid("followup needs 'prompt'")),
        (Action::Cancel, None) => Control::Cancel,
        (Action::Retry | Action::Cancel, Some(_)) => {
            return Err(Error::invalid("'prompt' goes with action followup only"));
        }
    };
    let limits = if args.has("limits") {
        if action == Control::Cancel {
            return Err(Error::invalid("'limits' goes with retry or followup"));
        }
        Some(limits(args, handle.snapshot().limits)?)
    } else {
        None
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
    pipeline_id: String,
    name: Option<String>,
    status: &'static str,
    stage: Option<&'static str>,
    pane_id: Option<String>,
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
    pane_id: Option<String>,
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
