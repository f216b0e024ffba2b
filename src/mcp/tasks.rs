//! Durable calls: MCP's Tasks over the store in `tool::task`, in both protocol eras.
//!
//! In: a `tools/call` of a long tool from a client that declared Tasks — the 2026-07-28 extension
//! `io.modelcontextprotocol/tasks` in the request's `_meta` capabilities, or a 2025-11-25 `task`
//! parameter — and the `tasks/*` requests that follow. The call runs on a thread of its own (a
//! `Work`), so it outlives the request. A 2026-07-28 call that ends within `GRACE` is answered
//! inline; otherwise, and always for 2025-11-25, the answer is the task. When the program in the
//! pane asks (fugue's input detection, which the tool's answer reports as `asks`) and the client
//! can answer a form, the task waits in `input_required` with an `elicitation/create` form whose
//! answer is typed into the terminal, then Enter, and the work goes on as `fugue_send_input` with
//! `wait_ms` would. Out: task handles and states in each era's shape, and for 2025-11-25 clients
//! `notifications/tasks/status` on each change of status and the question as an `elicitation/create`
//! request while the client waits in `tasks/result`.

use super::envelope::{CAPABILITIES_KEY, Era, Push, Request, decorate, shaped};
use crate::ids::iso8601;
use crate::jsonrpc::{INTERNAL_ERROR, INVALID_PARAMS, MISSING_CAPABILITY, RpcError};
use crate::runtime::Runtime;
use crate::tool::task::{MAX_LIVE, Question, Reply, State, Status, StatusWord, Task, Tasks};
use crate::tool::{Answer, Asking, Registered};
use crate::tool::{Ctx, call::Progress};
use crate::waiter::{Drove, Look, Waiter};
use crossbeam_channel::select;
use serde::Serialize;
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The extension's identifier (2026-07-28).
pub(super) const EXTENSION: &str = "io.modelcontextprotocol/tasks";
/// How long a 2026-07-28 call may take and still be answered inline, without a task.
pub(crate) const GRACE: Duration = Duration::from_millis(300);
/// How often a client should poll `tasks/get`.
const POLL_INTERVAL_MS: u64 = 500;
/// How long a 2025-11-25 `tasks/cancel` waits for the work to stop before it answers.
const CANCEL_WAIT: Duration = Duration::from_secs(3);
/// The `_meta` key that ties a message to its task (2025-11-25).
const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";
/// How long the work waits after an answer typed into the pane when the call gave no timeout.
const ANSWER_WAIT_MS: u64 = 30_000;

/// How the client wants a call run as a task.
#[derive(Clone, Copy)]
pub(super) struct TaskMode {
    era: Era,
    /// The client answers form elicitations: a program's question becomes `input_required`.
    elicitation: bool,
}

/// The task mode of a `tools/call`, if the client asked for one; `legacy` holds the capabilities
/// a 2025-11-25 client declared in `initialize`.
pub(super) fn mode(era: Era, params: &Map<String, Value>, legacy: &Value) -> Option<TaskMode> {
    match era {
        Era::Modern => {
            let caps = params.get("_meta").and_then(|m| m.get(CAPABILITIES_KEY))?;
            caps.get("extensions").and_then(|e| e.get(EXTENSION))?;
            Some(TaskMode { era, elicitation: form_elicitation(caps.get("elicitation")) })
        }
        Era::Legacy => {
            params.get("task").filter(|t| t.is_object())?;
            Some(TaskMode { era, elicitation: form_elicitation(legacy.get("elicitation")) })
        }
    }
}

/// Whether an `elicitation` capability takes forms: an empty object does (the older default).
fn form_elicitation(caps: Option<&Value>) -> bool {
    match caps.and_then(Value::as_object) {
        Some(modes) => modes.is_empty() || modes.contains_key("form"),
        None => false,
    }
}

/// What a task's work needs of the connection that made it.
pub(super) struct Origin<'a> {
    pub(super) runtime: &'a Arc<Runtime>,
    /// The caller's directory, the base of the call's paths.
    pub(super) cwd: &'a Path,
    /// Reaches the client while it is connected (2025-11-25 status notifications).
    pub(super) push: Option<Push>,
}

