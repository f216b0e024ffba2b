//! `fugue_exec`: one command in a live shell, answered in one call.
//!
//! The command is never typed: it goes into a 0600 file in the shell's private directory, and
//! fugue types a fixed line that reads the file and `eval`s it in the shell itself (so `cd`,
//! `export`, functions and aliases stay). The shell's next prompt record, which names the exec,
//! gives the status and the directory; the marks tagged with the exec's id and the prompt's number
//! delimit its output. A named pane that is busy gets `pane_busy` and nothing is typed; a shell
//! still starting is waited for. Without `pane_id` the command goes to the first free one of
//! fugue's own shells for the caller's directory (`pool`), a new one while all are busy. `cwd`
//! runs it in a directory as `cd DIR &&` would; `until` answers `ready` as soon as the command's
//! own output matches, and leaves it running. What is typed, in the shell's own syntax, and how a
//! cancelled task's command is interrupted are the live shell's (`shell::live::Live`).

use super::answer::{Stand, denied};
use super::command_wait::{self, CallFields, Outcome, Until, Wait};
use crate::error::{Error, ErrorKind, Result};
use crate::pane::budget::{self, Budget};
use crate::pane::search::compile;
use crate::pane::{Pane, mark};
use crate::runtime::Runtime;
use crate::shell::live::{Live, Typed};
use crate::shell::{PROMPT_DRAWN_WAIT, Records};
use crate::tool::params::{Ordered, Param, Params, Spec, Timeout, params};
use crate::tool::{Answer, RUNS};
use crate::tool::{Ctx, Tool, args::Args};
use crate::tools::common::responses::{self, Responder, Responses};
use crate::tools::common::{Command, KEEP};
use crate::tools::{SANDBOX, SandboxArg};
use crate::waiter::{Drove, Look, Waiter};
use serde_json::Value;
use std::path::PathBuf;
use std::time::{Duration, Instant};

pub(crate) const DEFAULT_MAX_BYTES: u64 = crate::pane::budget::DEFAULT_BYTES as u64;
/// How long a shell may take to show its first prompt, whatever the command's `timeout_ms`.
const SHELL_START: Duration = Duration::from_secs(10);
/// The longest command accepted, in bytes.
const MAX_COMMAND_BYTES: usize = 1 << 20;

pub(crate) const TOOL: Tool<Runtime> = Tool {
    name: "fugue_exec",
    title: "Run a command in a live shell",
    description: "Run shell text in a live shell; answer when it ends: status ok/failed \
                  (exit_code), input (`program` waits for the terminal; reply with \
                  fugue_send_input + wait_ms), running (timeout_ms passed), quiet (no output \
                  for quiet_ms, not asking), exited (it ended the shell), or ready \
                  (`until` matched its output). cwd, output (its own, or a full-screen program's \
                  screen beside printed: what came before), omitted, pane_id. State persists. \
                  No pane_id: fugue's own shells (a busy one is passed over), \
                  so start a job with until, run the next command, then fugue_wait on both. \
                  Only ok/failed/exited end it; stop it with keys [\"C-c\"] or \
                  fugue_close_pane.",
    hints: RUNS,
    input: || super::with_host(ExecParams::schema(), true, false),
    output: || command_wait::answer_schema(&[("pane_id", crate::tool::schema::typed("string"))]),
    durable: true,
    asks: true,
    call: |ctx, args| exec(ctx, Params::read(args)?),
};

params! {
    /// `fugue_exec`'s arguments.
    struct ExecParams {
        command: Command = Spec::new("Shell text to run"),
        pane_id: Option<String> = Spec::new("A shell pane (default: fugue's own, a free one)"),
        cwd: Option<PathBuf> = Spec::new("Run it in this directory (as cd DIR &&)"),
        until: Option<String> = Spec::new("Regex: answer ready when the command's output matches"),
        responses: Option<Ordered> = responses::RESPONSES,
        timeout_ms: Timeout = Spec::new("Answer running after this long (0: at once)").or(30_000),
        quiet_ms: Option<u64> = crate::tools::common::quiet_row("Silence that answers quiet"),
        max_bytes: MaxBytes = MAX_BYTES,
        keep: Option<String> = KEEP,
        sandbox: Option<SandboxArg> = SANDBOX,
    }
}

