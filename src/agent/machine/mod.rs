//! The agent pipeline of the seed as data, and its transitions as one pure function.
//!
//! A `AgentPipeline` takes one task through four stages — Implementer, Analyzer, QA, Merger — in its own
//! git worktree. `next(&pipeline, event)` is the whole policy: given what happened (a stage
//! finished with an outcome, fugue was restarted mid-stage, the duration ran out, someone sent a
//! control action) it returns the new pipeline and the one step to take next: run a stage, wait for
//! a control action, or stop. It does no I/O and reads no clock (the time comes in the event), so
//! every transition is unit-tested (`tests.rs`). The saved state it works on is `record`. Every limit is checked in `launch`, the only place a run
//! of a stage begins, so no spawn can slip past one: reaching a limit blocks with a reason.

use super::record::{
    AgentPipeline, AnalyzerVerdict, Blocked, Limits, PipelineStatus, StageStatus, StageType,
};
use crate::words::Words;

/// How much of a prompt an event quotes.
const QUOTE_CHARS: usize = 160;

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
    Finished { stage: StageType, outcome: StageOutcome, cost_usd: Option<f64> },
    /// fugue stopped while a stage ran; on restart the stage runs again as a new attempt.
    Interrupted,
    /// The duration limit passed while a stage ran; the runner has already stopped it.
    TimeUp,
    /// A control action; `limits`, when given, replace the pipeline's limits first.
    Control { action: Control, limits: Option<Limits> },
}

/// How one run of a stage ended.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum StageOutcome {
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
    pub(crate) pipeline: AgentPipeline,
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

/// The pipeline's own rules, which only the transition function uses.
impl AgentPipeline {
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
pub(crate) fn next(pipeline: &AgentPipeline, event: Event) -> Transition {
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

fn start(p: AgentPipeline, old: &AgentPipeline, at: u64) -> Transition {
    if old.seq != 0 || old.status != PipelineStatus::Running {
        return refuse(old, "the pipeline has already started".to_string());
    }
    let prompt = p.prompt.clone();
    launch(p, StageType::Implementer, prompt, at)
}

fn add_cost(p: &mut AgentPipeline, stage: StageType, cost: Option<f64>) {
    if let Some(cost) = cost.filter(|c| c.is_finite() && *c > 0.0) {
        p.stage_mut(stage).cost_usd += cost;
        p.cost_usd += cost;
    }
}

fn finish(mut p: AgentPipeline, stage: StageType, outcome: StageOutcome, at: u64) -> Transition {
    match outcome {
        StageOutcome::Success(summary) => {
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
        StageOutcome::Verdict { verdict, reason, followup_prompt } => {
            p.stage_mut(stage).verdict = Some(verdict);
            p.stage_mut(stage).failures = 0;
            verdict_step(p, stage, verdict, reason, followup_prompt, at)
        }
        StageOutcome::Failed(reason) => {
            end_attempt(&mut p, stage, StageStatus::Failed, &reason, at);
            p.stage_mut(stage).failures += 1;
            let n = p.stage(stage).attempt;
            p.record(at, "stage_failed", Some(stage), format!("{stage} attempt {n}: {reason}"));
            let prompt = p.prompt_for(stage);
            launch(p, stage, prompt, at)
        }
        StageOutcome::QaFailed(feedback) => {
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
        StageOutcome::Conflict(reason) => {
            end_attempt(&mut p, stage, StageStatus::Failed, &reason, at);
            block(p, stage, reason, at)
        }
    }
}

fn verdict_step(
    mut p: AgentPipeline,
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
            finish(p, stage, StageOutcome::Failed("followup verdict without a prompt".into()), at)
        }
        (AnalyzerVerdict::Failed, _) => {
            end_attempt(&mut p, stage, StageStatus::Failed, &reason, at);
            block(p, stage, format!("the analyzer's verdict is failed: {reason}"), at)
        }
    }
}

fn interrupted(mut p: AgentPipeline, old: &AgentPipeline, at: u64) -> Transition {
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
    mut p: AgentPipeline,
    old: &AgentPipeline,
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

fn cancel(mut p: AgentPipeline, at: u64) -> Transition {
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
fn launch(mut p: AgentPipeline, stage: StageType, prompt: String, at: u64) -> Transition {
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

fn block(mut p: AgentPipeline, stage: StageType, reason: String, at: u64) -> Transition {
    p.stop_clock(at);
    p.status = PipelineStatus::Blocked;
    p.current = Some(stage);
    p.stage_mut(stage).status = StageStatus::Blocked;
    p.record(at, "blocked", Some(stage), reason.clone());
    p.blocked = Some(Blocked { stage, reason, at });
    Transition { pipeline: p, step: Step::Wait }
}

fn complete(mut p: AgentPipeline, at: u64) -> Transition {
    p.stop_clock(at);
    p.status = PipelineStatus::Complete;
    p.completed_at = Some(at);
    p.current = None;
    p.blocked = None;
    p.record(at, "completed", None, "pipeline complete".into());
    Transition { pipeline: p, step: Step::Done }
}

fn end_attempt(
    p: &mut AgentPipeline,
    stage: StageType,
    status: StageStatus,
    reason: &str,
    at: u64,
) {
    let s = p.stage_mut(stage);
    s.status = status;
    s.reason = Some(reason.to_string());
    s.completed_at = Some(at);
}

fn refuse(p: &AgentPipeline, why: String) -> Transition {
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

#[cfg(test)]
mod tests;