/// Runs `tool` as a task: answers the task handle, or for a 2026-07-28 call that ends within
/// `GRACE` its result.
pub(super) fn start(
    origin: Origin<'_>,
    req: &Request<'_>,
    tool: &'static Registered<Runtime>,
    arguments: &Map<String, Value>,
    mode: TaskMode,
) -> Result<Value, RpcError> {
    let tasks = &origin.runtime.tasks;
    let Ok(task) = tasks.create() else {
        return Err(RpcError::new(
            INTERNAL_ERROR,
            format!(
                "{MAX_LIVE} tasks are running already (the limit); wait for one with tasks/get, \
                 or cancel one with tasks/cancel"
            ),
        ));
    };
    let changed = task.subscribe();
    let work = Work {
        runtime: origin.runtime.clone(),
        cwd: origin.cwd.to_path_buf(),
        tool,
        arguments: arguments.clone(),
        task: task.clone(),
        mode,
        push: origin.push,
    };
    let spawned = crate::threads::spawn("fugue-task", None, Box::new(move || work.run()));
    if spawned.is_err() {
        tasks.remove(&task.id);
        return Err(RpcError::new(INTERNAL_ERROR, "cannot start a thread for the task"));
    }
    if mode.era == Era::Legacy {
        return Ok(json!({"task": legacy_json(&task, &task.snapshot())}));
    }
    let mut waiter =
        Waiter::new().cancel(req.cancel.receiver()).until(Instant::now() + GRACE).on(changed);
    // Within the grace, the call answers the tool's result if the work ends; past it, a task
    // still working is answered as a task.
    let completed = || {
        let Status::Completed { result, .. } = task.snapshot().status else { return None };
        tasks.remove(&task.id);
        Some(result)
    };
    let as_task = || {
        let state = task.snapshot();
        to_json(&ModernTask { result_type: Some("task"), ..modern(&task, &state, false) })
    };
    let look = |(): &mut ()| match completed() {
        Some(result) => Look::Done(result),
        None if matches!(task.snapshot().status, Status::Working) => Look::Again(None),
        None => Look::Done(as_task()),
    };
    match waiter.drive(&mut (), look) {
        Drove::Done(result) => Ok(result),
        Drove::Deadline => Ok(completed().unwrap_or_else(as_task)),
        Drove::Cancelled => {
            // Cancelled before it became a task: as any cancelled call, only the wait ends.
            task.cancel.cancel();
            tasks.remove(&task.id);
            Err(RpcError::new(INTERNAL_ERROR, "cancelled"))
        }
    }
}

/// One task's work: the tool call, then the questions of the program it runs.
struct Work {
    runtime: Arc<Runtime>,
    cwd: PathBuf,
    tool: &'static Registered<Runtime>,
    arguments: Map<String, Value>,
    task: Arc<Task>,
    mode: TaskMode,
    /// Sends a notification to the client that made the task, while it is connected.
    push: Option<Push>,
}

/// What a tool call of the work gave: its result, and what a program it names asks.
struct Called {
    result: Value,
    asks: Option<Asking>,
}

impl Work {
    fn run(self) {
        let mut called = match self.call(|ctx| crate::remote::call(self.tool, ctx, &self.arguments))
        {
            Ok(called) => called,
            Err(error) => return self.fail(error),
        };
        let mut asked = 0;
        loop {
            if self.task.cancel.is_cancelled() {
                return self.cancelled(called.asks);
            }
            let Some(asks) = called.asks.take().filter(|_| self.mode.elicitation) else {
                return self.complete(called.result);
            };
            asked += 1;
            match self.ask(format!("input-{asked}"), &asks) {
                Some(Reply::Accept(text)) => {
                    let pane = &asks.pane_id;
                    self.task.working(Some(format!("typed an answer into pane {pane}")));
                    self.announce();
                    called = match self.type_answer(pane, &text) {
                        Ok(called) => called,
                        Err(error) => return self.fail(error),
                    };
                }
                Some(Reply::Decline) => return self.complete(called.result),
                None => return self.cancelled(Some(asks)),
            }
        }
    }

