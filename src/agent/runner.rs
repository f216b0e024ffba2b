//! The thread that drives one pipeline: run the step, turn what happened into an event, apply the
//! transition, save, publish, repeat.
//!
//! A stage's agent runs in a pane of the session `pipeline-<id8>` (so `fugue_list_sessions` shows it
//! and `fugue_get_output` reads it), in the pipeline's worktree, with the prompt, task and verdict
//! paths in its environment. Each attempt gets its own fresh directory, so a verdict file can only
//! come from the attempt being judged. The runner sleeps in `select!` on the pane's output events,
//! control actions, the duration deadline and fugue's shutdown; nothing polls. It is the only
//! writer of its pipeline's state: tools hand it control actions and wait for the answer. State is
//! saved before every spawn (so a restart knows a stage was running) and published to readers once
//! the pane exists (so a status that says "running" can name the pane).
//!
//! The runner sees only its `Env` — the panes, fugue's stop signal, its pipeline's store and the
//! `Published` board it publishes on — never the manager that started it.

use super::git;
use super::machine::{Control, Event, EventKind, StageOutcome, Step, Transition, next, quote};
use super::record::{AgentPipeline, Limits, PipelineStatus, StageType, now, short_commit};
use super::store::{Store, write_atomic};
use super::verdict;
use crate::error::{Error, ErrorKind, Result};
use crate::ids::{PaneId, short_id};
use crate::mux::{Mux, PaneArgs};
use crate::pane::Pane;
use crate::pane::exit::Exit;
use crate::pane::process::session_members;
use crate::watch::Watch;
use crate::words::Words;
use crossbeam_channel::{Receiver, Sender, after, select};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// Lines of a stage's output kept for the next stage (`FUGUE_PREVIOUS_OUTPUT`).
const OUTPUT_LINES: usize = 200;
/// The most of a stage's output kept, in bytes.
const MAX_OUTPUT_BYTES: usize = 256 << 10;
/// Lines of QA's output that become the implementer's prompt.
const FEEDBACK_LINES: usize = 60;

/// A control action on its way to the runner, with the channel for the answer.
pub(crate) struct ControlRequest {
    pub(crate) action: Control,
    pub(crate) limits: Option<Limits>,
    pub(crate) reply: Sender<Result<()>>,
}

/// What a runner may use of the world around it.
pub(crate) struct Env {
    /// Where its agents' panes live.
    pub(crate) mux: Arc<Mux>,
    /// Disconnects when fugue stops: the runner leaves the state as it is and returns.
    pub(crate) stopping: Receiver<()>,
    /// Where its pipeline's state is saved.
    pub(crate) store: Arc<Store>,
    /// Where its pipeline's state is published.
    pub(crate) latest: Arc<Published>,
}

/// A pipeline's latest published state, held in memory, and the watches woken when it changes.
pub(crate) struct Published {
    state: Mutex<AgentPipeline>,
    watch: Watch,
    /// Woken when any pipeline changes (the manager's).
    any: Arc<Watch>,
}

impl Published {
    pub(crate) fn new(pipeline: AgentPipeline, any: Arc<Watch>) -> Published {
        Published { state: Mutex::new(pipeline), watch: Watch::default(), any }
    }

    /// A copy of the state.
    pub(crate) fn get(&self) -> AgentPipeline {
        self.state.lock().clone()
    }

    /// Looks at the state without copying it.
    pub(crate) fn with<T>(&self, look: impl FnOnce(&AgentPipeline) -> T) -> T {
        look(&self.state.lock())
    }

    /// A channel woken on every change of this pipeline; subscribe before looking.
    pub(crate) fn subscribe(&self) -> Receiver<()> {
        self.watch.subscribe()
    }

    /// Publishes a new state to readers and waiters.
    pub(crate) fn publish(&self, pipeline: &AgentPipeline) {
        self.replace(pipeline.clone());
        self.watch.notify();
        self.any.notify();
    }

    /// Replaces the state without waking anyone (a state read back from disk).
    pub(crate) fn replace(&self, pipeline: AgentPipeline) {
        *self.state.lock() = pipeline;
    }
}

