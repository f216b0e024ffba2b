//! The agent pipeline of the seed as data, and its transitions as one pure function.
//!
//! A `Pipeline` takes one task through four stages — Implementer, Analyzer, QA, Merger — in its own
//! git worktree. `next(&pipeline, event)` is the whole policy: given what happened (a stage
//! finished with an outcome, fugue was restarted mid-stage, the duration ran out, someone sent a
//! control action) it returns the new pipeline and the one step to take next: run a stage, wait for
//! a control action, or stop. It does no I/O and reads no clock (the time comes in the event), so
//! every transition is unit-tested below. Every limit is checked in `launch`, the only place a run
//! of a stage begins, so no spawn can slip past one: reaching a limit blocks with a reason.

use serde::{Deserialize, Serialize};
use std::fmt;

/// The version of the state file format; a newer file is refused rather than misread.
pub(crate) const SCHEMA_VERSION: u32 = 1;
/// Events kept in the state file; older ones are dropped and counted.
const MAX_EVENTS: usize = 200;
/// How much of a prompt an event quotes.
const QUOTE_CHARS: usize = 160;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum StageType {
    Implementer,
    Analyzer,
    Qa,
    Merger,
}

impl StageType {
    pub(crate) const ALL: [StageType; 4] =
        [StageType::Implementer, StageType::Analyzer, StageType::Qa, StageType::Merger];