    /// Runs a tool call under the task's cancel, with its progress as the task's status message.
    fn call(
        &self,
        call: impl FnOnce(&Ctx<'_, Runtime>) -> crate::error::Result<Answer>,
    ) -> Result<Called, RpcError> {
        let task = self.task.clone();
        let progress = Progress::new(Box::new(move |_, _, message| {
            task.working(Some(message.to_string()));
        }));
        let ctx = crate::tool::Ctx {
            runtime: &*self.runtime,
            cwd: &self.cwd,
            cancel: &self.task.cancel,
            progress: &progress,
        };
        let run = std::panic::AssertUnwindSafe(|| call(&ctx));
        let outcome = std::panic::catch_unwind(run)
            .map_err(|_| RpcError::new(INTERNAL_ERROR, "internal error: the handler panicked"))?;
        let asks = outcome.as_ref().ok().and_then(|answer| answer.asks.clone());
        Ok(Called { result: shaped(outcome), asks })
    }

    /// Puts the question to the client and waits for its answer; `None` when the task is
    /// cancelled meanwhile.
    fn ask(&self, key: String, asks: &Asking) -> Option<Reply> {
        let message = asks.message();
        let request = json!({"method": "elicitation/create", "params": form(&message)});
        self.task.ask(Question { key: key.clone(), request }, message);
        self.announce();
        loop {
            select! {
                recv(self.task.answers()) -> answer => match answer {
                    Ok((answered, answer)) if answered == key => return Some(answer),
                    Ok(_) => {}
                    Err(_) => return None,
                },
                recv(self.task.cancel.receiver()) -> _ => return None,
            }
        }
    }

    /// Types `text` and Enter into `pane` and waits as `fugue_send_input` with `wait_ms` does.
    fn type_answer(&self, pane: &str, text: &str) -> Result<Called, RpcError> {
        let wait = ["timeout_ms", "wait_ms"]
            .iter()
            .find_map(|k| self.arguments.get(*k).and_then(Value::as_u64))
            .filter(|ms| *ms > 0)
            .unwrap_or(ANSWER_WAIT_MS);
        let wait = Duration::from_millis(wait);
        self.call(|ctx| crate::remote::type_answer(ctx, pane, text, wait))
    }

    fn complete(&self, result: Value) {
        let result = match self.mode.era {
            Era::Modern => decorate(result, false),
            Era::Legacy => result,
        };
        self.task.complete(result);
        self.announce();
    }

    fn fail(&self, error: RpcError) {
        let message = error.message.clone();
        self.task.fail(error.to_json(), message);
        self.announce();
    }

    /// Ends a cancelled task; a program it left asking is interrupted, so the shell is not left
    /// busy.
    fn cancelled(&self, asks: Option<Asking>) {
        if let Some(asks) = asks {
            let (cancel, progress) = (crate::cancel::Cancel::default(), Progress::none());
            let ctx = crate::tool::Ctx {
                runtime: &*self.runtime,
                cwd: &self.cwd,
                cancel: &cancel,
                progress: &progress,
            };
            crate::remote::interrupt(&ctx, &asks.pane_id);
        }
        self.task.cancelled();
        self.announce();
    }

    /// `notifications/tasks/status` for a 2025-11-25 client still connected.
    fn announce(&self) {
        if let (Era::Legacy, Some(push)) = (self.mode.era, &self.push) {
            let params = legacy_json(&self.task, &self.task.snapshot());
            push(
                json!({"jsonrpc": "2.0", "method": "notifications/tasks/status", "params": params}),
            );
        }
    }
}

/// The form that asks for one line of input.
fn form(message: &str) -> Value {
    json!({
        "mode": "form",
        "message": message,
        "requestedSchema": {
            "type": "object",
            "properties": {
                "input": {"type": "string", "description": "text typed into the terminal, then Enter"}
            },
            "required": ["input"],
        },
    })
}

/// An answer to the form: `accept` with a string `input` types it; anything else declines.
fn answer_of(response: &Value) -> Reply {
    match (response["action"].as_str(), response["content"]["input"].as_str()) {
        (Some("accept"), Some(input)) => Reply::Accept(input.to_string()),
        _ => Reply::Decline,
    }
}

/// A task as 2026-07-28 shows it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ModernTask<'a> {
    task_id: &'a str,
    status: StatusWord,
    created_at: String,
    last_updated_at: String,
    ttl_ms: Option<u64>,
    poll_interval_ms: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    status_message: Option<&'a str>,
    /// What its status carries (`tasks/get`).
    #[serde(flatten)]
    carried: Option<Carried<'a>>,
    /// `task` when a call is answered with the task instead of its result.
    #[serde(skip_serializing_if = "Option::is_none")]
    result_type: Option<&'static str>,
}

/// What a task's status carries, under its own key.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
enum Carried<'a> {
    InputRequests(BTreeMap<&'a str, &'a Value>),
    Result(&'a Value),
    Error(&'a Value),
}

/// A task as 2025-11-25 shows it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct LegacyTask<'a> {
    task_id: &'a str,
    status: StatusWord,
    created_at: String,
    last_updated_at: String,
    ttl: Option<u64>,
    poll_interval: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    status_message: Option<&'a str>,
}