struct Runner {
    env: Env,
    pipeline: AgentPipeline,
    control: Receiver<ControlRequest>,
    /// The answer owed to a control action, sent when its result is published.
    reply: Option<Sender<Result<()>>>,
    /// The latest pane of each stage; an older one is closed when the next attempt starts.
    panes: HashMap<StageType, PaneId>,
}

/// Why the runner woke up.
enum Turn {
    Next(Box<Transition>, Option<Sender<Result<()>>>),
    Stop,
}

/// How waiting for a pane ended.
enum Waited {
    Exit(Exit),
    Turn(Turn),
}

/// The files of one attempt.
struct Files {
    dir: PathBuf,
    verdict: PathBuf,
}

/// Runs the pipeline from `step` until it ends or fugue stops.
pub(crate) fn drive(
    env: Env,
    pipeline: AgentPipeline,
    control: Receiver<ControlRequest>,
    step: Step,
) {
    let mut runner = Runner { env, pipeline, control, reply: None, panes: HashMap::new() };
    if !matches!(step, Step::Run { .. }) {
        runner.publish();
    }
    let mut step = step;
    loop {
        let wake = match &step {
            Step::Run { stage, attempt, prompt } => runner.run(*stage, *attempt, prompt),
            Step::Wait => runner.park(),
            Step::Done => return runner.finish(),
            Step::Refuse(why) => {
                // Only this thread changes the pipeline, so its own results are never stale.
                crate::log::error(&format!("pipeline {}: {why}", runner.pipeline.id));
                runner.park()
            }
        };
        match wake {
            Turn::Next(transition, reply) => step = runner.commit(*transition, reply),
            Turn::Stop => return,
        }
    }
}

impl Runner {
    fn id8(&self) -> &str {
        short_id(&self.pipeline.id)
    }

    /// Saves the transition's state and publishes it when blocked. A spawn publishes once its
    /// pane exists, and the end once the clean-up is done, so readers never see half a step.
    fn commit(&mut self, transition: Transition, reply: Option<Sender<Result<()>>>) -> Step {
        self.pipeline = transition.pipeline;
        if reply.is_some() {
            self.reply = reply;
        }
        self.save();
        if transition.step == Step::Wait {
            self.publish();
        }
        transition.step
    }

    fn save(&self) {
        if let Err(e) = self.env.store.save(&self.pipeline) {
            crate::log::error(&format!(
                "pipeline {}: cannot save its state: {e}",
                self.pipeline.id
            ));
        }
    }

    fn publish(&mut self) {
        self.env.latest.publish(&self.pipeline);
        if let Some(reply) = self.reply.take() {
            let _ = reply.send(Ok(()));
        }
    }

    /// Notes something that is not a transition (a commit, a clean-up) in the event log.
    fn note(&mut self, event_type: &str, stage: Option<StageType>, description: String) {
        self.pipeline.record(now(), event_type, stage, description);
    }

    /// One attempt of `stage`: run it, judge it, and return the transition that follows.
    fn run(&mut self, stage: StageType, attempt: u32, prompt: &str) -> Turn {
        let command = self.pipeline.stage(stage).command.clone();
        let (outcome, cost) = match command {
            None => {
                self.publish();
                (self.git_merge(), None)
            }
            Some(command) => match self.spawn(stage, attempt, prompt, &command) {
                Err(e) => {
                    (StageOutcome::Failed(format!("cannot start the agent: {}", e.message())), None)
                }
                Ok((pane, files)) => {
                    self.pipeline.stage_mut(stage).run_id = Some(pane.id.clone());
                    self.pipeline.stage_mut(stage).run_pid = Some(pane.pid);
                    self.save();
                    self.publish();
                    match self.wait(&pane) {
                        Waited::Exit(exit) => {
                            self.judge(stage, attempt, &command, &pane, exit, &files)
                        }
                        Waited::Turn(wake) => return wake,
                    }
                }
            },
        };
        let event = EventKind::Finished { stage, outcome, cost_usd: cost };
        Turn::Next(Box::new(next(&self.pipeline, Event { at: now(), kind: event })), None)
    }