fn exec(ctx: &Ctx<'_, Runtime>, args: ExecParams) -> Result<Answer> {
    let started = Instant::now();
    let Command(command) = args.command;
    if command.len() > MAX_COMMAND_BYTES {
        return Err(Error::invalid(format!(
            "command is {} bytes; the limit is {MAX_COMMAND_BYTES}",
            command.len()
        )));
    }
    let max_bytes = args.max_bytes.within(ctx.config.max_output_bytes)?;
    let dir = args.cwd.map(|dir| ctx.dir(Some(dir)));
    if let Some(dir) = &dir {
        crate::tools::common::check_cwd(dir, "fugue_exec")?;
    }
    let regex_limit = ctx.config.max_regex_bytes;
    let pattern = args.until.map(|p| compile(&p, regex_limit)).transpose()?;
    let keep = crate::tools::common::keep(args.keep.as_deref(), regex_limit)?;
    let responses = Responses::parse(args.responses.as_ref(), regex_limit)?;
    let Timeout(timeout) = args.timeout_ms;
    let quiet = args.quiet_ms.map(Duration::from_millis);
    // A shell that is still starting (a new one of fugue's own, often) is waited for apart from
    // the command's own time: a short timeout_ms asks to leave a job running, not to fail it.
    let started_by = started + timeout.max(SHELL_START);
    // A shell of fugue's own is held from the choice until the command is typed.
    let asked = super::policy(args.sandbox.as_ref(), ctx.cwd, &ctx.sandbox)?;
    let (pane, claim) = match args.pane_id {
        Some(id) => (super::check_pane(ctx.mux.pane(&id)?, asked.as_ref())?, None),
        None => {
            let claim = ctx.shells.claim(&ctx.mux, ctx.cwd, asked.clone())?;
            (claim.pane.clone(), Some(claim))
        }
    };
    let live = live_shell(&pane)?;
    let shell = live.shell;
    wait_for_prompt(ctx, live, started_by)?;
    let deadline = Instant::now() + timeout;
    let Typed { id, at: typed } = live.run(&command, dir.as_deref())?;
    drop(claim);
    let mut responder = responses.map(|r| Responder::new(r, typed));
    let until = Until::Exec { id, typed };
    let responding = responder.as_mut();
    let mut wait = Wait {
        pane: &pane,
        shell: Some(shell),
        until,
        pattern,
        deadline,
        responder: responding,
        quiet,
    };
    let outcome = wait.run(ctx);
    if outcome.is_err() && ctx.cancel.stops_work() {
        // A task was cancelled: the call ends once the shell is back at its prompt, so the shell
        // is not left busy for the next call.
        live.interrupt();
    }
    let goes_on = |o: &Outcome| {
        matches!(o, Outcome::Input(_) | Outcome::Running | Outcome::Ready(_) | Outcome::Quiet)
    };
    if !outcome.as_ref().is_ok_and(goes_on) {
        shell.forget_exec(id);
    }
    let outcome = outcome?;
    let from = mark::find(&pane, &shell.begin_mark(id), typed).map_or(typed, |(_, end)| end);
    let cwd = shell.with(Records::cwd);
    let budget = Budget::whole(max_bytes, keep.as_ref());
    let mut answer = command_wait::answer(&pane, outcome, from, &budget, cwd, true);
    let failed = matches!(answer.stand, Stand::Failed(_));
    answer.call = CallFields {
        answered: responder.map(|r| r.answered()),
        sandbox: asked.and_then(|_| crate::sandbox::view(&pane.sandbox)),
        sandbox_denied: denied(&pane, failed, Some(&answer.output.output)),
        bytes: None,
        duration_ms: Some(started.elapsed().as_millis() as u64),
        pane_id: Some(pane.id.clone()),
    };
    Ok(Answer::of(&answer)?.asking(answer.asks()))
}

/// The `max_bytes` row, the answer's budget: `budget::DEFAULT_BYTES` when absent, at most
/// `FUGUE_MAX_OUTPUT_BYTES` (a setting, so not in the schema: `MaxBytes::within` checks it).
pub(crate) const MAX_BYTES: Spec =
    Spec::new("Output budget").range(64, u64::MAX).or(DEFAULT_MAX_BYTES);

/// A `max_bytes` argument: at least its row's minimum, as asked (the default applies in
/// `within`, which knows the ceiling).
#[derive(Clone, Copy, Debug)]
pub(crate) struct MaxBytes {
    asked: Option<u64>,
    min: u64,
}

impl Param for MaxBytes {
    fn read(args: &Args<'_>, key: &str, spec: &Spec) -> Result<MaxBytes> {
        Ok(MaxBytes { asked: args.u64(key, spec.min, u64::MAX)?, min: spec.min })
    }
    fn schema(spec: &Spec) -> Value {
        spec.describe_integer()
    }
}