/// The task as 2026-07-28 shows it; `detailed` adds what its status carries (`tasks/get`).
fn modern<'a>(task: &'a Task, state: &'a State, detailed: bool) -> ModernTask<'a> {
    let carried = match &state.status {
        _ if !detailed => None,
        Status::InputRequired { question } => Some(Carried::InputRequests(BTreeMap::from([(
            question.key.as_str(),
            &question.request,
        )]))),
        Status::Completed { result, .. } => Some(Carried::Result(result)),
        Status::Failed { error, .. } => Some(Carried::Error(error)),
        Status::Working | Status::Cancelled { .. } => None,
    };
    ModernTask {
        task_id: &task.id,
        status: state.status.word(),
        created_at: iso8601(task.created),
        last_updated_at: iso8601(state.updated),
        ttl_ms: task.ttl_ms(state),
        poll_interval_ms: POLL_INTERVAL_MS,
        status_message: state.message.as_deref(),
        carried,
        result_type: None,
    }
}

fn modern_json(task: &Task, state: &State, detailed: bool) -> Value {
    to_json(&modern(task, state, detailed))
}

/// The task as 2025-11-25 shows it.
fn legacy_json(task: &Task, state: &State) -> Value {
    to_json(&LegacyTask {
        task_id: &task.id,
        status: state.status.word(),
        created_at: iso8601(task.created),
        last_updated_at: iso8601(state.updated),
        ttl: task.ttl_ms(state),
        poll_interval: POLL_INTERVAL_MS,
        status_message: state.message.as_deref(),
    })
}

/// A rendering as JSON; a struct of strings, numbers and values always serializes.
fn to_json(rendering: &impl Serialize) -> Value {
    serde_json::to_value(rendering).unwrap_or_default()
}

/// The task `params.taskId` names.
fn find(tasks: &Tasks, params: &Map<String, Value>) -> Result<Arc<Task>, RpcError> {
    let id = params.get("taskId").and_then(Value::as_str).ok_or_else(|| {
        RpcError::new(INVALID_PARAMS, "params.taskId is required (the id a task answer gave)")
    })?;
    tasks.get(id).ok_or_else(|| {
        RpcError::new(
            INVALID_PARAMS,
            format!("Failed to retrieve task: no task {id:?} (unknown, or expired and forgotten)"),
        )
    })
}

/// A 2026-07-28 `tasks/*` request is only for a client that declares the extension on it.
pub(super) fn check_declared(era: Era, params: &Map<String, Value>) -> Result<(), RpcError> {
    if era == Era::Legacy {
        return Ok(());
    }
    let declared = params
        .get("_meta")
        .and_then(|m| m.get(CAPABILITIES_KEY))
        .and_then(|c| c.get("extensions"))
        .and_then(|e| e.get(EXTENSION))
        .is_some();
    if declared {
        return Ok(());
    }
    let mut err = RpcError::new(MISSING_CAPABILITY, "Missing required client capability");
    err.data = Some(json!({"requiredCapabilities": {"extensions": {EXTENSION: {}}}}));
    Err(err)
}

/// `tasks/get`: the task, with what its status carries (2026-07-28) or as a plain task.
pub(super) fn get(tasks: &Tasks, era: Era, params: &Map<String, Value>) -> Result<Value, RpcError> {
    let task = find(tasks, params)?;
    let state = task.snapshot();
    Ok(match era {
        Era::Modern => modern_json(&task, &state, true),
        Era::Legacy => legacy_json(&task, &state),
    })
}

/// `tasks/update` (2026-07-28): the answers to the task's questions.
pub(super) fn update(tasks: &Tasks, params: &Map<String, Value>) -> Result<Value, RpcError> {
    let task = find(tasks, params)?;
    let responses = params.get("inputResponses").and_then(Value::as_object).ok_or_else(|| {
        RpcError::new(INVALID_PARAMS, "params.inputResponses must be an object of answers by key")
    })?;
    for (key, response) in responses {
        task.answer(key, answer_of(response));
    }
    Ok(json!({}))
}

/// `tasks/cancel`: stops the work. 2026-07-28 acknowledges at once; 2025-11-25 answers with the
/// task once it has ended, or after `CANCEL_WAIT`.
pub(super) fn cancel(
    tasks: &Tasks,
    era: Era,
    params: &Map<String, Value>,
) -> Result<Value, RpcError> {
    let task = find(tasks, params)?;
    let changed = task.subscribe();
    if era == Era::Legacy && task.snapshot().status.is_terminal() {
        return Err(RpcError::new(
            INVALID_PARAMS,
            format!("Cannot cancel task {}: it has already ended", task.id),
        ));
    }
    task.cancel.stop_work();
    if era == Era::Modern {
        return Ok(json!({}));
    }
    let deadline = Instant::now() + CANCEL_WAIT;
    while !task.snapshot().status.is_terminal() && changed.recv_deadline(deadline).is_ok() {}
    Ok(legacy_json(&task, &task.snapshot()))
}

