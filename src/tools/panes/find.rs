//! `fugue_get_output` with `pattern`: a search of the pane's output between `since` and `until`
//! (its whole scrollback by default), answering only the lines that match, each with `context`
//! lines around it (`pane::grep`).

use crate::error::{Error, Result};
use crate::pane::Pane;
use crate::pane::budget::{self, Budget, Omitted};
use crate::pane::exit::PaneState;
use crate::pane::grep;
use crate::pane::output::View;
use crate::pane::search::compile;
use crate::runtime::Runtime;
use crate::tool::{Answer, Ctx};
use serde::Serialize;

/// What a search answers.
#[derive(Serialize)]
struct SearchAnswer {
    output: String,
    /// The raw offset where each group of `output` begins.
    groups: Vec<u64>,
    matches: usize,
    /// Where the search ended: a later search `since` here sees only what came after.
    offset: u64,
    #[serde(flatten)]
    omitted: Omitted,
    #[serde(flatten)]
    state: PaneState,
}

/// The search `pattern` asks of `pane`, with `context` lines around each match, between `since`
/// and `until` (the whole scrollback by default), within `max_bytes`.
pub(super) fn search(
    ctx: &Ctx<'_, Runtime>,
    pane: &Pane,
    (pattern, context, (since, until)): (&str, usize, (Option<u64>, Option<u64>)),
    (view, max_bytes): (View, usize),
) -> Result<Answer> {
    let regex = compile(pattern, ctx.config.max_regex_bytes)?;
    let (start, end) = pane.output().with(|s| (s.ring.start(), s.ring.end()));
    let since = since.unwrap_or(start);
    let until = until.unwrap_or(end).min(end);
    if since > end || until < since {
        return Err(Error::invalid(format!(
            "since={since}, until={until}: the output runs from {start} to {end}, and until \
             comes after since"
        )));
    }
    let whole = Budget::whole(max_bytes, None);
    let lines = match view {
        View::Raw => budget::raw_lines(pane, since.max(start), until),
        View::Text => budget::lines(pane, since.max(start), until, &whole),
    };
    let found = grep::search(&lines, &regex, context, max_bytes);
    Answer::of(&SearchAnswer {
        output: found.text,
        groups: found.groups,
        matches: found.matches,
        offset: until,
        omitted: found.omitted,
        state: PaneState::new(pane.output().exit()),
    })
}
