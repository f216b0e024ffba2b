//! Which lines an answer that does not fit keeps, chosen in turns within its bytes: all of them
//! once their runs are folded, when that fits a whole output's budget; else the last lines (up
//! to half the budget), then the lines that matter with a line of context each (errors first,
//! then warnings, each in order), then, for a tail, more of its end, or for a whole output that
//! did not succeed and where nothing matters, its first lines. A folded run is never kept: it
//! shows as its marker where both its ends are kept.

use super::fold::{Unit, marker};
use super::matter::{ERROR, WARNING};
use std::borrow::Cow;

/// An output's lines as `fit` hands them over: the lines, the units they make once folded, how
/// much each line matters, and what a gap's note is set aside.
pub(super) struct Cut<'a> {
    pub(super) all: &'a [String],
    pub(super) units: &'a [Unit],
    pub(super) weights: &'a [u8],
    pub(super) marker_cost: usize,
}

/// The kept text of each unit, in order; none for one left out.
pub(super) type Kept<'a> = Vec<Option<Cow<'a, str>>>;

/// What a budget asks of the choice (`budget::Budget`'s fields).
pub(super) struct Ask {
    pub(super) bytes: usize,
    pub(super) last: usize,
    pub(super) whole: bool,
    pub(super) first: bool,
}

impl<'a> Cut<'a> {
    /// The units kept for `ask`; `before`: lines before these were counted, not read.
    pub(super) fn choose(&self, ask: &Ask, before: bool) -> Kept<'a> {
        let mut pick = Pick::new(self, ask.bytes);
        if ask.whole && pick.all_fit(before) {
            pick.keep_all();
            return pick.kept;
        }
        let top = pick.last_lines(ask.last, ask.bytes / 2);
        let matters = pick.lines_that_matter(top);
        if !ask.whole {
            pick.more_of_the_last(top, ask.last);
        } else if ask.first && !matters {
            pick.first_lines(top);
        }
        pick.kept
    }
}

/// The units an answer keeps, chosen in turns, and the bytes still free.
struct Pick<'c, 'a> {
    cut: &'c Cut<'a>,
    kept: Kept<'a>,
    room: usize,
}

impl<'c, 'a> Pick<'c, 'a> {
    fn new(cut: &'c Cut<'a>, bytes: usize) -> Pick<'c, 'a> {
        Pick { cut, kept: vec![None; cut.units.len()], room: bytes }
    }

    fn text(&self, i: usize) -> &'a str {
        self.cut.all[self.cut.units[i].lines.start].as_str()
    }

    fn is_fold(&self, i: usize) -> bool {
        self.cut.units[i].fold
    }

    /// What unit `i` costs shown: its line, or its marker.
    fn cost(&self, i: usize) -> usize {
        let unit = &self.cut.units[i];
        if unit.fold { marker(unit.lines.len()).len() + 1 } else { self.text(i).len() + 1 }
    }

    fn weight(&self, i: usize) -> u8 {
        let unit = &self.cut.units[i];
        if unit.fold { 0 } else { self.cut.weights[unit.lines.start] }
    }

    fn keep(&mut self, i: usize) {
        if !self.is_fold(i) {
            let text = self.text(i);
            self.kept[i].get_or_insert(Cow::Borrowed(text));
        }
    }

    fn all_fit(&self, before: bool) -> bool {
        let total: usize = (0..self.kept.len()).map(|i| self.cost(i)).sum();
        total + if before { self.cut.marker_cost } else { 0 } <= self.room + 1
    }

    fn keep_all(&mut self) {
        for i in 0..self.kept.len() {
            self.keep(i);
        }
    }

    /// The last lines, at most `last` of them in `half` the bytes (the end of one longer line, as
    /// a tail shows it); answers the first unit of them.
    fn last_lines(&mut self, last: usize, half: usize) -> usize {
        let n = self.kept.len();
        let (mut top, mut spent, mut shown) = (n, 0, 0);
        while top > 0 && shown < last {
            let i = top - 1;
            if spent + self.cost(i) > half {
                if top == n {
                    let clipped = clip_start(self.text(i), half.saturating_sub(4));
                    spent += clipped.len() + 1;
                    self.kept[i] = Some(Cow::Owned(clipped));
                    top = i;
                }
                break;
            }
            spent += self.cost(i);
            shown += usize::from(!self.is_fold(i));
            self.keep(i);
            top = i;
        }
        self.room = self.room.saturating_sub(spent + self.cut.marker_cost);
        top
    }

    /// Before `top`, the lines that matter, each with a line of context: errors (and `keep`'s
    /// matches) first, then warnings, each in order, while they fit. Answers whether any line
    /// before `top` matters.
    fn lines_that_matter(&mut self, top: usize) -> bool {
        let mut any = false;
        for tier in [ERROR, WARNING] {
            for i in 0..top {
                if self.weight(i) != tier {
                    continue;
                }
                any = true;
                if self.kept[i].is_some() {
                    continue;
                }
                // With a line of context each side, or alone when that does not fit.
                let around = i.saturating_sub(1)..(i + 2).min(top);
                for group in [around, i..i + 1] {
                    if self.take(group) {
                        break;
                    }
                }
            }
        }
        any
    }

    /// Keeps the units of `group` if they fit with a gap's note; answers whether they did.
    fn take(&mut self, group: std::ops::Range<usize>) -> bool {
        let new: usize = group
            .clone()
            .filter(|j| self.kept[*j].is_none() && !self.is_fold(*j))
            .map(|j| self.cost(j))
            .sum();
        if new + self.cut.marker_cost > self.room {
            return false;
        }
        self.room -= new + self.cut.marker_cost;
        for j in group {
            self.keep(j);
        }
        true
    }

    /// The first lines before `top`, while they fit (a folded run as its marker).
    fn first_lines(&mut self, top: usize) {
        for i in 0..top {
            if self.kept[i].is_some() {
                continue;
            }
            if self.cost(i) > self.room {
                break;
            }
            self.room -= self.cost(i);
            self.keep(i);
        }
    }

    /// More of the last lines before `top`, up to `last` in all, while they fit.
    fn more_of_the_last(&mut self, top: usize, last: usize) {
        let mut tail = (top..self.kept.len()).filter(|i| !self.is_fold(*i)).count();
        for i in (0..top).rev() {
            if tail >= last {
                break;
            }
            if self.kept[i].is_some() {
                continue;
            }
            if self.cost(i) > self.room {
                break;
            }
            self.room -= self.cost(i);
            tail += usize::from(!self.is_fold(i));
            self.keep(i);
        }
    }
}

/// The last `max` bytes of `line` at a character boundary, after `…` when anything was cut.
pub(super) fn clip_start(line: &str, max: usize) -> String {
    if line.len() <= max {
        return line.to_string();
    }
    let mut start = line.len() - max.saturating_sub(3);
    while !line.is_char_boundary(start) {
        start += 1;
    }
    format!("…{}", &line[start..])
}