/// `tasks/list` (2025-11-25): every task kept, oldest first, in one page.
pub(super) fn list(tasks: &Tasks) -> Value {
    let tasks: Vec<Value> = tasks.list().iter().map(|t| legacy_json(t, &t.snapshot())).collect();
    json!({"tasks": tasks})
}

/// `tasks/result` (2025-11-25): waits until the task ends and answers its result. While it waits
/// for input, the question goes to the client as an `elicitation/create` request tied to the task,
/// and the answer to the work.
pub(super) fn result(tasks: &Tasks, req: &Request<'_>) -> Result<Value, RpcError> {
    let task = find(tasks, req.params)?;
    let mut waiter = Waiter::new().cancel(req.cancel.receiver()).on(task.subscribe());
    let look = |asked: &mut Option<String>| match task.snapshot().status {
        Status::Completed { mut result, .. } => {
            if !result["_meta"].is_object() {
                result["_meta"] = json!({});
            }
            result["_meta"][RELATED_TASK] = json!({"taskId": task.id});
            Look::Done(Ok(result))
        }
        Status::Failed { error, .. } => {
            let code = error["code"].as_i64().unwrap_or(INTERNAL_ERROR);
            Look::Done(Err(RpcError::new(code, error["message"].as_str().unwrap_or("failed"))))
        }
        Status::Cancelled { .. } => Look::Done(Err(RpcError::new(
            INVALID_PARAMS,
            format!("task {} was cancelled", task.id),
        ))),
        Status::InputRequired { question } if asked.as_ref() != Some(&question.key) => {
            *asked = Some(question.key.clone());
            match elicit(&task, req, &question) {
                // Answered: look again at once.
                Some(()) => Look::Again(Some(Instant::now())),
                None => Look::Done(Err(RpcError::new(INTERNAL_ERROR, "cancelled"))),
            }
        }
        Status::InputRequired { .. } | Status::Working => Look::Again(None),
    };
    match waiter.drive(&mut None, look) {
        Drove::Done(result) => result,
        Drove::Deadline | Drove::Cancelled => Err(RpcError::new(INTERNAL_ERROR, "cancelled")),
    }
}

/// Asks the client the task's question as an `elicitation/create` tied to the task, and gives the
/// work its answer (a refusal declines); `None` when the call was cancelled meanwhile.
fn elicit(task: &Task, req: &Request<'_>, question: &Question) -> Option<()> {
    let mut params = question.request["params"].clone();
    params["_meta"] = json!({RELATED_TASK: {"taskId": task.id}});
    let response = (req.ask)("elicitation/create", params)?;
    let answer = match response.get("result") {
        Some(result) => answer_of(result),
        None => Reply::Decline,
    };
    task.answer(&question.key, answer);
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_task_shows_what_its_status_carries() {
        let tasks = Tasks::default();
        let task = tasks.create().unwrap();
        let question = Question { key: "input-1".into(), request: json!({"method": "m"}) };
        task.ask(question, "Name?".into());
        let state = task.snapshot();
        let modern = modern_json(&task, &state, true);
        assert_eq!(modern["status"], "input_required");
        assert_eq!(modern["statusMessage"], "Name?");
        assert_eq!(modern["inputRequests"], json!({"input-1": {"method": "m"}}));
        assert_eq!(modern["ttlMs"], Value::Null, "no retention while it runs");
        assert!(modern.get("resultType").is_none());
        assert!(modern_json(&task, &state, false).get("inputRequests").is_none());
        let legacy = legacy_json(&task, &state);
        assert_eq!(legacy["pollInterval"], POLL_INTERVAL_MS);
        assert!(legacy.get("inputRequests").is_none() && legacy.get("ttlMs").is_none());
        task.complete(json!({"x": 1}));
        let done = modern_json(&task, &task.snapshot(), true);
        assert_eq!(done["result"], json!({"x": 1}));
        assert!(done["ttlMs"].as_u64().is_some());
    }

    #[test]
    fn only_an_accepted_input_is_typed() {
        let accept = json!({"action": "accept", "content": {"input": "y"}});
        assert_eq!(answer_of(&accept), Reply::Accept("y".into()));
        assert_eq!(answer_of(&json!({"action": "decline"})), Reply::Decline);
        assert_eq!(answer_of(&json!({"action": "accept", "content": {}})), Reply::Decline);
    }

    #[test]
    fn forms_are_taken_from_an_empty_or_form_capability() {
        assert!(form_elicitation(Some(&json!({}))));
        assert!(form_elicitation(Some(&json!({"form": {}, "url": {}}))));
        assert!(!form_elicitation(Some(&json!({"url": {}}))));
        assert!(!form_elicitation(None));
    }
}
