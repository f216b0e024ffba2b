//! The transition function's table of cases: each test drives `next` from a state and checks
//! the new state and the step.

use super::*;
use crate::agent::record::{Action, Agents, Assignment, MAX_EVENTS};
use AnalyzerVerdict as V;
use StageType::*;

fn job() -> Assignment {
    Assignment {
        repo: "/r".into(),
        base_branch: "main".into(),
        base_commit: "0123456789abcdef".into(),
        branch: "fugue/1".into(),
        worktree: "/w".into(),
        task: "TASK".into(),
        env: Vec::new(),
    }
}

fn agents(analyzer: bool, qa: bool) -> Agents {
    Agents {
        implementer: "impl".into(),
        analyzer: analyzer.then(|| "ana".into()),
        qa: qa.then(|| "qa".into()),
        merger: None,
    }
}

fn pipeline_with(limits: Limits, analyzer: bool, qa: bool) -> AgentPipeline {
    AgentPipeline::new("id".parse().unwrap(), None, None, job(), agents(analyzer, qa), limits, 1000)
}

/// A started pipeline: the implementer's first attempt is running.
fn started(limits: Limits) -> AgentPipeline {
    let t = next(&pipeline_with(limits, true, true), ev(1000, EventKind::Start));
    assert_eq!(t.step, run(Implementer, 1, "TASK"));
    t.pipeline
}

fn ev(at: u64, kind: EventKind) -> Event {
    Event { at, kind }
}

fn run(stage: StageType, attempt: u32, prompt: &str) -> Step {
    Step::Run { stage, attempt, prompt: prompt.into() }
}

fn done(p: &AgentPipeline, stage: StageType, outcome: StageOutcome) -> Transition {
    next(p, ev(p.updated_at + 10, EventKind::Finished { stage, outcome, cost_usd: None }))
}

fn ok(p: &AgentPipeline, stage: StageType) -> Transition {
    done(p, stage, StageOutcome::Success("ok".into()))
}

fn verdict(p: &AgentPipeline, v: AnalyzerVerdict, prompt: Option<&str>) -> Transition {
    let outcome = StageOutcome::Verdict {
        verdict: v,
        reason: "because".into(),
        followup_prompt: prompt.map(str::to_string),
    };
    done(p, Analyzer, outcome)
}

fn control(p: &AgentPipeline, action: Control) -> Transition {
    next(p, ev(p.updated_at + 10, EventKind::Control { action, limits: None }))
}

fn blocked_reason(t: &Transition) -> &str {
    assert_eq!(t.step, Step::Wait);
    assert_eq!(t.pipeline.status, PipelineStatus::Blocked);
    &t.pipeline.blocked.as_ref().unwrap().reason
}

#[test]
fn start_runs_the_implementer_on_the_task() {
    let p = started(Limits::default());
    assert_eq!(p.status, PipelineStatus::Running);
    assert_eq!(p.running(), Some(Implementer));
    assert_eq!(p.stage(Implementer).attempt, 1);
    assert_eq!(
        p.events.iter().map(|e| e.event_type.as_str()).collect::<Vec<_>>(),
        ["created", "stage_started"]
    );
    assert!(matches!(next(&p, ev(2000, EventKind::Start)).step, Step::Refuse(_)));
}

#[test]
fn the_happy_path_goes_through_every_stage_to_complete() {
    let p = started(Limits::default());
    let t = ok(&p, Implementer);
    assert_eq!(t.step, run(Analyzer, 1, "TASK"));
    assert_eq!(t.pipeline.stage(Implementer).status, StageStatus::Success);
    let t = verdict(&t.pipeline, V::Complete, None);
    assert_eq!(t.step, run(Qa, 1, "TASK"));
    assert_eq!(t.pipeline.stage(Analyzer).verdict, Some(V::Complete));
    let t = ok(&t.pipeline, Qa);
    assert_eq!(t.step, run(Merger, 1, "TASK"));
    let t = ok(&t.pipeline, Merger);
    assert_eq!(t.step, Step::Done);
    assert_eq!(t.pipeline.status, PipelineStatus::Complete);
    assert!(t.pipeline.completed_at.is_some());
    assert!(t.pipeline.allowed_actions().is_empty());
    assert!(StageType::ALL.iter().all(|s| t.pipeline.stage(*s).status == StageStatus::Success));
}

