//! A search of a pane's output: `fugue_get_output` with `pattern` answers only the lines it
//! matches, each with `context` lines around it, close groups merged, each group with the raw
//! offset it starts at, and how many lines matched in all. The groups that fit the answer's
//! budget are shown, in order, a bare note (`[… 78 lines]`) between two; what did not fit is said
//! as every cut is (`omitted`: the matching lines not shown, the offset of the first group left
//! out, from which a search `since` goes on, and how many of them matter).

use super::budget::{Lines, Omitted};
use super::matter;
use regex::Regex;
use std::ops::Range;

/// What a search found.
#[derive(Debug, Default)]
pub(crate) struct Grepped {
    pub(crate) text: String,
    /// The raw offset where each group shown begins.
    pub(crate) groups: Vec<u64>,
    /// How many lines matched, shown or not.
    pub(crate) matches: usize,
    pub(crate) omitted: Omitted,
}

/// The lines of `lines` that `regex` matches, each with `context` lines around, within `bytes`.
pub(crate) fn search(lines: &Lines, regex: &Regex, context: usize, bytes: usize) -> Grepped {
    let hits: Vec<usize> =
        (0..lines.text.len()).filter(|i| regex.is_match(&lines.text[*i])).collect();
    let groups = groups(&hits, context, lines.text.len());
    let mut found = Grepped { matches: hits.len(), ..Grepped::default() };
    let mut out: Vec<String> = Vec::new();
    let mut shown_to = 0;
    for (n, group) in groups.iter().enumerate() {
        let gap = (!out.is_empty()).then(|| format!("[… {} lines]", group.start - shown_to));
        let body = lines.text[group.clone()].join("\n");
        let cost =
            body.len() + gap.as_ref().map_or(0, |g| g.len() + 1) + usize::from(!out.is_empty());
        if out.iter().map(|l| l.len() + 1).sum::<usize>() + cost > bytes {
            found.omitted = left_out(lines, &groups[n..], &hits);
            break;
        }
        out.extend(gap);
        out.push(body);
        found.groups.push(lines.starts.get(group.start).copied().unwrap_or_default());
        shown_to = group.end;
    }
    found.text = out.join("\n");
    found
}

/// The hits, each widened by `context` lines, merged where they meet.
fn groups(hits: &[usize], context: usize, n: usize) -> Vec<Range<usize>> {
    let mut groups: Vec<Range<usize>> = Vec::new();
    for &hit in hits {
        let range = hit.saturating_sub(context)..(hit + context + 1).min(n);
        match groups.last_mut() {
            Some(last) if range.start <= last.end => last.end = range.end,
            _ => groups.push(range),
        }
    }
    groups
}

/// What the groups not shown hold: their matching lines, where the first begins, how many of
/// those matter.
fn left_out(lines: &Lines, rest: &[Range<usize>], hits: &[usize]) -> Omitted {
    let from = rest.first().map_or(0, |g| g.start);
    let left: Vec<usize> = hits.iter().copied().filter(|i| *i >= from).collect();
    let matter = left.iter().filter(|i| matter::weight(&lines.text[**i], None) > 0);
    Omitted { lines: left.len(), since: lines.starts.get(from).copied(), matter: matter.count() }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log(n: usize, warn_at: &[usize]) -> Lines {
        let text: Vec<String> = (0..n)
            .map(|i| {
                if warn_at.contains(&i) {
                    format!("warning: disk {i} nearly full")
                } else {
                    format!("request {i} served in 3 ms")
                }
            })
            .collect();
        Lines::printed(text)
    }

    #[test]
    fn one_match_is_its_line_and_its_context() {
        let lines = log(1000, &[500]);
        let found = search(&lines, &Regex::new("(?i)warn").unwrap(), 1, 3584);
        assert_eq!(
            found.text,
            "request 499 served in 3 ms\nwarning: disk 500 nearly full\nrequest 501 served in 3 ms"
        );
        assert_eq!((found.matches, found.groups.clone()), (1, vec![lines.starts[499]]));
        assert_eq!(found.omitted, Omitted::default());
        let none = search(&lines, &Regex::new("nothing").unwrap(), 1, 3584);
        assert_eq!((none.text.as_str(), none.matches), ("", 0));
    }

    #[test]
    fn close_matches_share_a_group_and_far_ones_are_apart() {
        let lines = log(100, &[10, 12, 50]);
        let found = search(&lines, &Regex::new("warning").unwrap(), 1, 3584);
        assert_eq!(found.groups, [lines.starts[9], lines.starts[49]]);
        assert!(
            found.text.contains("request 13 served in 3 ms\n[… 35 lines]\nrequest 49"),
            "{}",
            found.text
        );
        let bare = search(&lines, &Regex::new("warning").unwrap(), 0, 3584);
        assert_eq!(bare.text.lines().filter(|l| l.starts_with("warning")).count(), 3);
    }

    #[test]
    fn what_does_not_fit_is_said_and_read_on() {
        let lines = log(1000, &(0..1000).step_by(10).collect::<Vec<_>>());
        let found = search(&lines, &Regex::new("warning").unwrap(), 1, 500);
        assert!(found.text.len() <= 500, "{}", found.text.len());
        assert_eq!(found.matches, 100);
        let shown = found.groups.len();
        assert_eq!(found.omitted.lines, 100 - shown);
        assert_eq!(found.omitted.since, Some(lines.starts[shown * 10 - 1]));
        assert_eq!(found.omitted.matter, 100 - shown, "warnings matter");
    }
}
