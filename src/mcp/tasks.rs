//! Durable calls: MCP's Tasks over the store in `tool::task`, in both protocol eras.
//!
//! In: a `tools/call` of a long tool from a client that declared Tasks — the 2026-07-28 extension
//! `io.modelcontextprotocol/tasks` in the request's `_meta` capabilities, or a 2025-11-25 `task`
//! parameter — and the `tasks/*` requests that follow. The call runs on a thread of its own (a
//! `Work`), so it outlives the request. A 2026-07-28 call that ends within `GRACE` is answered
//! inline; otherwise, and always for 2025-11-25, the answer is the task. When the program in the
//! pane asks (fugue's input detection, the `input` status of the tool's own answer) and the client
//! can answer a form, the task waits in `input_required` with an `elicitation/create` form whose
//! answer is typed into the terminal, then Enter, and the work goes on as `fugue_send_input` with
//! `wait_ms` would. Out: task handles and states in each era's shape, and for 2025-11-25 clients
//! `notifications/tasks/status` on each change of status and the question as an `elicitation/create`
//! request while the client waits in `tasks/result`.

use super::envelope::{CAPABILITIES_KEY, Era, Push, Request, decorate};
use super::registry;
use crate::ids::iso8601;
use crate::jsonrpc::{INTERNAL_ERROR, INVALID_PARAMS, MISSING_CAPABILITY, RpcError};
use crate::pane::tail;
use crate::runtime::Runtime;
use crate::tool::Registered;
use crate::tool::call::Progress;
use crate::tool::task::{Answer, MAX_LIVE, Question, State, Status, Task, Tasks};
use crossbeam_channel::{after, select};
use serde_json::{Map, Value, json};
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

/// The tools whose `input` answer names a program still waiting, in a pane an answer can be typed
/// into (the run tools stop a program that asks).
const ASKING: [&str; 4] = ["fugue_exec", "fugue_send_input", "fugue_wait", "fugue_expect"];

/// How the client wants a call run as a task.
#[derive(Clone, Copy)]
pub(super) struct Mode {
    era: Era,
    /// The client answers form elicitations: a program's question becomes `input_required`.
    elicitation: bool,
}