#[test]
fn skipped_stages_are_passed_over() {
    let p = pipeline_with(Limits::default(), false, false);
    assert_eq!(p.stage(Analyzer).status, StageStatus::Skipped);
    let t = next(&p, ev(1000, EventKind::Start));
    let t = ok(&t.pipeline, Implementer);
    assert_eq!(t.step, run(Merger, 1, "TASK"));
    let p = pipeline_with(Limits::default(), false, true);
    let t = ok(&next(&p, ev(1000, EventKind::Start)).pipeline, Implementer);
    assert_eq!(t.step, run(Qa, 1, "TASK"));
}

#[test]
fn followup_relaunches_the_implementer_with_its_prompt() {
    let p = ok(&started(Limits::default()), Implementer).pipeline;
    let t = verdict(&p, V::Followup, Some("add tests"));
    assert_eq!(t.step, run(Implementer, 2, "add tests"));
    assert_eq!(t.pipeline.followups, 1);
    assert_eq!(t.pipeline.prompt, "add tests");
    // The analyzer after the follow-up sees the task, not the follow-up prompt.
    let t = ok(&t.pipeline, Implementer);
    assert_eq!(t.step, run(Analyzer, 2, "TASK"));
}

#[test]
fn followup_without_a_prompt_is_a_failed_attempt() {
    let p = ok(&started(Limits::default()), Implementer).pipeline;
    let t = verdict(&p, V::Followup, Some("  "));
    assert_eq!(t.step, run(Analyzer, 2, "TASK"));
    assert_eq!(t.pipeline.stage(Analyzer).failures, 1);
    assert_eq!(t.pipeline.followups, 0);
}

#[test]
fn a_failed_verdict_blocks_and_retry_reruns_the_analyzer() {
    let p = ok(&started(Limits::default()), Implementer).pipeline;
    let t = verdict(&p, V::Failed, None);
    assert!(blocked_reason(&t).contains("failed: because"));
    assert_eq!(t.pipeline.stage(Analyzer).status, StageStatus::Blocked);
    assert_eq!(t.pipeline.allowed_actions(), [Action::Retry, Action::Followup, Action::Cancel]);
    let t = control(&t.pipeline, Control::Retry);
    assert_eq!(t.step, run(Analyzer, 2, "TASK"));
    assert!(t.pipeline.blocked.is_none());
}

#[test]
fn control_followup_runs_the_implementer_from_blocked() {
    let p = ok(&started(Limits::default()), Implementer).pipeline;
    let t = verdict(&p, V::Failed, None);
    let t = control(&t.pipeline, Control::Followup("try again".into()));
    assert_eq!(t.step, run(Implementer, 2, "try again"));
    assert!(matches!(control(&p, Control::Followup("".into())).step, Step::Refuse(_)));
}

#[test]
fn a_failed_attempt_retries_until_max_attempts_then_blocks() {
    let p = started(Limits { max_attempts: 2, ..Limits::default() });
    let t = done(&p, Implementer, StageOutcome::Failed("exit 1".into()));
    assert_eq!(t.step, run(Implementer, 2, "TASK"));
    let t = done(&t.pipeline, Implementer, StageOutcome::Failed("exit 2".into()));
    let reason = blocked_reason(&t);
    assert!(
        reason.contains("implementer failed 2 attempt(s)") && reason.contains("exit 2"),
        "{reason}"
    );
    // Retry grants fresh attempts.
    let t = control(&t.pipeline, Control::Retry);
    assert_eq!(t.step, run(Implementer, 3, "TASK"));
}

#[test]
fn a_success_resets_the_failure_count() {
    let p = started(Limits { max_attempts: 2, ..Limits::default() });
    let t = done(&p, Implementer, StageOutcome::Failed("x".into()));
    let t = ok(&t.pipeline, Implementer);
    assert_eq!(t.pipeline.stage(Implementer).failures, 0);
    let t = verdict(&t.pipeline, V::Followup, Some("more"));
    let t = done(&t.pipeline, Implementer, StageOutcome::Failed("y".into()));
    assert_eq!(t.step, run(Implementer, 4, "more"), "a retry keeps the follow-up prompt");
}

#[test]
fn qa_failure_sends_its_output_to_the_implementer() {
    let p = ok(&started(Limits::default()), Implementer).pipeline;
    let p = verdict(&p, V::Complete, None).pipeline;
    let t = done(&p, Qa, StageOutcome::QaFailed("test x failed".into()));
    assert_eq!(t.step, run(Implementer, 2, "test x failed"));
    assert_eq!(t.pipeline.qa_loops, 1);
    assert_eq!(t.pipeline.stage(Qa).status, StageStatus::Failed);
    // Through the analyzer again, then QA passes.
    let t = ok(&t.pipeline, Implementer);
    let t = verdict(&t.pipeline, V::Complete, None);
    assert_eq!(t.step, run(Qa, 2, "TASK"));
    assert_eq!(ok(&t.pipeline, Qa).step, run(Merger, 1, "TASK"));
}

