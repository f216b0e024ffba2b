//! Durable calls: the store of tasks, each the state of one tool call that answers later.
//!
//! A task is what MCP's Tasks hand a client instead of a result: an id it can poll, answer and
//! cancel. This file holds the tasks and their states and knows nothing of the protocol's shapes
//! (`mcp::tasks` renders them) or of what runs the work (a thread of `mcp::tasks` calls the tool).
//! In: the runner's transitions (working with a message, a question, a result, a failure, a
//! cancel) and the client's answers. Out: snapshots for `tasks/get`, a `Watch` per task for
//! whoever blocks until it changes, and a channel that hands answers to the runner.
//!
//! The store belongs to the runtime, so in a shared server a task outlives the front that made
//! it. It is bounded: at most `MAX_LIVE` tasks not yet ended, and ended tasks are kept for
//! `RETENTION` and at most `MAX_KEPT` of them (the oldest go first).

use crate::cancel::Cancel;
use crate::watch::Watch;
use crate::words::words;
use crossbeam_channel::{Receiver, Sender};
use parking_lot::Mutex;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

/// The most tasks that may run (or wait for input) at once.
pub(crate) const MAX_LIVE: usize = 256;
/// The most ended tasks kept for clients that have not read them yet.
const MAX_KEPT: usize = 512;
/// How long an ended task is kept after it ended.
pub(crate) const RETENTION: Duration = Duration::from_secs(3600);

/// Where a task stands, with what that standing carries: the question it waits on, its result
/// or error, and when it ended. A task that ended has no question, and one that runs has no end.
#[derive(Clone, Debug)]
pub(crate) enum Status {
    Working,
    InputRequired {
        question: Question,
    },
    /// The tool's result.
    Completed {
        result: Value,
        at: Instant,
    },
    /// The JSON-RPC error.
    Failed {
        error: Value,
        at: Instant,
    },
    Cancelled {
        at: Instant,
    },
}

words! {
    /// A task's status as MCP names it, without what the status carries.
    pub(crate) enum StatusWord {
        Working = "working",
        InputRequired = "input_required",
        Completed = "completed",
        Failed = "failed",
        Cancelled = "cancelled",
    }
}

impl Status {
    pub(crate) fn word(&self) -> StatusWord {
        match self {
            Status::Working => StatusWord::Working,
            Status::InputRequired { .. } => StatusWord::InputRequired,
            Status::Completed { .. } => StatusWord::Completed,
            Status::Failed { .. } => StatusWord::Failed,
            Status::Cancelled { .. } => StatusWord::Cancelled,
        }
    }

    pub(crate) fn is_terminal(&self) -> bool {
        self.ended().is_some()
    }

    /// When it ended, for its retention; `None` while it runs.
    pub(crate) fn ended(&self) -> Option<Instant> {
        match self {
            Status::Working | Status::InputRequired { .. } => None,
            Status::Completed { at, .. } | Status::Failed { at, .. } | Status::Cancelled { at } => {
                Some(*at)
            }
        }
    }
}

/// A question the task waits on: its key, never reused within the task, and what to ask.
#[derive(Clone, Debug)]
pub(crate) struct Question {
    pub(crate) key: String,
    /// The request as the client should see it (`elicitation/create` and its params).
    pub(crate) request: Value,
}

/// What a client said to a question.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Reply {
    /// Accepted, with the text to type.
    Accept(String),
    /// Declined or cancelled: the program keeps waiting, and the task ends with the question.
    Decline,
}

/// A task's state at one moment.
#[derive(Clone, Debug)]
pub(crate) struct State {
    pub(crate) status: Status,
    /// What the work last said of itself: its progress, the question, why it failed. It stays
    /// when the status changes without a word of its own (a result keeps the last progress).
    pub(crate) message: Option<String>,
    pub(crate) updated: SystemTime,
}

pub(crate) struct Task {
    pub(crate) id: String,
    pub(crate) created: SystemTime,
    created_at: Instant,
    /// Stops the work: the tool call's cancel, with the work itself interrupted.
    pub(crate) cancel: Cancel,
    state: Mutex<State>,
    /// Announces every change of state.
    watch: Watch,
    answers: (Sender<Keyed>, Receiver<Keyed>),
}

/// An answer with the key of the question it answers.
type Keyed = (String, Reply);

