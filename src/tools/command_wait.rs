//! Waiting for a command in a pane to end, ask, fall silent or outlast the deadline: the one wait
//! behind `fugue_exec` and `fugue_send_input`'s `wait_ms`.
//!
//! In: the pane, its shell integration (if any), what ends the wait (the prompt after a given
//! exec, or any prompt printed after a given output offset), an optional pattern for the exec's
//! output (`until`), optional `responses` (a question a key matches is answered and the wait goes
//! on), an optional `quiet_ms` watchdog, and the deadline. `Waiter::drive` sleeps on the shell's
//! records, the pane's end, its output (only with a pattern), the call's cancel channel, the
//! deadline, the next look the input watch or the watchdog has due, and the progress heartbeat.
//! Out: an `Outcome`, and from it the `CommandAnswer`: where the command stands (`Stand`: ok,
//! failed, input, running, quiet, exited, ready, each with its own fields), `output` and `offset`.

use super::answer::{ExecStatus, Stand};
use crate::error::{Error, Result};
use crate::ids::PaneId;
use crate::pane::activity::InputWatch;
use crate::pane::budget::{self, AnswerOutput, Budget};
use crate::pane::exit::Exit;
use crate::pane::search::{Found, Scan};
use crate::pane::tail;
use crate::pane::{Pane, mark};
use crate::runtime::Runtime;
use crate::shell::live::Live;
use crate::shell::{Prompt, Shell};
use crate::tool::choice::Choice;
use crate::tool::schema::{nullable, result, typed};
use crate::tool::{Asking, Ctx};
use crate::tools::common::quiet::Quiet;
use crate::tools::common::responses::{Answered, Responder, Responses};
use crate::waiter::{Drove, Look, Waiter};
use regex::Regex;
use serde::Serialize;
use serde_json::Value;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How far before the write a prompt's end mark is looked for, to tell a prompt printed just
/// before the write (whose record arrived late) from the one after the command.
const LOOK_BACK: u64 = 64 << 10;

/// What ends the wait, besides the pane's end, a question and the deadline.
#[derive(Clone, Copy)]
pub(crate) enum Until {
    /// The prompt after `fugue_exec` number `id`, which was typed at output offset `typed`.
    Exec { id: u64, typed: u64 },
    /// The first prompt printed after output offset `from`, among the records after the first
    /// `seen`.
    PromptAfter { from: u64, seen: u64 },
}

/// How the wait ended.
pub(crate) enum Outcome {
    /// The shell showed its prompt again: the command ended with this status, in this directory;
    /// its output ends at `end`.
    Ended { prompt: Prompt, end: u64 },
    /// The pane's process ended.
    Exited(Option<Exit>),
    /// The program waits for the terminal: its name, when known.
    Input(Option<String>),
    /// The deadline passed.
    Running,
    /// The program printed nothing for the wait's `quiet` period and does not ask.
    Quiet,
    /// The exec's output matched the wait's pattern; the command goes on.
    Ready(Found),
}

pub(crate) struct Wait<'a> {
    pub(crate) pane: &'a Arc<Pane>,
    pub(crate) shell: Option<&'a Shell>,
    pub(crate) until: Until,
    /// Ends the wait with `Ready` when the exec's own output matches it (`Until::Exec` only).
    pub(crate) pattern: Option<Regex>,
    pub(crate) deadline: Instant,
    /// Answers the program's questions that its keys match; the wait goes on after each.
    pub(crate) responder: Option<&'a mut Responder>,
    /// Ends the wait with `Quiet` when the program prints nothing this long (`quiet_ms`).
    pub(crate) quiet: Option<Duration>,
}

/// The search of an exec's output for the wait's pattern: it begins once the mark where the
/// output begins is found, so the typed line never matches.
enum Search {
    None,
    BeforeMark { regex: Regex, mark: String, typed: u64 },
    Scanning(Scan),
}

impl Search {
    fn matched(&mut self, pane: &Pane) -> Option<Found> {
        if let Search::BeforeMark { regex, mark, typed } = self {
            let (_, begin) = mark::locate(pane, mark, *typed)?;
            *self = Search::Scanning(Scan::new(regex.clone(), begin));
        }
        let Search::Scanning(scan) = self else { return None };
        scan.catch_up(pane)
    }
}