#[test]
fn qa_loops_are_capped() {
    let mut p = ok(&started(Limits { max_qa_loops: 1, ..Limits::default() }), Implementer).pipeline;
    p = verdict(&p, V::Complete, None).pipeline;
    p = done(&p, Qa, StageOutcome::QaFailed("f1".into())).pipeline;
    p = ok(&p, Implementer).pipeline;
    p = verdict(&p, V::Complete, None).pipeline;
    let t = done(&p, Qa, StageOutcome::QaFailed("f2".into()));
    assert!(blocked_reason(&t).contains("max_qa_loops (1)"));
    assert_eq!(t.pipeline.blocked.as_ref().unwrap().stage, Implementer);
    // Retry runs the implementer with QA's latest output.
    assert_eq!(control(&t.pipeline, Control::Retry).step, run(Implementer, 3, "f2"));
}

#[test]
fn followups_are_capped() {
    let mut p = started(Limits { max_followups: 1, ..Limits::default() });
    p = ok(&p, Implementer).pipeline;
    p = verdict(&p, V::Followup, Some("one")).pipeline;
    p = ok(&p, Implementer).pipeline;
    let t = verdict(&p, V::Followup, Some("two"));
    assert!(blocked_reason(&t).contains("max_followups (1)"));
    assert_eq!(t.pipeline.stage(Implementer).attempt, 2, "no spawn past the limit");
    assert_eq!(control(&t.pipeline, Control::Retry).step, run(Implementer, 3, "two"));
}

#[test]
fn cost_is_summed_and_checked_before_the_next_spawn() {
    let p = started(Limits { max_cost_usd: Some(1.0), ..Limits::default() });
    let finished = |p: &AgentPipeline, cost| {
        next(
            p,
            ev(
                p.updated_at + 1,
                EventKind::Finished {
                    stage: Implementer,
                    outcome: StageOutcome::Success("ok".into()),
                    cost_usd: Some(cost),
                },
            ),
        )
    };
    let t = finished(&p, 0.4);
    assert_eq!(t.step, run(Analyzer, 1, "TASK"));
    assert!((t.pipeline.cost_usd - 0.4).abs() < 1e-9);
    let p = verdict(&t.pipeline, V::Followup, Some("again")).pipeline;
    let t = finished(&p, 0.7);
    assert!(blocked_reason(&t).contains("max_cost_usd"));
    assert!((t.pipeline.stage(Implementer).cost_usd - 1.1).abs() < 1e-9);
    assert_eq!(t.pipeline.stage(Analyzer).attempt, 1);
    // Retry alone blocks again: money is never reset. Raised limits let it go on.
    let again = control(&t.pipeline, Control::Retry);
    assert_eq!(again.step, Step::Wait);
    let raised = Limits { max_cost_usd: Some(5.0), ..Limits::default() };
    let t = next(
        &t.pipeline,
        ev(
            t.pipeline.updated_at + 1,
            EventKind::Control { action: Control::Retry, limits: Some(raised) },
        ),
    );
    assert_eq!(t.step, run(Analyzer, 2, "TASK"));
}

#[test]
fn duration_counts_running_time_only() {
    let p = started(Limits { max_duration_s: 10, ..Limits::default() });
    // 4 s in the implementer, then blocked for an hour, then 7 s more: over the limit.
    let t = next(
        &p,
        ev(
            5000,
            EventKind::Finished {
                stage: Implementer,
                outcome: StageOutcome::Failed("x".into()),
                cost_usd: None,
            },
        ),
    );
    let t = next(
        &t.pipeline,
        ev(
            5000,
            EventKind::Finished {
                stage: Implementer,
                outcome: StageOutcome::Failed("x".into()),
                cost_usd: None,
            },
        ),
    );
    assert_eq!(t.step, Step::Wait);
    assert_eq!(t.pipeline.elapsed_ms(3_600_000), 4000);
    let t = next(
        &t.pipeline,
        ev(3_600_000, EventKind::Control { action: Control::Retry, limits: None }),
    );
    assert_eq!(t.step, run(Implementer, 3, "TASK"));
    let t = next(
        &t.pipeline,
        ev(
            3_607_000,
            EventKind::Finished {
                stage: Implementer,
                outcome: StageOutcome::Success("ok".into()),
                cost_usd: None,
            },
        ),
    );
    assert!(blocked_reason(&t).contains("max_duration_s is 10"));
}