impl Task {
    fn new() -> Task {
        let now = SystemTime::now();
        Task {
            id: uuid::Uuid::new_v4().to_string(),
            created: now,
            created_at: Instant::now(),
            cancel: Cancel::default(),
            state: Mutex::new(State { status: Status::Working, message: None, updated: now }),
            watch: Watch::default(),
            answers: crossbeam_channel::unbounded(),
        }
    }

    pub(crate) fn snapshot(&self) -> State {
        self.state.lock().clone()
    }

    /// A channel that receives a token after every change. Subscribe before the snapshot.
    pub(crate) fn subscribe(&self) -> Receiver<()> {
        self.watch.subscribe()
    }

    /// The retention from creation once the task has ended, in milliseconds; `None` while it runs.
    pub(crate) fn ttl_ms(&self, state: &State) -> Option<u64> {
        let ended = state.status.ended()?;
        Some((ended.duration_since(self.created_at) + RETENTION).as_millis() as u64)
    }

    /// Applies `change` unless the task has ended already; announces it when it changed.
    fn change(&self, change: impl FnOnce(&mut State)) -> bool {
        {
            let mut state = self.state.lock();
            if state.status.is_terminal() {
                return false;
            }
            change(&mut state);
            state.updated = SystemTime::now();
        }
        self.watch.notify();
        true
    }

    /// The work goes on; `message` says how far it is.
    pub(crate) fn working(&self, message: Option<String>) {
        self.change(|s| {
            s.status = Status::Working;
            if message.is_some() {
                s.message = message;
            }
        });
    }

    /// The work waits for an answer to `question`.
    pub(crate) fn ask(&self, question: Question, message: String) {
        self.change(|s| {
            s.status = Status::InputRequired { question };
            s.message = Some(message);
        });
    }

    pub(crate) fn complete(&self, result: Value) {
        self.change(|s| s.status = Status::Completed { result, at: Instant::now() });
    }

    pub(crate) fn fail(&self, error: Value, message: String) {
        self.change(|s| {
            s.status = Status::Failed { error, at: Instant::now() };
            s.message = Some(message);
        });
    }

    pub(crate) fn cancelled(&self) {
        self.change(|s| {
            s.status = Status::Cancelled { at: Instant::now() };
            s.message = Some("cancelled by the client".into());
        });
    }

    /// Hands the answer for question `key` to the work, if that question is the one outstanding;
    /// answers to other keys (never asked, already answered) are ignored, as the spec allows.
    pub(crate) fn answer(&self, key: &str, answer: Reply) -> bool {
        let outstanding = {
            let mut state = self.state.lock();
            match &state.status {
                Status::InputRequired { question } if question.key == key => {
                    // Answered once: a second answer to the same key finds nothing outstanding,
                    // and the task works again from this moment.
                    state.status = Status::Working;
                    state.updated = SystemTime::now();
                    true
                }
                _ => false,
            }
        };
        if outstanding {
            let _ = self.answers.0.send((key.to_string(), answer));
            self.watch.notify();
        }
        outstanding
    }

    /// The channel the work receives answers on.
    pub(crate) fn answers(&self) -> &Receiver<Keyed> {
        &self.answers.1
    }
}

/// Every task of one runtime.
#[derive(Default)]
pub(crate) struct Tasks {
    tasks: Mutex<HashMap<String, Arc<Task>>>,
}

/// Why no task could be made.
#[derive(Debug)]
pub(crate) struct Full;

impl Tasks {
    /// A new working task, unless `MAX_LIVE` tasks are running already.
    pub(crate) fn create(&self) -> Result<Arc<Task>, Full> {
        let mut tasks = self.tasks.lock();
        sweep(&mut tasks);
        let live = tasks.values().filter(|t| !t.snapshot().status.is_terminal()).count();
        if live >= MAX_LIVE {
            return Err(Full);
        }
        let task = Arc::new(Task::new());
        tasks.insert(task.id.clone(), task.clone());
        Ok(task)
    }

    pub(crate) fn get(&self, id: &str) -> Option<Arc<Task>> {
        let mut tasks = self.tasks.lock();
        sweep(&mut tasks);
        tasks.get(id).cloned()
    }

    /// Forgets a task that was never handed out (its call answered within the grace).
    pub(crate) fn remove(&self, id: &str) {
        self.tasks.lock().remove(id);
    }