impl Wait<'_> {
    /// Blocks until the wait ends; `Err` only when the call is cancelled.
    pub(crate) fn run(&mut self, ctx: &Ctx<'_, Runtime>) -> Result<Outcome> {
        let mut waiter = self.waiter(ctx);
        let search = self.search();
        if !matches!(search, Search::None) {
            waiter.add(self.pane.output().subscribe());
        }
        let mut watch = InputWatch::new(self.pane);
        let started = Instant::now();
        // What was just typed may still sit unread in the terminal while the program's last
        // print is long past.
        watch.typed_at(started);
        let quiet = self.quiet.map(|quiet| Quiet::new(self.pane, quiet, started));
        let (pane, from, deadline) = (self.pane, self.from(), self.deadline);
        let report = |_: &(Search, InputWatch, Option<Quiet>)| {
            report(ctx, pane, from, (started, deadline));
        };
        let look = |(search, watch, quiet): &mut (Search, InputWatch, Option<Quiet>)| {
            let outcome = self.look(search, watch, quiet.as_mut());
            let next = [watch.next_check(), quiet.as_ref().map(Quiet::due)];
            outcome.map_or_else(|| Look::Again(next.into_iter().flatten().min()), Look::Done)
        };
        match waiter.drive(&mut (search, watch, quiet), look, report) {
            Drove::Done(outcome) => Ok(outcome),
            Drove::Deadline => Ok(Outcome::Running),
            Drove::Cancelled => Err(Error::cancelled()),
        }
    }

    /// What the wait sleeps on: the shell's records, the pane's end, the call's cancel, the
    /// deadline and the heartbeat.
    fn waiter(&self, ctx: &Ctx<'_, Runtime>) -> Waiter {
        let mut waiter = Waiter::new()
            .cancel(ctx.cancel.receiver())
            .until(self.deadline)
            .heartbeat(ctx.progress.heartbeat())
            .on(self.pane.output().subscribe_status());
        if let Some(shell) = self.shell {
            waiter.add(shell.subscribe());
        }
        waiter
    }

    /// One look: the outcome, if the wait has one now. A question a response answers is not one:
    /// the next question is looked for once the answer has been read.
    fn look(
        &mut self,
        search: &mut Search,
        watch: &mut InputWatch,
        quiet: Option<&mut Quiet>,
    ) -> Option<Outcome> {
        if let Some(outcome) = self.ended() {
            return Some(outcome);
        }
        if !self.pane.is_running() {
            return Some(Outcome::Exited(self.pane.output().exit()));
        }
        if let Some(found) = search.matched(self.pane) {
            return Some(Outcome::Ready(found));
        }
        if watch.check() {
            if !self.respond(watch) {
                return Some(Outcome::Input(watch.program()));
            }
            *watch = InputWatch::new(self.pane);
            watch.typed_at(Instant::now());
        }
        quiet.is_some_and(Quiet::check).then_some(Outcome::Quiet)
    }

    /// The program asks: answers it from the responses, if a key matches its question.
    fn respond(&mut self, watch: &InputWatch) -> bool {
        let Some(responder) = self.responder.as_deref_mut() else { return false };
        if let (Until::Exec { id, typed }, Some(shell)) = (self.until, self.shell)
            && let Some((_, begin)) = mark::locate(self.pane, &shell.begin_mark(id), typed)
        {
            responder.begins_at(begin);
        }
        responder.reply(self.pane, watch)
    }

    fn search(&self) -> Search {
        match (&self.pattern, self.until, self.shell) {
            (Some(regex), Until::Exec { id, typed }, Some(shell)) => {
                Search::BeforeMark { regex: regex.clone(), mark: shell.begin_mark(id), typed }
            }
            _ => Search::None,
        }
    }

    /// The prompt that ends the wait, once its record has come.
    fn ended(&self) -> Option<Outcome> {
        let shell = self.shell?;
        match self.until {
            Until::Exec { id, typed } => {
                let prompt =
                    shell.with(|s| s.recent.iter().rev().find(|p| p.exec == id).cloned())?;
                let end = mark::find(self.pane, &shell.end_mark(&prompt), typed);
                Some(Outcome::Ended {
                    end: end.map_or_else(|| self.pane.output().end(), |m| m.0),
                    prompt,
                })
            }
            Until::PromptAfter { from, seen } => {
                let prompts: Vec<Prompt> = shell.with(|s| s.since(seen).cloned().collect());
                let look_from = from.saturating_sub(LOOK_BACK);
                prompts.into_iter().find_map(|prompt| {
                    match mark::find(self.pane, &shell.end_mark(&prompt), look_from) {
                        // Printed before the write: the prompt the input went to, not the next.
                        Some((at, _)) if at < from => None,
                        Some((at, _)) => Some(Outcome::Ended { prompt, end: at }),
                        None => Some(Outcome::Ended { end: self.pane.output().end(), prompt }),
                    }
                })
            }
        }
    }

    /// Where the output waited on begins: where the command was typed, or the write.
    fn from(&self) -> u64 {
        match self.until {
            Until::Exec { typed, .. } => typed,
            Until::PromptAfter { from, .. } => from,
        }
    }
}