    /// Starts the agent's pane, with its prompt and environment.
    fn spawn(
        &mut self,
        stage: StageType,
        attempt: u32,
        prompt: &str,
        command: &str,
    ) -> Result<(Arc<Pane>, Files)> {
        let store = self.env.store.clone();
        let dir = store.run_dir(&self.pipeline.id, &format!("{stage}-{attempt}"))?;
        let task_file = dir.join("task.md");
        let prompt_file = dir.join("prompt.md");
        let files = Files { verdict: dir.join("verdict.json"), dir };
        write_atomic(&task_file, self.pipeline.job.task.as_bytes())?;
        write_atomic(&prompt_file, prompt.as_bytes())?;
        let job = &self.pipeline.job;
        let mut env = job.env.clone();
        let path = |p: &Path| p.display().to_string();
        env.extend([
            ("FUGUE_PIPELINE_ID".to_string(), self.pipeline.id.to_string()),
            ("FUGUE_STAGE".to_string(), stage.name().to_string()),
            ("FUGUE_ATTEMPT".to_string(), attempt.to_string()),
            ("FUGUE_WORKTREE".to_string(), job.worktree.clone()),
            ("FUGUE_BRANCH".to_string(), job.branch.clone()),
            ("FUGUE_BASE_BRANCH".to_string(), job.base_branch.clone()),
            ("FUGUE_BASE_COMMIT".to_string(), job.base_commit.clone()),
            ("FUGUE_PROMPT_FILE".to_string(), path(&prompt_file)),
            ("FUGUE_TASK_FILE".to_string(), path(&task_file)),
            ("FUGUE_VERDICT_FILE".to_string(), path(&files.verdict)),
            (
                "FUGUE_PREVIOUS_OUTPUT".to_string(),
                self.pipeline.last_output.clone().unwrap_or_default(),
            ),
        ]);
        if let Some(old) = self.panes.remove(&stage) {
            let _ = self.env.mux.close_pane(&old);
        }
        let args = PaneArgs {
            name: Some(format!("{}-{stage}-{attempt}", self.id8())),
            command: Some(command.to_string()),
            cwd: PathBuf::from(&job.worktree),
            env,
            integration: false,
            sandbox: None,
            // In a sandbox, the stage writes its worktree and its own run directory only.
            roots: Some(vec![PathBuf::from(&job.worktree), files.dir.clone()]),
        };
        let pane = self.open_pane(&format!("{stage}-{attempt}"), args)?;
        self.panes.insert(stage, pane.id.clone());
        Ok((pane, files))
    }

    /// Opens a window in the pipeline's session. The session is created empty first, and another
    /// pane closing elsewhere can sweep an empty session away, so a vanished session is made again.
    fn open_pane(&self, window: &str, args: PaneArgs) -> Result<Arc<Pane>> {
        let mux = &self.env.mux;
        let mut tries = 0;
        loop {
            let session = mux.ensure_session(&self.pipeline.session())?;
            match mux.create_window(&session, Some(window.to_string()), args.clone()) {
                Err(e) if e.kind() == ErrorKind::SessionNotFound && tries < 2 => tries += 1,
                other => return other,
            }
        }
    }

    /// Waits for the pane's process to end, while answering control actions.
    fn wait(&mut self, pane: &Arc<Pane>) -> Waited {
        let events = pane.output().subscribe_status();
        let left = self
            .pipeline
            .limits
            .max_duration_s
            .saturating_mul(1000)
            .saturating_sub(self.pipeline.elapsed_ms(now()));
        let deadline = after(Duration::from_millis(left));
        loop {
            if let Some(exit) = pane.output().exit() {
                return Waited::Exit(exit);
            }
            select! {
                recv(events) -> _ => {}
                recv(self.control) -> command => {
                    if let Ok(command) = command
                        && let Some(transition) = self.consider(command)
                    {
                        // Only cancel is accepted while running.
                        let _ = self.env.mux.close_pane(&pane.id);
                        return Waited::Turn(transition);
                    }
                }
                recv(self.env.stopping) -> _ => return Waited::Turn(Turn::Stop),
                recv(deadline) -> _ => {
                    // Ended but kept, so its output shows what the agent was doing.
                    pane.close();
                    let event = Event { at: now(), kind: EventKind::TimeUp };
                    return Waited::Turn(Turn::Next(Box::new(next(&self.pipeline, event)), None));
                }
            }
        }
    }