    /// Every task kept, oldest first.
    pub(crate) fn list(&self) -> Vec<Arc<Task>> {
        let mut tasks = self.tasks.lock();
        sweep(&mut tasks);
        let mut all: Vec<Arc<Task>> = tasks.values().cloned().collect();
        crate::sort::sort_by_key(&mut all, |t| t.created_at);
        all
    }

    /// Stops every task's work; the runtime is ending.
    pub(crate) fn shutdown(&self) {
        for task in self.tasks.lock().drain().map(|(_, t)| t) {
            task.cancel.cancel();
        }
    }
}

/// Drops ended tasks past their retention, and the oldest ended ones past `MAX_KEPT`.
fn sweep(tasks: &mut HashMap<String, Arc<Task>>) {
    let now = Instant::now();
    let ended_at = |t: &Task| t.snapshot().status.ended();
    tasks.retain(|_, t| ended_at(t).is_none_or(|ended| now - ended < RETENTION));
    let mut ended: Vec<(Instant, String)> =
        tasks.iter().filter_map(|(id, t)| ended_at(t).map(|at| (at, id.clone()))).collect();
    if ended.len() > MAX_KEPT {
        crate::sort::sort(&mut ended);
        for (_, id) in &ended[..ended.len() - MAX_KEPT] {
            tasks.remove(id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_task_ends_once_and_keeps_its_result() {
        let task = Task::new();
        assert_eq!(task.snapshot().status.word().to_string(), "working");
        assert!(!task.snapshot().status.is_terminal());
        assert!(task.ttl_ms(&task.snapshot()).is_none(), "no retention while it runs");
        task.complete(json!({"ok": 1}));
        task.cancelled();
        let state = task.snapshot();
        assert_eq!(state.status.word().to_string(), "completed", "a later cancel changes nothing");
        assert!(state.status.is_terminal());
        assert!(
            matches!(&state.status, Status::Completed { result, .. } if *result == json!({"ok": 1}))
        );
        assert!(task.ttl_ms(&state).unwrap() >= RETENTION.as_millis() as u64);
    }

    #[test]
    fn an_answer_counts_once_and_only_for_the_question_outstanding() {
        let task = Task::new();
        let question = Question { key: "input-1".into(), request: json!({}) };
        task.ask(question, "Continue?".into());
        assert_eq!(task.snapshot().status.word().to_string(), "input_required");
        assert!(!task.snapshot().status.is_terminal());
        assert!(!task.answer("input-0", Reply::Decline), "a key never asked");
        assert!(task.answer("input-1", Reply::Accept("y".into())));
        assert_eq!(
            task.snapshot().status.word().to_string(),
            "working",
            "answered, it works again"
        );
        assert!(!task.answer("input-1", Reply::Accept("again".into())), "answered already");
        assert_eq!(
            task.answers().try_recv().unwrap(),
            ("input-1".into(), Reply::Accept("y".into()))
        );
        assert!(task.answers().try_recv().is_err());
        task.fail(json!({"code": -1}), "no".into());
        assert_eq!(task.snapshot().status.word().to_string(), "failed");
        assert!(task.snapshot().status.is_terminal());
        assert_eq!(task.snapshot().message.as_deref(), Some("no"));
    }

    #[test]
    fn a_cancel_ends_a_question() {
        let task = Task::new();
        task.ask(Question { key: "input-1".into(), request: json!({}) }, "Name?".into());
        task.cancelled();
        assert_eq!(task.snapshot().status.word().to_string(), "cancelled");
        assert!(task.snapshot().status.is_terminal());
        assert!(!task.answer("input-1", Reply::Decline), "no question outlives its task");
    }

    #[test]
    fn the_store_is_bounded() {
        let tasks = Tasks::default();
        let made: Vec<_> = (0..MAX_LIVE).map(|_| tasks.create().unwrap()).collect();
        assert!(tasks.create().is_err(), "one past the live limit");
        made[0].complete(json!({}));
        let next = tasks.create().unwrap();
        assert!(tasks.get(&next.id).is_some() && tasks.get(&made[0].id).is_some());
        for task in &made[1..] {
            task.cancelled();
        }
        for _ in 0..MAX_KEPT + 10 {
            tasks.create().unwrap().complete(json!({}));
        }
        assert!(tasks.list().len() <= MAX_KEPT + 1, "ended tasks are kept up to MAX_KEPT");
    }
}