/// Progress: the seconds waited of the wait's whole, and the last line the pane printed since
/// `from`.
fn report(ctx: &Ctx<'_, Runtime>, pane: &Pane, from: u64, (started, deadline): (Instant, Instant)) {
    let line = crate::tools::common::tail(pane, from, pane.output().end(), 1);
    let total = deadline.saturating_duration_since(started).as_secs_f64();
    ctx.progress.report(started.elapsed().as_secs_f64(), Some(total), line.trim_end());
}

/// `fugue_send_input`'s wait: after a write at output offset `written.0` (when the shell had
/// reported `written.1` prompts), or with nothing written, until the command or program ends,
/// waits for the terminal (and no `responses` key answers it), or `wait` passes. Answers with
/// `status`, `exit_code`, `cwd`, `output` since the write, `offset`, and with responses,
/// `answered`.
pub(crate) fn after_input(
    ctx: &Ctx<'_, Runtime>,
    pane: &Arc<Pane>,
    written: Option<(u64, Option<u64>)>,
    wait: Duration,
    budget: &Budget<'_>,
    responses: Option<Responses>,
    quiet: Option<Duration>,
) -> Result<CommandAnswer> {
    let live = Live::of(pane);
    let shell = live.map(|live| live.shell);
    // The pane's own process is the shell (a kept pipeline pane's steps' shell became one).
    let shell_pane = pane.command.is_none() || shell.is_some();
    let (from, seen) = match written {
        Some((offset, seen)) => (offset, seen),
        None => (pane.output().end(), shell.map(|s| s.with(|st| st.prompts))),
    };
    let cwd = || shell.and_then(|s| s.with(crate::shell::Records::cwd));
    if written.is_none()
        && let Some(prompt) = live.and_then(|live| live.idle())
    {
        // Nothing runs and nothing was typed: the last command's outcome is the answer.
        let outcome = Outcome::Ended { prompt, end: from };
        let mut answer = answer(pane, outcome, from, budget, None, shell_pane);
        answer.call.answered = responses.map(|_| Vec::new());
        return Ok(answer);
    }
    let until = Until::PromptAfter { from, seen: seen.unwrap_or(0) };
    let deadline = Instant::now() + wait;
    let mut responder = responses.map(|r| Responder::new(r, from));
    let responding = responder.as_mut();
    let outcome =
        Wait { pane, shell, until, pattern: None, deadline, responder: responding, quiet }
            .run(ctx)?;
    let mut answer = answer(pane, outcome, from, budget, cwd(), shell_pane);
    answer.call.answered = responder.map(|r| r.answered());
    Ok(answer)
}

/// The answer of a command waited on in a shell: `fugue_exec`'s, and `fugue_send_input`'s with
/// `wait_ms`: where the command stands, what it printed, and the call's own fields.
#[derive(Serialize)]
pub(crate) struct CommandAnswer {
    #[serde(flatten)]
    pub(crate) stand: Stand,
    #[serde(flatten)]
    pub(crate) output: AnswerOutput,
    /// Beside a full-screen program's screen: what the command printed on the main screen before
    /// the program took it (`git status; git commit`'s status lines under the editor).
    #[serde(skip_serializing_if = "Option::is_none")]
    printed: Option<String>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    alternate_screen: bool,
    offset: u64,
    #[serde(flatten)]
    pub(crate) call: CallFields,
}

/// The fields of a `CommandAnswer` that the call gives, after the command's own.
#[derive(Default, Serialize)]
pub(crate) struct CallFields {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) answered: Option<Vec<Answered>>,
    /// The pane's whole sandbox policy, when the call asked for one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) sandbox: Option<serde_json::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) sandbox_denied: Option<String>,
    /// What `fugue_send_input` wrote.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) bytes: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) duration_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) pane_id: Option<PaneId>,
}