/// The task mode of a `tools/call`, if the client asked for one; `legacy` holds the capabilities
/// a 2025-11-25 client declared in `initialize`.
pub(super) fn mode(era: Era, params: &Map<String, Value>, legacy: &Value) -> Option<Mode> {
    match era {
        Era::Modern => {
            let caps = params.get("_meta").and_then(|m| m.get(CAPABILITIES_KEY))?;
            caps.get("extensions").and_then(|e| e.get(EXTENSION))?;
            Some(Mode { era, elicitation: form_elicitation(caps.get("elicitation")) })
        }
        Era::Legacy => {
            params.get("task").filter(|t| t.is_object())?;
            Some(Mode { era, elicitation: form_elicitation(legacy.get("elicitation")) })
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
    mode: Mode,
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
    let spawned = std::thread::Builder::new().name("fugue-task".into()).spawn(move || work.run());
    if spawned.is_err() {
        tasks.remove(&task.id);
        return Err(RpcError::new(INTERNAL_ERROR, "cannot start a thread for the task"));
    }
    if mode.era == Era::Legacy {
        return Ok(json!({"task": legacy_json(&task, &task.snapshot())}));
    }
    let deadline = Instant::now() + GRACE;
    loop {
        let state = task.snapshot();
        match state.status {
            Status::Completed if state.result.is_some() => {
                tasks.remove(&task.id);
                return Ok(state.result.unwrap_or_default());
            }
            Status::Working if Instant::now() < deadline => {}
            _ => {
                let mut handle = modern_json(&task, &state, false);
                handle["resultType"] = json!("task");
                return Ok(handle);
            }
        }
        select! {
            recv(changed) -> _ => {}
            recv(req.cancel.receiver()) -> _ => {
                // Cancelled before it became a task: as any cancelled call, only the wait ends.
                task.cancel.cancel();
                tasks.remove(&task.id);
                return Err(RpcError::new(INTERNAL_ERROR, "cancelled"));
            }
            recv(after(deadline.saturating_duration_since(Instant::now()))) -> _ => {}
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
    mode: Mode,
    /// Sends a notification to the client that made the task, while it is connected.
    push: Option<Push>,
}

impl Work {
    fn run(self) {
        let mut result = match self.call(self.tool, &self.arguments) {
            Ok(result) => result,
            Err(error) => return self.fail(error),
        };
        let mut asked = 0;
        loop {
            if self.task.cancel.is_cancelled() {
                return self.cancelled(asking(self.tool.tool.name, &self.arguments, &result));
            }
            let question = asking(self.tool.tool.name, &self.arguments, &result);
            let Some((pane, question)) = question.filter(|_| self.mode.elicitation) else {
                return self.complete(result);
            };
            asked += 1;
            match self.ask(format!("input-{asked}"), &pane, &question) {
                Some(Answer::Accept(text)) => {
                    self.task.working(Some(format!("typed an answer into pane {pane}")));
                    self.announce();
                    result = match self.type_answer(&pane, &text) {
                        Ok(result) => result,
                        Err(error) => return self.fail(error),
                    };
                }
                Some(Answer::Decline) => return self.complete(result),
                None => return self.cancelled(Some((pane, question))),
            }
        }
    }

    /// Runs a tool under the task's cancel, with its progress as the task's status message.
    fn call(
        &self,
        tool: &'static Registered<Runtime>,
        arguments: &Map<String, Value>,
    ) -> Result<Value, RpcError> {
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
        let run = std::panic::AssertUnwindSafe(|| tool.call(&ctx, arguments));
        std::panic::catch_unwind(run)
            .map_err(|_| RpcError::new(INTERNAL_ERROR, "internal error: the handler panicked"))
    }

    /// Puts the question to the client and waits for its answer; `None` when the task is
    /// cancelled meanwhile.
    fn ask(&self, key: String, pane: &str, question: &str) -> Option<Answer> {
        let message = if question.is_empty() {
            format!("The program in pane {pane} waits for input")
        } else {
            question.to_string()
        };
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
    fn type_answer(&self, pane: &str, text: &str) -> Result<Value, RpcError> {
        let send = registry::find("fugue_send_input")
            .ok_or_else(|| RpcError::new(INTERNAL_ERROR, "fugue_send_input is not registered"))?;
        let wait = ["timeout_ms", "wait_ms"]
            .iter()
            .find_map(|k| self.arguments.get(*k).and_then(Value::as_u64))
            .filter(|ms| *ms > 0)
            .unwrap_or(ANSWER_WAIT_MS);
        let arguments = json!({"pane_id": pane, "input": text, "submit": true, "wait_ms": wait});
        self.call(send, arguments.as_object().expect("an object literal"))
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
    fn cancelled(&self, asking: Option<(String, String)>) {
        if let Some((pane, _)) = asking
            && let Ok(pane) = self.runtime.mux.pane(&pane)
        {
            crate::shell::live::interrupt(&pane);
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

/// The pane and question of a tool result that says a program waits for input.
fn asking(tool: &str, arguments: &Map<String, Value>, result: &Value) -> Option<(String, String)> {
    if !ASKING.contains(&tool) || result["isError"] == json!(true) {
        return None;
    }
    let answer = &result["structuredContent"];
    let asked = if answer["status"] == "input" {
        answer
    } else {
        answer["results"].as_array()?.iter().find(|r| r["status"] == "input")?
    };
    let pane = asked["pane_id"]
        .as_str()
        .map(str::to_string)
        .or_else(|| arguments.get("pane_id").and_then(Value::as_str).map(str::to_string))?;
    let question = match asked["line"].as_str() {
        Some(line) => line.to_string(),
        None => tail::question(asked["output"].as_str().unwrap_or_default()).trim().to_string(),
    };
    // A question with no words of its own (a full-screen program) is named by the program.
    let question = match asked["program"].as_str() {
        Some(program) if question.is_empty() => format!("{program} waits for input"),
        _ => question,
    };
    Some((pane, question))
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
fn answer_of(response: &Value) -> Answer {
    match (response["action"].as_str(), response["content"]["input"].as_str()) {
        (Some("accept"), Some(input)) => Answer::Accept(input.to_string()),
        _ => Answer::Decline,
    }
}

/// The task as 2026-07-28 shows it; `detailed` adds what its status carries (`tasks/get`).
fn modern_json(task: &Task, state: &State, detailed: bool) -> Value {
    let mut value = json!({
        "taskId": task.id,
        "status": state.status.as_str(),
        "createdAt": iso8601(task.created),
        "lastUpdatedAt": iso8601(state.updated),
        "ttlMs": task.ttl_ms(state),
        "pollIntervalMs": POLL_INTERVAL_MS,
    });
    if let Some(message) = &state.message {
        value["statusMessage"] = json!(message);
    }
    if detailed {
        if let Some(question) = &state.question {
            value["inputRequests"] = json!({question.key.clone(): question.request});
        }
        if let Some(result) = &state.result {
            value["result"] = result.clone();
        }
        if let Some(error) = &state.error {
            value["error"] = error.clone();
        }
    }
    value
}

/// The task as 2025-11-25 shows it.
fn legacy_json(task: &Task, state: &State) -> Value {
    let mut value = json!({
        "taskId": task.id,
        "status": state.status.as_str(),
        "createdAt": iso8601(task.created),
        "lastUpdatedAt": iso8601(state.updated),
        "ttl": task.ttl_ms(state),
        "pollInterval": POLL_INTERVAL_MS,
    });
    if let Some(message) = &state.message {
        value["statusMessage"] = json!(message);
    }
    value
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
    let changed = task.subscribe();
    let mut asked = None;
    loop {
        let state = task.snapshot();
        match state.status {
            Status::Completed => {
                let mut result = state.result.unwrap_or_default();
                if !result["_meta"].is_object() {
                    result["_meta"] = json!({});
                }
                result["_meta"][RELATED_TASK] = json!({"taskId": task.id});
                return Ok(result);
            }
            Status::Failed => {
                let error = state.error.unwrap_or_default();
                let code = error["code"].as_i64().unwrap_or(INTERNAL_ERROR);
                return Err(RpcError::new(code, error["message"].as_str().unwrap_or("failed")));
            }
            Status::Cancelled => {
                return Err(RpcError::new(
                    INVALID_PARAMS,
                    format!("task {} was cancelled", task.id),
                ));
            }
            Status::InputRequired => {
                if let Some(question) = state.question.filter(|q| asked.as_ref() != Some(&q.key)) {
                    asked = Some(question.key.clone());
                    let mut params = question.request["params"].clone();
                    params["_meta"] = json!({RELATED_TASK: {"taskId": task.id}});
                    match (req.ask)("elicitation/create", params) {
                        Some(response) if response.get("result").is_some() => {
                            task.answer(&question.key, answer_of(&response["result"]));
                        }
                        Some(_) => {
                            task.answer(&question.key, Answer::Decline);
                        }
                        None => return Err(RpcError::new(INTERNAL_ERROR, "cancelled")),
                    }
                    continue;
                }
            }
            Status::Working => {}
        }
        select! {
            recv(changed) -> _ => {}
            recv(req.cancel.receiver()) -> _ => return Err(RpcError::new(INTERNAL_ERROR, "cancelled")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_question_is_found_in_each_asking_answer() {
        let exec = json!({"structuredContent": {"status": "input", "pane_id": "p1",
                          "output": "Building\nOverwrite? [y/N]"}});
        assert_eq!(
            asking("fugue_exec", &Map::new(), &exec),
            Some(("p1".into(), "Overwrite? [y/N]".into()))
        );
        let wait = json!({"structuredContent": {"status": "done", "results": [
            {"pane_id": "a", "status": "running"},
            {"pane_id": "b", "status": "input", "line": "Name?"}]}});
        assert_eq!(asking("fugue_wait", &Map::new(), &wait), Some(("b".into(), "Name?".into())));
        let args = json!({"pane_id": "named"});
        let expect = json!({"structuredContent": {"status": "input", "line": "Password:"}});
        assert_eq!(
            asking("fugue_expect", args.as_object().unwrap(), &expect),
            Some(("named".into(), "Password:".into()))
        );
        let run = json!({"structuredContent": {"status": "input", "pane_id": "x"}});
        assert_eq!(asking("fugue_run_parallel", &Map::new(), &run), None, "stopped already");
        let failed = json!({"isError": true, "structuredContent": {"status": "input"}});
        assert_eq!(asking("fugue_exec", &Map::new(), &failed), None);
        // A full-screen program's question has no words of its own: the program names it.
        let screen = json!({"structuredContent": {"status": "input", "pane_id": "v",
                            "output": "", "program": "vim"}});
        assert_eq!(
            asking("fugue_exec", &Map::new(), &screen),
            Some(("v".into(), "vim waits for input".into()))
        );
    }

    #[test]
    fn only_an_accepted_input_is_typed() {
        let accept = json!({"action": "accept", "content": {"input": "y"}});
        assert_eq!(answer_of(&accept), Answer::Accept("y".into()));
        assert_eq!(answer_of(&json!({"action": "decline"})), Answer::Decline);
        assert_eq!(answer_of(&json!({"action": "accept", "content": {}})), Answer::Decline);
    }

    #[test]
    fn forms_are_taken_from_an_empty_or_form_capability() {
        assert!(form_elicitation(Some(&json!({}))));
        assert!(form_elicitation(Some(&json!({"form": {}, "url": {}}))));
        assert!(!form_elicitation(Some(&json!({"url": {}}))));
        assert!(!form_elicitation(None));
    }
}