#[test]
fn time_up_while_running_blocks() {
    let p = started(Limits::default());
    let t = next(&p, ev(9000, EventKind::TimeUp));
    assert!(blocked_reason(&t).contains("max_duration_s"));
    assert_eq!(t.pipeline.stage(Implementer).status, StageStatus::Blocked);
    assert!(matches!(next(&t.pipeline, ev(9001, EventKind::TimeUp)).step, Step::Refuse(_)));
}

#[test]
fn a_merge_conflict_blocks_and_retry_merges_again() {
    let mut p = ok(&started(Limits::default()), Implementer).pipeline;
    p = verdict(&p, V::Complete, None).pipeline;
    p = ok(&p, Qa).pipeline;
    let t = done(&p, Merger, StageOutcome::Conflict("conflict in a.txt".into()));
    assert_eq!(blocked_reason(&t), "conflict in a.txt");
    assert_eq!(t.pipeline.stage(Merger).status, StageStatus::Blocked);
    assert_eq!(control(&t.pipeline, Control::Retry).step, run(Merger, 2, "TASK"));
}

#[test]
fn interrupted_stage_reruns_as_a_new_attempt_or_blocks() {
    let p = started(Limits { max_attempts: 2, ..Limits::default() });
    let t = next(&p, ev(5000, EventKind::Interrupted));
    assert_eq!(t.step, run(Implementer, 2, "TASK"));
    assert!(t.pipeline.events.iter().any(|e| e.event_type == "interrupted"));
    let t = next(&t.pipeline, ev(6000, EventKind::Interrupted));
    assert!(blocked_reason(&t).contains("interrupted"));
    assert!(matches!(next(&t.pipeline, ev(7000, EventKind::Interrupted)).step, Step::Refuse(_)));
}

#[test]
fn cancel_ends_a_running_or_blocked_pipeline() {
    let p = started(Limits::default());
    let t = control(&p, Control::Cancel);
    assert_eq!(t.step, Step::Done);
    assert_eq!(t.pipeline.status, PipelineStatus::Cancelled);
    assert_eq!(t.pipeline.stage(Implementer).reason.as_deref(), Some("cancelled"));
    assert!(matches!(control(&t.pipeline, Control::Retry).step, Step::Refuse(_)));
    assert!(matches!(control(&t.pipeline, Control::Cancel).step, Step::Refuse(_)));
    let blocked = verdict(&ok(&p, Implementer).pipeline, V::Failed, None).pipeline;
    assert_eq!(control(&blocked, Control::Cancel).pipeline.status, PipelineStatus::Cancelled);
}

#[test]
fn retry_and_followup_are_refused_while_running() {
    let p = started(Limits::default());
    let t = control(&p, Control::Retry);
    assert!(matches!(&t.step, Step::Refuse(why) if why.contains("only cancel")));
    assert_eq!(t.pipeline, p, "a refusal changes nothing");
    assert!(matches!(control(&p, Control::Followup("x".into())).step, Step::Refuse(_)));
}

#[test]
fn a_stale_result_is_refused() {
    let p = started(Limits::default());
    assert!(matches!(ok(&p, Analyzer).step, Step::Refuse(_)));
    let blocked = control(&p, Control::Cancel).pipeline;
    assert!(matches!(ok(&blocked, Implementer).step, Step::Refuse(_)));
}

#[test]
fn events_are_bounded() {
    let mut p = started(Limits { max_attempts: u32::MAX, ..Limits::default() });
    for _ in 0..300 {
        p = done(&p, Implementer, StageOutcome::Failed("x".into())).pipeline;
    }
    assert_eq!(p.events.len(), MAX_EVENTS);
    assert!(p.events_dropped > 0);
    assert_eq!(p.stage(Implementer).attempt, 301);
}

#[test]
fn every_blocked_state_offers_actions() {
    let p = started(Limits { max_attempts: 1, ..Limits::default() });
    let t = done(&p, Implementer, StageOutcome::Failed("x".into()));
    assert!(!t.pipeline.allowed_actions().is_empty());
    assert!(t.pipeline.blocked.is_some());
}

#[test]
fn the_state_round_trips_through_json() {
    let p = ok(&started(Limits::default()), Implementer).pipeline;
    let text = serde_json::to_string(&p).unwrap();
    assert_eq!(serde_json::from_str::<AgentPipeline>(&text).unwrap(), p);
    assert!(text.contains("\"stage_type\":\"implementer\""));
}