impl CommandAnswer {
    /// The program that waits for input, when the answer is `input`: its question is the last
    /// line the output shows.
    pub(crate) fn asks(&self) -> Option<Asking> {
        let Stand::Input { program, .. } = &self.stand else { return None };
        Some(Asking {
            pane_id: self.call.pane_id.as_deref().unwrap_or_default().to_string(),
            question: tail::question(&self.output.output).trim().to_string(),
            program: program.clone(),
        })
    }
}

/// A full-screen program asks (an editor, a pager, an installer): its screen is the `output`, what
/// the agent must see to answer; what the command printed on the main screen before it (the text
/// view, which leaves the alternate screen out) is `printed`, in what the screen left of `budget`.
/// `omitted` counts the lines both left out; its `since` is where `printed`'s begin.
fn screen_and_printed(
    pane: &Pane,
    rows: &[String],
    (from, end): (u64, u64),
    budget: &Budget<'_>,
) -> (AnswerOutput, Option<String>) {
    let screen = budget::screen(rows, budget);
    let room = budget.bytes.saturating_sub(screen.text.len() + 1);
    let printed = budget::output(pane, from, end, &Budget::whole(room, budget.keep));
    // Nothing printed, or no room left by the screen: the screen alone.
    if room == 0 || printed.text.trim().is_empty() {
        return (screen.into(), None);
    }
    let output = AnswerOutput { output: screen.text, omitted: screen.omitted.and(printed.omitted) };
    (output, Some(printed.text))
}

/// The answer for `outcome`: `status`, `exit_code` where there is one, `cwd`, `output` (the text
/// view of the output from `from`, fitted to `budget`, with `omitted` when lines were left
/// out) and `offset`. `shell_pane` says whether the pane's own process is the
/// shell: its end is then `exited`.
pub(crate) fn answer(
    pane: &Pane,
    outcome: Outcome,
    from: u64,
    budget: &Budget<'_>,
    cwd: Option<String>,
    shell_pane: bool,
) -> CommandAnswer {
    let end = match &outcome {
        Outcome::Ended { end, .. } => *end,
        _ => pane.output().end(),
    };
    let screen = matches!(outcome, Outcome::Input(_)).then(|| tail::alternate_rows(pane)).flatten();
    let alternate_screen = screen.is_some();
    // A command that succeeded is read for its end and what matters, not its first lines.
    let succeeded = match &outcome {
        Outcome::Ended { prompt, .. } => prompt.status == 0,
        Outcome::Exited(exit) => !shell_pane && exit.is_some_and(|e| e.success()),
        _ => false,
    };
    let budget = if succeeded { budget.succeeded() } else { budget.clone() };
    let (output, printed) = match screen {
        Some(rows) => screen_and_printed(pane, &rows, (from, end), &budget),
        None => (budget::output(pane, from, end, &budget).into(), None),
    };
    let stand = match outcome {
        Outcome::Ended { prompt, .. } => {
            Stand::ended(Some(Exit::Code(prompt.status)), Some(prompt.cwd))
        }
        Outcome::Exited(exit) if shell_pane => Stand::exited(exit, cwd),
        Outcome::Exited(exit) => Stand::ended(exit, cwd),
        Outcome::Input(program) => Stand::Input { cwd, program, line: None },
        Outcome::Running => Stand::Running { cwd },
        Outcome::Quiet => Stand::Quiet { cwd },
        Outcome::Ready(found) => Stand::Ready { cwd, found },
    };
    let alternate_screen = alternate_screen || stand.found_on_screen();
    let offset = pane.output().end();
    CommandAnswer { stand, output, printed, alternate_screen, offset, call: CallFields::default() }
}

/// The output schema's main keys of a `CommandAnswer`, with `extra` of the tool's own.
pub(crate) fn answer_schema(extra: &[(&str, Value)]) -> Value {
    let mut keys = vec![
        ("status", ExecStatus::words()),
        ("exit_code", nullable("integer")),
        ("cwd", typed("string")),
        ("output", typed("string")),
        ("program", typed("string")),
    ];
    keys.extend(extra.iter().cloned());
    result(&keys)
}