    pub(crate) fn name(self) -> &'static str {
        match self {
            StageType::Implementer => "implementer",
            StageType::Analyzer => "analyzer",
            StageType::Qa => "qa",
            StageType::Merger => "merger",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for StageType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum StageStatus {
    Pending,
    Running,
    Success,
    Failed,
    Blocked,
    /// The stage has no agent (an optional analyzer or QA left out).
    Skipped,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum PipelineStatus {
    Running,
    Blocked,
    Complete,
    Cancelled,
}

impl PipelineStatus {
    pub(crate) fn is_terminal(self) -> bool {
        matches!(self, PipelineStatus::Complete | PipelineStatus::Cancelled)
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            PipelineStatus::Running => "running",
            PipelineStatus::Blocked => "blocked",
            PipelineStatus::Complete => "complete",
            PipelineStatus::Cancelled => "cancelled",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum AnalyzerVerdict {
    Complete,
    Followup,
    Failed,
}

impl AnalyzerVerdict {
    pub(crate) fn name(self) -> &'static str {
        match self {
            AnalyzerVerdict::Complete => "complete",
            AnalyzerVerdict::Followup => "followup",
            AnalyzerVerdict::Failed => "failed",
        }
    }

    pub(crate) fn parse(word: &str) -> Option<AnalyzerVerdict> {
        match word.to_ascii_lowercase().as_str() {
            "complete" => Some(AnalyzerVerdict::Complete),
            "followup" | "follow_up" | "follow-up" => Some(AnalyzerVerdict::Followup),
            "failed" => Some(AnalyzerVerdict::Failed),
            _ => None,
        }
    }
}

/// The bounds on a pipeline's loops, time and money. Each one, when reached, blocks the pipeline.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Limits {
    /// Failed attempts in a row a stage may have (crash, non-zero exit, no verdict, interrupted).
    pub(crate) max_attempts: u32,
    /// Follow-up verdicts that relaunch the implementer without a person deciding.
    pub(crate) max_followups: u32,
    /// QA failures that send the implementer back.
    pub(crate) max_qa_loops: u32,
    /// Seconds the pipeline may spend running stages (time blocked does not count).
    pub(crate) max_duration_s: u64,
    /// Dollars the agents may report spending, in total.
    pub(crate) max_cost_usd: Option<f64>,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_attempts: 2,
            max_followups: 3,
            max_qa_loops: 2,
            max_duration_s: 7200,
            max_cost_usd: None,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct PipelineStage {
    pub(crate) stage_type: StageType,
    pub(crate) status: StageStatus,
    /// Who does the stage: the command line, `git` for the built-in merger, empty when skipped.
    pub(crate) agent_name: String,
    /// The command line run in a pane; `None` for a skipped stage and for the built-in merger.
    pub(crate) command: Option<String>,
    /// The pane of the latest attempt.
    pub(crate) run_id: Option<String>,
    /// The process id of the latest attempt's agent, to end it if fugue dies under it.
    #[serde(default)]
    pub(crate) run_pid: Option<u32>,
    pub(crate) verdict: Option<AnalyzerVerdict>,
    /// Attempts started so far; numbers every run of the stage.
    pub(crate) attempt: u32,
    /// Failed attempts in a row, reset by a success or by a control action.
    pub(crate) failures: u32,
    /// Dollars reported by this stage's runs.
    pub(crate) cost_usd: f64,
    /// How the latest attempt ended, in words.
    pub(crate) reason: Option<String>,
    pub(crate) started_at: Option<u64>,
    pub(crate) completed_at: Option<u64>,
}

impl PipelineStage {
    fn new(stage_type: StageType, command: Option<String>) -> PipelineStage {
        let (status, agent_name) = match (&command, stage_type) {
            (Some(command), _) => (StageStatus::Pending, command.clone()),
            (None, StageType::Merger) => (StageStatus::Pending, "git".to_string()),
            (None, _) => (StageStatus::Skipped, String::new()),
        };
        PipelineStage {
            stage_type,
            status,
            agent_name,
            command,
            run_id: None,
            run_pid: None,
            verdict: None,
            attempt: 0,
            failures: 0,
            cost_usd: 0.0,
            reason: None,
            started_at: None,
            completed_at: None,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct PipelineEvent {
    /// Milliseconds since the Unix epoch.
    pub(crate) timestamp: u64,
    pub(crate) event_type: String,
    pub(crate) description: String,
    pub(crate) stage: Option<StageType>,
}

/// Why a pipeline waits for a control action, and which stage `retry` runs again.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Blocked {
    pub(crate) stage: StageType,
    pub(crate) reason: String,
    pub(crate) at: u64,
}

/// What the pipeline works on, fixed when it is created.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Job {
    /// The repository's main working tree.
    pub(crate) repo: String,
    pub(crate) base_branch: String,
    /// The commit the pipeline's branch starts from.
    pub(crate) base_commit: String,
    pub(crate) branch: String,
    pub(crate) worktree: String,
    pub(crate) task: String,
    pub(crate) env: Vec<(String, String)>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Pipeline {
    pub(crate) schema_version: u32,
    pub(crate) id: String,
    pub(crate) name: Option<String>,
    pub(crate) idea_id: Option<String>,
    pub(crate) status: PipelineStatus,
    /// The four stages, in order.
    pub(crate) stages: Vec<PipelineStage>,
    pub(crate) events: Vec<PipelineEvent>,
    pub(crate) events_dropped: u64,
    pub(crate) created_at: u64,
    pub(crate) updated_at: u64,
    pub(crate) completed_at: Option<u64>,
    pub(crate) job: Job,
    pub(crate) limits: Limits,
    /// The stage running, or the stage blocked at.
    pub(crate) current: Option<StageType>,
    /// The implementer's prompt: the task, a follow-up prompt, or QA's failing output.
    pub(crate) prompt: String,
    pub(crate) blocked: Option<Blocked>,
    pub(crate) followups: u32,
    pub(crate) qa_loops: u32,
    pub(crate) cost_usd: f64,
    /// Milliseconds spent running, not counting the current stretch.
    pub(crate) active_ms: u64,
    /// When the current stretch of running began.
    pub(crate) running_since: Option<u64>,
    pub(crate) merged_commit: Option<String>,
    /// The text output of the latest finished stage, kept for the next stage to read.
    pub(crate) last_output: Option<String>,
    /// Transitions applied so far.
    pub(crate) seq: u64,
}

/// What happened, and when (milliseconds since the Unix epoch).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Event {
    pub(crate) at: u64,
    pub(crate) kind: EventKind,
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) enum EventKind {
    /// The pipeline was just created: run the implementer on the task.
    Start,
    /// A stage's run ended (or could not start); `cost_usd` is what its agent reported.
    Finished { stage: StageType, outcome: Outcome, cost_usd: Option<f64> },
    /// fugue stopped while a stage ran; on restart the stage runs again as a new attempt.
    Interrupted,
    /// The duration limit passed while a stage ran; the runner has already stopped it.
    TimeUp,
    /// A control action; `limits`, when given, replace the pipeline's limits first.
    Control { action: Control, limits: Option<Limits> },
}

/// How one run of a stage ended.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Outcome {
    /// Implementer exited 0 with commits ahead of the base; QA passed; the merge landed.
    Success(String),
    /// The analyzer's verdict (exit 0 and a valid verdict file).
    Verdict { verdict: AnalyzerVerdict, reason: String, followup_prompt: Option<String> },
    /// A failed attempt: it may be retried while attempts remain.
    Failed(String),
    /// QA failed; the text goes to the implementer as its next prompt.
    QaFailed(String),
    /// The merge cannot land (a conflict, a dirty checkout): blocks at once.
    Conflict(String),
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Control {
    /// Run the blocked stage again, with fresh loop budgets.
    Retry,
    /// Run the implementer with this prompt, with fresh loop budgets.
    Followup(String),
    /// Stop for good; the branch and worktree stay.
    Cancel,
}

/// The new pipeline and what to do next.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Transition {
    pub(crate) pipeline: Pipeline,
    pub(crate) step: Step,
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Step {
    /// Start attempt `attempt` of `stage`, with `prompt` in its prompt file.
    Run { stage: StageType, attempt: u32, prompt: String },
    /// Blocked: wait for a control action.
    Wait,
    /// Complete or cancelled: nothing more will happen.
    Done,
    /// The event does not apply in this state; the pipeline is unchanged.
    Refuse(String),
}

/// The agents of a new pipeline: the implementer is required, the others optional.
#[derive(Clone, Debug, Default)]
pub(crate) struct Agents {
    pub(crate) implementer: String,
    pub(crate) analyzer: Option<String>,
    pub(crate) qa: Option<String>,
    pub(crate) merger: Option<String>,
}

impl Pipeline {
    pub(crate) fn new(
        id: String,
        name: Option<String>,
        idea_id: Option<String>,
        job: Job,
        agents: Agents,
        limits: Limits,
        at: u64,
    ) -> Pipeline {
        let stages = vec![
            PipelineStage::new(StageType::Implementer, Some(agents.implementer)),
            PipelineStage::new(StageType::Analyzer, agents.analyzer),
            PipelineStage::new(StageType::Qa, agents.qa),
            PipelineStage::new(StageType::Merger, agents.merger),
        ];
        let mut pipeline = Pipeline {
            schema_version: SCHEMA_VERSION,
            id,
            name,
            idea_id,
            status: PipelineStatus::Running,
            stages,
            events: Vec::new(),
            events_dropped: 0,
            created_at: at,
            updated_at: at,
            completed_at: None,
            prompt: job.task.clone(),
            job,
            limits,
            current: None,
            blocked: None,
            followups: 0,
            qa_loops: 0,
            cost_usd: 0.0,
            active_ms: 0,
            running_since: None,
            merged_commit: None,
            last_output: None,
            seq: 0,
        };
        let description = format!(
            "created on branch {} from {} at {}",
            pipeline.job.branch,
            pipeline.job.base_branch,
            short_commit(&pipeline.job.base_commit)
        );
        pipeline.record(at, "created", None, description);
        pipeline
    }

    pub(crate) fn stage(&self, stage: StageType) -> &PipelineStage {
        &self.stages[stage.index()]
    }

    pub(crate) fn stage_mut(&mut self, stage: StageType) -> &mut PipelineStage {
        &mut self.stages[stage.index()]
    }

    /// The stage running now, if any.
    pub(crate) fn running(&self) -> Option<StageType> {
        let stage = self.current?;
        (self.status == PipelineStatus::Running && self.stage(stage).status == StageStatus::Running)
            .then_some(stage)
    }

    /// Appends an event, dropping the oldest past the bound.
    pub(crate) fn record(
        &mut self,
        at: u64,
        event_type: &str,
        stage: Option<StageType>,
        description: String,
    ) {
        self.events.push(PipelineEvent {
            timestamp: at,
            event_type: event_type.to_string(),
            description,
            stage,
        });
        if self.events.len() > MAX_EVENTS {
            let extra = self.events.len() - MAX_EVENTS;
            self.events.drain(..extra);
            self.events_dropped += extra as u64;
        }
    }

    /// Milliseconds spent running stages, as of `at`.
    pub(crate) fn elapsed_ms(&self, at: u64) -> u64 {
        self.active_ms + self.running_since.map_or(0, |since| at.saturating_sub(since))
    }

    /// What a person or agent may do now.
    pub(crate) fn allowed_actions(&self) -> &'static [&'static str] {
        match self.status {
            PipelineStatus::Running => &["cancel"],
            PipelineStatus::Blocked => &["retry", "followup", "cancel"],
            PipelineStatus::Complete | PipelineStatus::Cancelled => &[],
        }
    }

    /// The stage after `stage` that has an agent; the merger always has one.
    fn following(&self, stage: StageType) -> StageType {
        StageType::ALL[stage.index() + 1..]
            .iter()
            .copied()
            .find(|s| self.stage(*s).status != StageStatus::Skipped)
            .unwrap_or(StageType::Merger)
    }

    /// The prompt a run of `stage` gets: the implementer's current prompt, else the task.
    fn prompt_for(&self, stage: StageType) -> String {
        match stage {
            StageType::Implementer => self.prompt.clone(),
            _ => self.job.task.clone(),
        }
    }

    fn start_clock(&mut self, at: u64) {
        self.running_since.get_or_insert(at);
    }

    fn stop_clock(&mut self, at: u64) {
        self.active_ms = self.elapsed_ms(at);
        self.running_since = None;
    }

    /// The first limit that forbids starting `stage` now, in words.
    fn limit_reached(&self, stage: StageType, at: u64) -> Option<String> {
        let limits = &self.limits;
        let s = self.stage(stage);
        if s.failures >= limits.max_attempts {
            return Some(format!(
                "{stage} failed {} attempt(s) in a row (max_attempts {}); last: {}",
                s.failures,
                limits.max_attempts,
                s.reason.as_deref().unwrap_or("unknown")
            ));
        }
        if self.followups > limits.max_followups {
            return Some(format!(
                "the analyzer asked for a follow-up more than max_followups ({}) times; its \
                 latest prompt is kept: retry runs the implementer with it",
                limits.max_followups
            ));
        }
        if self.qa_loops > limits.max_qa_loops {
            return Some(format!(
                "QA failed more than max_qa_loops ({}) times; its latest output is kept: retry \
                 runs the implementer with it",
                limits.max_qa_loops
            ));
        }
        let elapsed = self.elapsed_ms(at);
        if elapsed >= limits.max_duration_s.saturating_mul(1000) {
            return Some(format!(
                "the pipeline has run {}s, its max_duration_s is {}",
                elapsed / 1000,
                limits.max_duration_s
            ));
        }
        if let Some(max) = limits.max_cost_usd
            && self.cost_usd >= max
        {
            return Some(format!(
                "the agents reported ${:.2}, its max_cost_usd is ${max:.2}",
                self.cost_usd
            ));
        }
        None
    }
}

/// The transition function: the pipeline after `event`, and the step to take.
pub(crate) fn next(pipeline: &Pipeline, event: Event) -> Transition {
    let at = event.at;
    let mut p = pipeline.clone();
    p.seq += 1;
    p.updated_at = at;
    match event.kind {
        EventKind::Start => start(p, pipeline, at),
        EventKind::Finished { stage, outcome, cost_usd } => {
            if pipeline.running() != Some(stage) {
                return refuse(pipeline, format!("{stage} is not running; its result is stale"));
            }
            add_cost(&mut p, stage, cost_usd);
            finish(p, stage, outcome, at)
        }
        EventKind::Interrupted => interrupted(p, pipeline, at),
        EventKind::TimeUp => match pipeline.running() {
            Some(stage) => {
                let reason =
                    format!("stopped: max_duration_s ({}s) ran out", p.limits.max_duration_s);
                end_attempt(&mut p, stage, StageStatus::Failed, &reason, at);
                let why = p.limit_reached(stage, at).unwrap_or(reason);
                block(p, stage, why, at)
            }
            None => refuse(pipeline, "no stage is running".to_string()),
        },
        EventKind::Control { action, limits } => control(p, pipeline, action, limits, at),
    }
}

fn start(p: Pipeline, old: &Pipeline, at: u64) -> Transition {
    if old.seq != 0 || old.status != PipelineStatus::Running {
        return refuse(old, "the pipeline has already started".to_string());
    }
    let prompt = p.prompt.clone();
    launch(p, StageType::Implementer, prompt, at)
}

fn add_cost(p: &mut Pipeline, stage: StageType, cost: Option<f64>) {
    if let Some(cost) = cost.filter(|c| c.is_finite() && *c > 0.0) {
        p.stage_mut(stage).cost_usd += cost;
        p.cost_usd += cost;
    }
}

fn finish(mut p: Pipeline, stage: StageType, outcome: Outcome, at: u64) -> Transition {
    match outcome {
        Outcome::Success(summary) => {
            end_attempt(&mut p, stage, StageStatus::Success, &summary, at);
            p.stage_mut(stage).failures = 0;
            p.record(at, "stage_succeeded", Some(stage), format!("{stage}: {summary}"));
            if stage == StageType::Merger {
                return complete(p, at);
            }
            let next = p.following(stage);
            let prompt = p.prompt_for(next);
            launch(p, next, prompt, at)
        }
        Outcome::Verdict { verdict, reason, followup_prompt } => {
            p.stage_mut(stage).verdict = Some(verdict);
            p.stage_mut(stage).failures = 0;
            verdict_step(p, stage, verdict, reason, followup_prompt, at)
        }
        Outcome::Failed(reason) => {
            end_attempt(&mut p, stage, StageStatus::Failed, &reason, at);
            p.stage_mut(stage).failures += 1;
            let n = p.stage(stage).attempt;
            p.record(at, "stage_failed", Some(stage), format!("{stage} attempt {n}: {reason}"));
            let prompt = p.prompt_for(stage);
            launch(p, stage, prompt, at)
        }
        Outcome::QaFailed(feedback) => {
            end_attempt(&mut p, stage, StageStatus::Failed, "tests failed", at);
            p.stage_mut(stage).failures = 0;
            p.qa_loops += 1;
            let description = format!(
                "QA failed ({} of max_qa_loops {}); the implementer gets its output",
                p.qa_loops, p.limits.max_qa_loops
            );
            p.record(at, "qa_failed", Some(stage), description);
            launch(p, StageType::Implementer, feedback, at)
        }
        Outcome::Conflict(reason) => {
            end_attempt(&mut p, stage, StageStatus::Failed, &reason, at);
            block(p, stage, reason, at)
        }
    }
}

fn verdict_step(
    mut p: Pipeline,
    stage: StageType,
    verdict: AnalyzerVerdict,
    reason: String,
    followup_prompt: Option<String>,
    at: u64,
) -> Transition {
    let description = format!("verdict {}: {}", verdict.name(), quote(&reason));
    p.record(at, "verdict", Some(stage), description);
    match (verdict, followup_prompt) {
        (AnalyzerVerdict::Complete, _) => {
            end_attempt(&mut p, stage, StageStatus::Success, &reason, at);
            let next = p.following(stage);
            let prompt = p.prompt_for(next);
            launch(p, next, prompt, at)
        }
        (AnalyzerVerdict::Followup, Some(prompt)) if !prompt.trim().is_empty() => {
            end_attempt(&mut p, stage, StageStatus::Success, &reason, at);
            p.followups += 1;
            let description = format!(
                "follow-up {} of max_followups {}: {}",
                p.followups,
                p.limits.max_followups,
                quote(&prompt)
            );
            p.record(at, "followup", Some(StageType::Implementer), description);
            launch(p, StageType::Implementer, prompt, at)
        }
        (AnalyzerVerdict::Followup, _) => {
            // A follow-up without a prompt gives the implementer nothing to do: a failed attempt.
            p.stage_mut(stage).verdict = None;
            finish(p, stage, Outcome::Failed("followup verdict without a prompt".into()), at)
        }
        (AnalyzerVerdict::Failed, _) => {
            end_attempt(&mut p, stage, StageStatus::Failed, &reason, at);
            block(p, stage, format!("the analyzer's verdict is failed: {reason}"), at)
        }
    }
}

fn interrupted(mut p: Pipeline, old: &Pipeline, at: u64) -> Transition {
    if old.status != PipelineStatus::Running {
        return refuse(old, format!("the pipeline is {}, not running", old.status.name()));
    }
    // The clock stopped when fugue did; the last write is the best record of when that was.
    if let Some(since) = p.running_since {
        p.active_ms += old.updated_at.saturating_sub(since);
        p.running_since = None;
    }
    let stage = old.current.unwrap_or(StageType::Implementer);
    if p.stage(stage).status == StageStatus::Running {
        let n = p.stage(stage).attempt;
        let reason = "interrupted: fugue stopped while it ran";
        end_attempt(&mut p, stage, StageStatus::Failed, reason, at);
        p.stage_mut(stage).failures += 1;
        p.record(at, "interrupted", Some(stage), format!("{stage} attempt {n} was interrupted"));
    }
    let prompt = p.prompt_for(stage);
    launch(p, stage, prompt, at)
}

fn control(
    mut p: Pipeline,
    old: &Pipeline,
    action: Control,
    limits: Option<Limits>,
    at: u64,
) -> Transition {
    if old.status.is_terminal() {
        let why = format!("the pipeline is {}; nothing is left to control", old.status.name());
        return refuse(old, why);
    }
    let prompt = match action {
        Control::Cancel => return cancel(p, at),
        _ if old.status == PipelineStatus::Running => {
            let stage = old.current.map_or("a stage", StageType::name);
            return refuse(
                old,
                format!(
                    "the pipeline is running ({stage}); only cancel is allowed now. Wait with \
                     fugue_agent_pipeline_status wait_ms"
                ),
            );
        }
        Control::Followup(prompt) if prompt.trim().is_empty() => {
            return refuse(old, "followup needs a non-empty prompt".to_string());
        }
        Control::Followup(prompt) => Some(prompt),
        Control::Retry => None,
    };
    if let Some(limits) = limits {
        p.record(at, "limits", None, format!("limits changed to {limits:?}"));
        p.limits = limits;
    }
    // A decision from outside grants fresh loop budgets; money and time are never reset.
    for stage in &mut p.stages {
        stage.failures = 0;
    }
    p.followups = 0;
    p.qa_loops = 0;
    match prompt {
        Some(prompt) => {
            let description = format!("follow-up from control: {}", quote(&prompt));
            p.record(at, "followup", Some(StageType::Implementer), description);
            launch(p, StageType::Implementer, prompt, at)
        }
        None => {
            let stage = old.blocked.as_ref().map_or(StageType::Implementer, |b| b.stage);
            p.record(at, "retry", Some(stage), format!("retry {stage}"));
            let prompt = p.prompt_for(stage);
            launch(p, stage, prompt, at)
        }
    }
}

fn cancel(mut p: Pipeline, at: u64) -> Transition {
    if let Some(stage) = p.running() {
        end_attempt(&mut p, stage, StageStatus::Failed, "cancelled", at);
    }
    p.stop_clock(at);
    p.status = PipelineStatus::Cancelled;
    p.completed_at = Some(at);
    p.blocked = None;
    p.record(at, "cancelled", p.current, "cancelled; the branch and worktree are kept".into());
    Transition { pipeline: p, step: Step::Done }
}

/// Starts a run of `stage` unless a limit forbids it, in which case the pipeline blocks.
fn launch(mut p: Pipeline, stage: StageType, prompt: String, at: u64) -> Transition {
    if stage == StageType::Implementer {
        p.prompt = prompt.clone();
    }
    if let Some(reason) = p.limit_reached(stage, at) {
        return block(p, stage, reason, at);
    }
    p.start_clock(at);
    p.status = PipelineStatus::Running;
    p.current = Some(stage);
    p.blocked = None;
    let s = p.stage_mut(stage);
    s.attempt += 1;
    s.status = StageStatus::Running;
    s.run_id = None;
    s.run_pid = None;
    s.verdict = None;
    s.reason = None;
    s.started_at = Some(at);
    s.completed_at = None;
    let attempt = s.attempt;
    p.record(at, "stage_started", Some(stage), format!("{stage} attempt {attempt} started"));
    Transition { pipeline: p, step: Step::Run { stage, attempt, prompt } }
}

fn block(mut p: Pipeline, stage: StageType, reason: String, at: u64) -> Transition {
    p.stop_clock(at);
    p.status = PipelineStatus::Blocked;
    p.current = Some(stage);
    p.stage_mut(stage).status = StageStatus::Blocked;
    p.record(at, "blocked", Some(stage), reason.clone());
    p.blocked = Some(Blocked { stage, reason, at });
    Transition { pipeline: p, step: Step::Wait }
}

fn complete(mut p: Pipeline, at: u64) -> Transition {
    p.stop_clock(at);
    p.status = PipelineStatus::Complete;
    p.completed_at = Some(at);
    p.current = None;
    p.blocked = None;
    p.record(at, "completed", None, "pipeline complete".into());
    Transition { pipeline: p, step: Step::Done }
}

fn end_attempt(p: &mut Pipeline, stage: StageType, status: StageStatus, reason: &str, at: u64) {
    let s = p.stage_mut(stage);
    s.status = status;
    s.reason = Some(reason.to_string());
    s.completed_at = Some(at);
}

fn refuse(p: &Pipeline, why: String) -> Transition {
    Transition { pipeline: p.clone(), step: Step::Refuse(why) }
}

/// The first line of `text`, cut to a length an event can carry.
pub(crate) fn quote(text: &str) -> String {
    let line = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("").trim();
    if line.chars().count() <= QUOTE_CHARS {
        return line.to_string();
    }
    let cut: String = line.chars().take(QUOTE_CHARS).collect();
    format!("{cut}…")
}

pub(crate) fn short_commit(commit: &str) -> &str {
    &commit[..commit.len().min(10)]
}

#[cfg(test)]
mod tests;