    /// Blocked: waits for a control action that applies.
    fn park(&mut self) -> Turn {
        loop {
            select! {
                recv(self.control) -> command => match command {
                    Ok(command) => {
                        if let Some(wake) = self.consider(command) {
                            return wake;
                        }
                    }
                    Err(_) => return Turn::Stop,
                },
                recv(self.env.stopping) -> _ => return Turn::Stop,
            }
        }
    }

    /// A control action: refused at once with the reason, or the transition it causes.
    fn consider(&mut self, command: ControlRequest) -> Option<Turn> {
        let event = EventKind::Control { action: command.action, limits: command.limits };
        let transition = next(&self.pipeline, Event { at: now(), kind: event });
        if let Step::Refuse(why) = &transition.step {
            let _ = command.reply.send(Err(Error::new(ErrorKind::InvalidState, why.clone())));
            return None;
        }
        Some(Turn::Next(Box::new(transition), Some(command.reply)))
    }

    /// Turns the end of an agent's run into an outcome, with the cost it reported.
    fn judge(
        &mut self,
        stage: StageType,
        attempt: u32,
        command: &str,
        pane: &Pane,
        exit: Exit,
        files: &Files,
    ) -> (StageOutcome, Option<f64>) {
        let output = tail(pane, OUTPUT_LINES);
        let output_file = files.dir.join("output.txt");
        if write_atomic(&output_file, output.as_bytes()).is_ok() {
            self.pipeline.last_output = Some(output_file.display().to_string());
        }
        let failed = |who: &str| format!("the {who} {}{}", exit.describe(), last_words(&output));
        if stage == StageType::Analyzer {
            if !exit.success() {
                return (StageOutcome::Failed(failed("analyzer")), None);
            }
            return match verdict::read(&files.verdict) {
                Ok(v) => (
                    StageOutcome::Verdict {
                        verdict: v.verdict,
                        reason: v.reason,
                        followup_prompt: v.followup_prompt,
                    },
                    v.cost_usd,
                ),
                Err(why) => (StageOutcome::Failed(why), None),
            };
        }
        let (cost, problem) = verdict::read_cost(&files.verdict);
        if let Some(problem) = problem {
            self.note("report_ignored", Some(stage), format!("cost report ignored: {problem}"));
        }
        let outcome = match stage {
            StageType::Implementer if exit.success() => self.check_work(attempt),
            StageType::Implementer => {
                StageOutcome::Failed(format!("the implementer {}", exit.describe()))
            }
            StageType::Qa if exit.success() => StageOutcome::Success("tests passed".into()),
            StageType::Qa => {
                StageOutcome::QaFailed(feedback(command, exit, &tail(pane, FEEDBACK_LINES)))
            }
            _ if exit.success() => {
                StageOutcome::Success(format!("the merger command succeeded (pane {})", pane.id))
            }
            _ => StageOutcome::Conflict(format!(
                "the merger command {} (pane {})",
                exit.describe(),
                pane.id
            )),
        };
        (outcome, cost)
    }

    /// After the implementer exits 0: commit what it left, and insist the branch has work on it.
    fn check_work(&mut self, attempt: u32) -> StageOutcome {
        let worktree = PathBuf::from(&self.pipeline.job.worktree);
        let repo = PathBuf::from(&self.pipeline.job.repo);
        let message = format!("fugue pipeline {}: implementer attempt {attempt}", self.id8());
        let base = &self.pipeline.job.base_commit;
        match git::commit_all(&repo, &worktree, base, &message) {
            Ok(true) => self.note(
                "committed",
                Some(StageType::Implementer),
                "committed the changes the implementer left uncommitted".into(),
            ),
            Ok(false) => {}
            Err(e) => return StageOutcome::Failed(e.message().to_string()),
        }
        match git::commits_ahead(&repo, &worktree, &self.pipeline.job.base_commit) {
            Ok(0) => StageOutcome::Failed(
                "the implementer exited 0 but the branch has no commits ahead of the base: \
                 nothing changed"
                    .into(),
            ),
            Ok(n) => StageOutcome::Success(format!("exit 0; {n} commit(s) ahead of the base")),
            Err(e) => StageOutcome::Failed(e.message().to_string()),
        }
    }