impl MaxBytes {
    /// The budget, at most `ceiling` (`FUGUE_MAX_OUTPUT_BYTES`); the default, cut to the ceiling,
    /// when none was asked.
    pub(crate) fn within(self, ceiling: usize) -> Result<usize> {
        let Some(n) = self.asked else { return Ok(budget::default_bytes(ceiling)) };
        if n > ceiling as u64 {
            return Err(Error::invalid(format!(
                "argument 'max_bytes' must be between {} and {ceiling}, got {n}",
                self.min
            )));
        }
        Ok(n as usize)
    }
}

/// The pane's live shell, or the error that says why there is none.
pub(crate) fn live_shell(pane: &Pane) -> Result<Live<'_>> {
    match Live::of(pane) {
        Some(live) => Ok(live),
        None if pane.command.is_some() => Err(Error::new(
            ErrorKind::InvalidState,
            format!(
                "pane {} runs a command, not an interactive shell; use fugue_send_input with \
                 wait_ms, or fugue_exec on a shell pane",
                pane.id
            ),
        )),
        None => Err(Error::new(
            ErrorKind::InvalidState,
            format!(
                "pane {} has no shell integration (integration: false, FUGUE_SHELL_INTEGRATION=0, \
                 or a shell fugue does not know); use fugue_send_input with wait_ms instead",
                pane.id
            ),
        )),
    }
}

/// Waits until the shell sits at its prompt with nothing running: a shell still starting is
/// waited for until `deadline`; a busy one is an error at once.
fn wait_for_prompt(ctx: &Ctx<'_, Runtime>, live: Live<'_>, deadline: Instant) -> Result<()> {
    let pane = live.pane;
    // Subscribed before any look at the output, so the prompt's mark cannot slip between the
    // look and the wait. Before a command is typed the shell prints little: its start-up lines.
    let mut waiter = Waiter::new()
        .cancel(ctx.cancel.receiver())
        .until(deadline)
        .on(live.shell.subscribe())
        .on(pane.output().subscribe_status())
        .on(pane.output().subscribe());
    let look = |drawn_by: &mut Option<Instant>| match prompt_ready(&live, drawn_by) {
        Some(ready) => Look::Done(ready),
        None => Look::Again(*drawn_by),
    };
    match waiter.drive(&mut None, look, |_| {}) {
        Drove::Done(ready) => ready,
        Drove::Cancelled => Err(Error::cancelled()),
        Drove::Deadline => Err(no_first_prompt(pane)),
    }
}

/// One look at the shell before a command is typed: `Ok` once it sits at its drawn prompt, an
/// error when it has ended or is busy, `None` while it starts or draws its prompt. A prompt
/// without its mark (a theme that drops it) is waited for until `drawn_by`, set at the first look
/// that finds the shell idle.
fn prompt_ready(live: &Live<'_>, drawn_by: &mut Option<Instant>) -> Option<Result<()>> {
    let pane = live.pane;
    if !pane.is_running() {
        return Some(Err(Error::new(
            ErrorKind::PaneExited,
            format!("the shell of pane {} has exited; open a new pane", pane.id),
        )));
    }
    if let Some(command) = live.pending() {
        return Some(Err(busy(pane, &format!("fugue_exec {command:?} is still running"))));
    }
    if live.shell.with(|s| s.prompts) == 0 {
        return None;
    }
    if live.idle().is_none() {
        let job = pane.foreground_job().unwrap_or_else(|| "a job".into());
        return Some(Err(busy(pane, &format!("{job:?} is running"))));
    }
    // Typed before the prompt is drawn, the line would be echoed twice (by the terminal, then by
    // the line editor) and glued to the prompt.
    let by = *drawn_by.get_or_insert_with(|| Instant::now() + PROMPT_DRAWN_WAIT);
    (live.prompt_drawn() || Instant::now() >= by).then_some(Ok(()))
}

/// The shell did not show its first prompt in time: what it printed instead says why.
fn no_first_prompt(pane: &Pane) -> Error {
    Error::new(
        ErrorKind::InvalidState,
        format!(
            "the shell of pane {} did not show its first prompt within {} s (or timeout_ms, if \
             longer); its output: {:?}",
            pane.id,
            SHELL_START.as_secs(),
            crate::tools::common::tail(pane, 0, pane.output().end(), 3)
        ),
    )
}

fn busy(pane: &Pane, what: &str) -> Error {
    Error::new(
        ErrorKind::PaneBusy,
        format!(
            "pane {} is busy: {what}; wait with fugue_send_input wait_ms, stop it with keys \
             [\"C-c\"], or use another pane",
            pane.id
        ),
    )
}
