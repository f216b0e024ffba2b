//! `fugue_send_input`: typing into a pane, and with `wait_ms` waiting as `fugue_exec` does; and
//! the same typing for a durable call that answers a program's question.

use super::shared::PANE_ID;
use crate::error::{Error, Result};
use crate::pane::budget::Budget;
use crate::runtime::Runtime;
use crate::shell::live::Live;
use crate::tool::params::{Ordered, Spec, Timeout, params};
use crate::tool::{Answer, Ctx};
use crate::tools::command_wait::{CommandAnswer, after_input};
use crate::tools::common::KEEP_AS_EXECS;
use crate::tools::common::responses::Responses;
use crate::tools::exec::{MAX_BYTES, MaxBytes};
use serde::Serialize;
use serde_json::{Value, json};

/// The most bytes the `keys` of one `fugue_send_input` may make.
const MAX_KEY_BYTES: usize = 64 << 10;

/// The largest `input` one `fugue_send_input` writes.
const MAX_INPUT_BYTES: usize = 1 << 20;

/// `submit` when absent.
const SUBMIT: bool = false;

/// What `fugue_send_input` without a wait answers.
#[derive(Serialize)]
struct Sent {
    bytes: usize,
    offset: u64,
    /// Bytes the program has not read yet.
    #[serde(skip_serializing_if = "Option::is_none")]
    pending: Option<usize>,
}

params! {
    /// `fugue_send_input`'s arguments.
    pub(in crate::tools) struct SendParams {
        pane_id: String = Spec::new(PANE_ID),
        input: Option<String> = Spec::new("Text to type"),
        keys: Option<Vec<Value>> = Spec::new("After input, in order: key names and {text}")
            .shaped(keys_schema),
        submit: bool = Spec::new("Press Enter at the end").or_bool(SUBMIT),
        wait_ms: Option<Timeout> = Spec::new("Then wait this long for the outcome"),
        responses: Option<Ordered> = Spec::new("With wait_ms: as fugue_exec's"),
        quiet_ms: Option<u64> = crate::tools::common::quiet_row(""),
        max_bytes: MaxBytes = Spec { description: "Output budget with wait_ms", ..MAX_BYTES },
        keep: Option<String> = KEEP_AS_EXECS,
    }
}

/// The shape of `keys`: names, and `{text}` objects typed as they are.
fn keys_schema() -> Value {
    json!({"type": "array", "items": {"oneOf": [{"type": "string"},
        {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}]}})
}

pub(in crate::tools) fn send_input(ctx: &Ctx<'_, Runtime>, args: SendParams) -> Result<Answer> {
    let started = std::time::Instant::now();
    let pane = ctx.mux.pane(&args.pane_id)?;
    // A wait's answer names the pane and how long it took, as fugue_exec's does.
    let waited = |mut answer: CommandAnswer| {
        answer.call.pane_id = Some(pane.id.clone());
        answer.call.duration_ms = Some(started.elapsed().as_millis() as u64);
        Answer::of(&answer).map(|a| a.asking(answer.asks()))
    };
    let input = args.input.as_deref().unwrap_or("");
    let keys = args.keys.as_deref().unwrap_or_default();
    let submit = args.submit;
    // 0 or absent: no wait.
    let wait = args.wait_ms.map(|Timeout(wait)| wait).filter(|wait| !wait.is_zero());
    let max_bytes = args.max_bytes.within(ctx.config.max_output_bytes)?;
    let keep = crate::tools::common::keep(args.keep.as_deref(), ctx.config.max_regex_bytes)?;
    let budget = Budget::whole(max_bytes, keep.as_ref());
    let responses = Responses::parse(args.responses.as_ref(), ctx.config.max_regex_bytes)?;
    let quiet = args.quiet_ms.map(std::time::Duration::from_millis);
    if responses.is_some() && wait.is_none() {
        return Err(Error::invalid("responses are used while waiting: give wait_ms too"));
    }
    if quiet.is_some() && wait.is_none() {
        return Err(Error::invalid("quiet_ms ends a wait early: give wait_ms too"));
    }
    if input.is_empty() && keys.is_empty() && !submit {
        if let Some(wait) = wait {
            return waited(after_input(ctx, &pane, None, wait, &budget, responses, quiet)?);
        }
        return Err(Error::invalid(
            "nothing to send: give input, keys, or submit: true (or wait_ms to only wait)",
        ));
    }
    check_input(input)?;
    let application_cursor = !keys.is_empty() && pane.application_cursor();
    let items = keys
        .iter()
        .enumerate()
        .map(|(i, item)| crate::pane::keys::item(i, item, application_cursor))
        .collect::<Result<Vec<_>>>()?;
    let key_bytes: usize = items.iter().map(Vec::len).sum();
    if key_bytes > MAX_KEY_BYTES {
        return Err(Error::invalid(format!(
            "keys make {key_bytes} bytes; the limit is {MAX_KEY_BYTES} per call"
        )));
    }
    // Each key item and Enter go in writes of their own, in order, so a program that reads the
    // typed text in one read sees Enter as a key press and not as part of a paste.
    let parts: Vec<&[u8]> = std::iter::once(input.as_bytes())
        .chain(items.iter().map(Vec::as_slice))
        .chain(submit.then_some(&b"\r"[..]))
        .filter(|part| !part.is_empty())
        .collect();
    let seen = Live::of(&pane).map(|live| live.shell.with(|st| st.prompts));
    let (offset, pending) = pane.send(&parts)?;
    let written: usize = parts.iter().map(|p| p.len()).sum();
    if let Some(wait) = wait {
        let mut answer =
            after_input(ctx, &pane, Some((offset, seen)), wait, &budget, responses, quiet)?;
        answer.call.bytes = Some(written);
        return waited(answer);
    }
    // A program that is not reading its input (yet) gets the rest when it does.
    Answer::of(&Sent { bytes: written, offset, pending: (pending > 0).then_some(pending) })
}

fn check_input(input: &str) -> Result<()> {
    if input.len() > MAX_INPUT_BYTES {
        return Err(Error::invalid(format!(
            "input is {} bytes; the limit is {MAX_INPUT_BYTES} per call",
            input.len()
        )));
    }
    Ok(())
}

/// Answers a program that asks: types `text` and Enter into pane `pane_id`, and waits as
/// `fugue_send_input` with `wait_ms` does (a durable call's answer to its question).
pub(crate) fn type_answer(
    ctx: &Ctx<'_, Runtime>,
    pane_id: &str,
    text: &str,
    wait: std::time::Duration,
) -> Result<Answer> {
    let started = std::time::Instant::now();
    let pane = ctx.mux.pane(pane_id)?;
    check_input(text)?;
    let seen = Live::of(&pane).map(|live| live.shell.with(|st| st.prompts));
    let parts: [&[u8]; 2] = [text.as_bytes(), b"\r"];
    let (offset, _) = pane.send(&parts)?;
    let budget =
        Budget::whole(crate::pane::budget::default_bytes(ctx.config.max_output_bytes), None);
    let mut answer = after_input(ctx, &pane, Some((offset, seen)), wait, &budget, None, None)?;
    answer.call.bytes = Some(text.len() + 1);
    answer.call.pane_id = Some(pane.id.clone());
    answer.call.duration_ms = Some(started.elapsed().as_millis() as u64);
    Answer::of(&answer).map(|a| a.asking(answer.asks()))
}