    /// The built-in merger.
    fn git_merge(&mut self) -> StageOutcome {
        let job = &self.pipeline.job;
        let message =
            format!("Merge {} (fugue pipeline {})\n\n{}", job.branch, self.id8(), quote(&job.task));
        let merge = git::MergeJob {
            repo: Path::new(&job.repo),
            base_branch: &job.base_branch,
            branch: &job.branch,
            message: &message,
        };
        match git::merge(&merge) {
            Ok(git::Merge::Landed { commit, how }) => {
                let summary = format!("{how}: {} is at {}", job.base_branch, short_commit(&commit));
                self.pipeline.merged_commit = Some(commit);
                StageOutcome::Success(summary)
            }
            Ok(git::Merge::Blocked(reason)) => StageOutcome::Conflict(reason),
            Err(e) => StageOutcome::Failed(format!("the merge failed: {}", e.message())),
        }
    }

    /// The pipeline ended: clean up after a merge, close its panes, and publish the last word.
    fn finish(mut self) {
        if self.pipeline.status == PipelineStatus::Complete {
            let job = self.pipeline.job.clone();
            let done = git::clean_up(
                Path::new(&job.repo),
                Path::new(&job.worktree),
                &job.base_branch,
                &job.branch,
            );
            self.note("cleanup", None, done);
            self.env.store.remove_runs(&self.pipeline.id);
            self.pipeline.last_output = None;
            self.save();
        }
        let _ = self.env.mux.close_session(&self.pipeline.session());
        self.publish();
    }
}

/// Ends what is left of the running attempt of a pipeline whose fugue died: an agent that ignored
/// the hang-up would go on writing in the worktree beside the next attempt. Only processes of the
/// attempt's session that carry this pipeline's id in their environment are killed, so a pid
/// reused by an unrelated process is never touched.
pub(crate) fn end_strays(pipeline: &AgentPipeline) {
    let Some(stage) = pipeline.running() else { return };
    let Some(leader) = pipeline.stage(stage).run_pid else { return };
    let mark = format!("FUGUE_PIPELINE_ID={}", pipeline.id);
    let mut pids = session_members(leader);
    pids.push(leader);
    pids.dedup();
    for pid in pids.into_iter().filter(|pid| carries(*pid, &mark)) {
        crate::log::info(&format!("pipeline {}: ending stray agent process {pid}", pipeline.id));
        crate::pane::process::signal(pid, libc::SIGKILL);
    }
}

/// Whether the process's environment holds `mark` (`NAME=value`) exactly.
fn carries(pid: u32, mark: &str) -> bool {
    std::fs::read(format!("/proc/{pid}/environ"))
        .is_ok_and(|env| env.split(|b| *b == 0).any(|entry| entry == mark.as_bytes()))
}

/// The last `lines` lines of a pane, as text.
fn tail(pane: &Pane, lines: usize) -> String {
    crate::pane::tail::lines(pane, 0, pane.output().end(), lines, MAX_OUTPUT_BYTES)
}

/// The last line an agent printed, as a suffix for a failure's reason.
fn last_words(output: &str) -> String {
    match output.lines().rev().find(|l| !l.trim().is_empty()) {
        Some(line) => format!("; it last printed: {}", quote(line)),
        None => String::new(),
    }
}

/// The implementer's prompt after a QA failure.
fn feedback(command: &str, exit: Exit, output: &str) -> String {
    format!(
        "QA failed: `{command}` {}. Make it pass.\n\nThe last lines of its output:\n\n{output}\n",
        exit.describe()
    )
}
