//! The agent pipeline as it is saved: the state file's format, version `SCHEMA_VERSION`.
//!
//! These types are a file-format boundary. `store` writes them as JSON after every transition and
//! reads them back after a restart, possibly by another fugue version, so a field is added only
//! with a serde default and a change in meaning bumps the version (a newer file is refused rather
//! than misread). The transitions that change them live in `machine`.

use crate::ids::{PaneId, PipelineId, short_id};
use crate::words::{Words, words};
use serde::{Deserialize, Serialize};
use std::time::SystemTime;

/// The time a record is stamped with: milliseconds since the Unix epoch.
pub(crate) fn now() -> u64 {
    crate::ids::unix_ms(SystemTime::now())
}

/// The version of the state file format; a newer file is refused rather than misread.
pub(crate) const SCHEMA_VERSION: u32 = 1;
/// Events kept in the state file; older ones are dropped and counted.
pub(crate) const MAX_EVENTS: usize = 200;

words! {
    /// A stage of the pipeline, in the order they run. Its words, here only, are the saved
    /// record's and the answers'.
    #[derive(Hash)]
    pub(crate) enum StageType {
        Implementer = "implementer",
        Analyzer = "analyzer",
        Qa = "qa",
        Merger = "merger",
    }
}

impl StageType {
    pub(crate) const ALL: [StageType; 4] =
        [StageType::Implementer, StageType::Analyzer, StageType::Qa, StageType::Merger];

    pub(crate) fn index(self) -> usize {
        self as usize
    }
}

words! {
    /// Where one stage stands.
    pub(crate) enum StageStatus {
        Pending = "pending",
        Running = "running",
        Success = "success",
        Failed = "failed",
        Blocked = "blocked",
        /// The stage has no agent (an optional analyzer or QA left out).
        Skipped = "skipped",
    }
}

words! {
    /// Where a pipeline stands. Its words, here only, are the saved record's and the answers'.
    pub(crate) enum PipelineStatus {
        Running = "running",
        Blocked = "blocked",
        Complete = "complete",
        Cancelled = "cancelled",
    }
}

impl PipelineStatus {
    pub(crate) fn is_terminal(self) -> bool {
        matches!(self, PipelineStatus::Complete | PipelineStatus::Cancelled)
    }
}

words! {
    /// What an analyzer decided. Its words, here only, are the verdict file's, the saved
    /// record's, `fugue verdict`'s and the answers'.
    pub(crate) enum AnalyzerVerdict {
        Complete = "complete",
        Followup = "followup",
        Failed = "failed",
    }
}

impl AnalyzerVerdict {
    /// The verdict `word` names, in any case; `follow_up` and `follow-up` are `followup`.
    pub(crate) fn parse(word: &str) -> Option<AnalyzerVerdict> {
        let word = word.to_ascii_lowercase().replace(['_', '-'], "");
        AnalyzerVerdict::from_word(&word)
    }

    /// The words, as a sentence lists them: `complete, followup, failed`.
    pub(crate) fn words() -> String {
        AnalyzerVerdict::names().join(", ")
    }
}

words! {
    /// What a person or agent may do to a blocked or running pipeline
    /// (`fugue_agent_pipeline_control`'s `action`); `Followup` takes a prompt.
    pub(crate) enum Action {
        Retry = "retry",
        Followup = "followup",
        Cancel = "cancel",
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
    pub(crate) run_id: Option<PaneId>,
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
pub(crate) struct Assignment {
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

/// One agent pipeline's saved record. Named for what it is: the word "pipeline" alone is
/// `fugue_run_pipeline`'s, a list of commands in one shell.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct AgentPipeline {
    pub(crate) schema_version: u32,
    pub(crate) id: PipelineId,
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
    pub(crate) job: Assignment,
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

/// The agents of a new pipeline: the implementer is required, the others optional.
#[derive(Clone, Debug, Default)]
pub(crate) struct Agents {
    pub(crate) implementer: String,
    pub(crate) analyzer: Option<String>,
    pub(crate) qa: Option<String>,
    pub(crate) merger: Option<String>,
}

impl AgentPipeline {
    pub(crate) fn new(
        id: PipelineId,
        name: Option<String>,
        idea_id: Option<String>,
        job: Assignment,
        agents: Agents,
        limits: Limits,
        at: u64,
    ) -> AgentPipeline {
        let stages = vec![
            PipelineStage::new(StageType::Implementer, Some(agents.implementer)),
            PipelineStage::new(StageType::Analyzer, agents.analyzer),
            PipelineStage::new(StageType::Qa, agents.qa),
            PipelineStage::new(StageType::Merger, agents.merger),
        ];
        let mut pipeline = AgentPipeline {
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

    /// The session its agents' panes run in. Only agent pipelines name sessions `pipeline-…`;
    /// `fugue_run_pipeline` runs in a `run-pipeline-…` window of the orchestration session.
    pub(crate) fn session(&self) -> String {
        format!("pipeline-{}", short_id(&self.id))
    }

    /// What a person or agent may do now.
    pub(crate) fn allowed_actions(&self) -> &'static [Action] {
        match self.status {
            PipelineStatus::Running => &[Action::Cancel],
            PipelineStatus::Blocked => &[Action::Retry, Action::Followup, Action::Cancel],
            PipelineStatus::Complete | PipelineStatus::Cancelled => &[],
        }
    }
}

/// A commit id cut to the length people read.
pub(crate) fn short_commit(commit: &str) -> &str {
    &commit[..commit.len().min(10)]
}

/// A pipeline with placeholder paths and agents, for unit tests that only store or list it.
#[cfg(test)]
pub(crate) fn sample(id: &str, name: Option<String>) -> AgentPipeline {
    let job = Assignment {
        repo: "/r".into(),
        base_branch: "main".into(),
        base_commit: "abc".into(),
        branch: "fugue/x".into(),
        worktree: "/w".into(),
        task: "t".into(),
        env: Vec::new(),
    };
    let agents = Agents { implementer: "true".into(), ..Agents::default() };
    AgentPipeline::new(id.parse().unwrap(), name, None, job, agents, Limits::default(), 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every state word is written and read back by the same list, and a word of another
    /// version is refused by name, not misread.
    fn round_trips<C>()
    where
        C: Words + std::fmt::Debug + Serialize + for<'de> Deserialize<'de>,
    {
        for (name, value) in C::VALUES {
            assert_eq!(serde_json::to_value(value).unwrap(), serde_json::json!(name));
            let read: C = serde_json::from_value(serde_json::json!(name)).unwrap();
            assert_eq!(read, *value);
        }
        let err = serde_json::from_value::<C>(serde_json::json!("someday")).unwrap_err();
        assert!(err.to_string().contains("\"someday\" is not one of"), "{err}");
    }

    #[test]
    fn state_words_are_written_and_read_by_one_list() {
        round_trips::<StageType>();
        round_trips::<PipelineStatus>();
        round_trips::<AnalyzerVerdict>();
        round_trips::<Action>();
        assert_eq!(StageType::Qa.name(), "qa");
        assert_eq!(PipelineStatus::Cancelled.name(), "cancelled");
    }
}
