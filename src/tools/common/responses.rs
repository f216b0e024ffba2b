//! `responses`: answers given up front to the questions a command's program will ask, so that a
//! dialogue (an installer, `rm -i`, `git add -p`, a passphrase) takes one call.
//!
//! In: the argument (regex keys, in the order written, each with a string or a list of strings;
//! or a list of strings, answered by order: each the next time the program asks, whatever it
//! asks), and, from a waiter whose input watch says the program asks, the pane. The question is the line
//! the program waits on (`tail::question`), or for a full-screen program what its screen shows.
//! The first key whose regex matches it decides: its string answers every time, its list answers
//! successive times and, once used up, answers nothing. The answer and Enter are typed and the
//! waiter goes on waiting. Out: whether an answer was typed, and the list of what was answered
//! (`answered`: each question and key, never the text typed, which is often a secret).
//!
//! The same asking is never answered twice: after an answer, a question counts only in what the
//! program printed since, past the echo of the answer (the line the answer ended), and only once
//! the waiter's input watch knows the answer was read: at once when the kernel says so, else after
//! its quiet period since the answer (`InputWatch::typed_at`).

use crate::error::{Error, Result};
use crate::pane::activity::InputWatch;
use crate::pane::budget::Budget;
use crate::pane::search::compile;
use crate::pane::{Pane, tail};
use crate::tool::params::{Ordered, Spec};
use regex::Regex;
use serde::Serialize;
use serde_json::{Value, json};
use std::time::Instant;

/// The most keys one `responses` takes.
pub(crate) const MAX_KEYS: usize = 64;
/// The longest answer, in bytes.
pub(crate) const MAX_ANSWER_BYTES: usize = 4 << 10;
/// The most answers one list holds.
pub(crate) const MAX_LIST: usize = 256;
/// How many lines printed before the question's line (since the program last read) keys are
/// tried against too: a menu's title above its `#?` prompt.
const LINES_BEFORE: usize = 3;
/// How much of the end of the output is looked at for the question's lines.
const QUESTION_LINES: usize = 6;
const QUESTION_BYTES: usize = 4 << 10;
/// How far past an answer the end of its echoed line is looked for (the answer, at most 4 KiB,
/// and what a line editor draws around it).
const ECHO_BYTES: u64 = 64 << 10;
/// The longest question an `answered` entry shows (its end, where a question ends).
const SHOWN_QUESTION_BYTES: usize = 200;

/// The row of `responses` as fugue_exec declares it, described there once.
pub(crate) const RESPONSES: Spec = Spec::new(
    "{question regex: answer or [answers] in turn}, or [answers] by order: typed + Enter when the \
     program asks (first matching key). answered: [{question, key}]",
)
.shaped(schema);

/// The row of `responses` in the other tools, which refer to fugue_exec's.
pub(crate) const AS_EXECS: Spec = Spec::new("As fugue_exec's");

/// The shape of `responses` in fugue_exec's schema.
fn schema() -> Value {
    let answer = json!({"type": ["string", "array"], "items": {"type": "string"}});
    json!({"type": ["object", "array"], "additionalProperties": answer, "maxProperties": MAX_KEYS})
}

/// One key: its regex and its answers.
struct Rule {
    key: String,
    regex: Regex,
    answers: Vec<String>,
    /// A string: it answers every time.
    every_time: bool,
    used: usize,
    /// The list form of `responses`: the rule answers any question, and names an answer by its
    /// place in the list (`#2`), not by a key.
    by_order: bool,
}

/// A `responses` argument, checked.
pub(crate) struct Responses {
    rules: Vec<Rule>,
}

/// What a question was answered with: the key, the answer, and the line asked.
struct Hit {
    key: String,
    answer: String,
    line: String,
}

impl Responses {
    /// The `responses` argument, checked before anything runs: an invalid key is `invalid_regex`,
    /// a wrong value `invalid_argument` naming the key.
    /// Its keys are compiled within `limit` bytes (`FUGUE_MAX_REGEX_BYTES`).
    pub(crate) fn parse(asked: Option<&Ordered>, limit: usize) -> Result<Option<Responses>> {
        let Some(Ordered { at, entries, list }) = asked else { return Ok(None) };
        if let Some(list) = list {
            // A dialogue by order: each answer for the next question, whatever it asks.
            let rule = Rule { by_order: true, ..Rule::parse(at, "", list, limit)? };
            return Ok(Some(Responses { rules: vec![rule] }));
        }
        if entries.len() > MAX_KEYS {
            return Err(Error::invalid(format!(
                "argument '{at}' has {} keys; the limit is {MAX_KEYS}",
                entries.len()
            )));
        }
        let rules = entries
            .iter()
            .map(|(key, value)| Rule::parse(at, key, value, limit))
            .collect::<Result<Vec<_>>>()?;
        Ok(Some(Responses { rules }))
    }

    /// The answer to the question in `texts`, nearest first: the question's line and the lines
    /// printed with it (`asked_lines`), or a full-screen program's screen. The first key that
    /// matches any of them decides, and the nearest it matches is the question; its list may be
    /// used up.
    fn take(&mut self, texts: &[String]) -> Option<Hit> {
        let (rule, text) = self.rules.iter_mut().find_map(|rule| {
            let text = texts.iter().find(|text| rule.regex.is_match(text))?;
            Some((rule, text))
        })?;
        let index = if rule.every_time { 0 } else { rule.used };
        let answer = rule.answers.get(index)?.clone();
        rule.used += 1;
        let key = if rule.by_order { format!("#{}", rule.used) } else { rule.key.clone() };
        let start = rule.regex.find(text).map_or(0, |m| m.start());
        let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
        let line_end = text[start..].find('\n').map_or(text.len(), |i| start + i);
        let line = text[line_start..line_end].trim().to_string();
        Some(Hit { key, answer, line })
    }
}

impl Rule {
    fn parse(at: &str, key: &str, value: &Value, limit: usize) -> Result<Rule> {
        let regex = compile(key, limit)
            .map_err(|e| Error::new(e.kind(), format!("argument '{at}': {}", e.message())))?;
        let wrong = |what: &str| Error::invalid(format!("argument '{at}' key {key:?}: {what}"));
        let (answers, every_time) = match value {
            Value::String(answer) => (vec![answer.clone()], true),
            Value::Array(items) if items.is_empty() => {
                return Err(wrong(
                    "an empty list answers nothing; give a string or a list of strings",
                ));
            }
            Value::Array(items) if items.len() > MAX_LIST => {
                return Err(wrong(&format!(
                    "the list has {} answers; the limit is {MAX_LIST}",
                    items.len()
                )));
            }
            Value::Array(items) => {
                let answers = items
                    .iter()
                    .map(|item| item.as_str().map(str::to_string))
                    .collect::<Option<Vec<_>>>()
                    .ok_or_else(|| wrong("every answer in the list must be a string"))?;
                (answers, false)
            }
            _ => return Err(wrong("the answer must be a string or a list of strings")),
        };
        for answer in &answers {
            if answer.len() > MAX_ANSWER_BYTES {
                return Err(wrong(&format!(
                    "an answer is {} bytes; the limit is {MAX_ANSWER_BYTES}",
                    answer.len()
                )));
            }
            if answer.contains(['\r', '\n', '\0']) {
                return Err(wrong("an answer is one line (fugue presses Enter after it)"));
            }
        }
        Ok(Rule { key: key.to_string(), regex, answers, every_time, used: 0, by_order: false })
    }
}

/// One entry of `answered`: the question and the key that answered it.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct Answered {
    pub(crate) question: String,
    pub(crate) key: String,
}

/// The last answer typed: where, when, and whether the program shows what is typed.
struct TypedAnswer {
    at: u64,
    when: Instant,
    shown: bool,
}

/// The responses of one wait on one pane, as they are used.
pub(crate) struct Responder {
    responses: Responses,
    /// The raw output offset where the command's output begins: no question comes before it.
    from: u64,
    last: Option<TypedAnswer>,
    answered: Vec<Answered>,
}

impl Responder {
    pub(crate) fn new(responses: Responses, from: u64) -> Responder {
        Responder { responses, from, last: None, answered: Vec::new() }
    }

    /// The command's output begins at `from` (once its begin mark is found).
    pub(crate) fn begins_at(&mut self, from: u64) {
        self.from = self.from.max(from);
    }

    /// When the last answer was typed: it may still sit unread, and the input watch knows it.
    pub(crate) fn answered_at(&self) -> Option<Instant> {
        self.last.as_ref().map(|t| t.when)
    }

    /// The program `watch` found asking: types the answer and Enter if a key matches its
    /// question. True when it did; false leaves the question to the caller (`input`). An
    /// interactive shell at its own prompt is never answered: no program reads there.
    pub(crate) fn reply(&mut self, pane: &Pane, watch: &InputWatch) -> bool {
        if !watch.answerable() {
            return false;
        }
        let Some(question) = self.question(pane) else { return false };
        let Some(hit) = self.responses.take(&question) else { return false };
        let shown = pane.shows_typing();
        // Enter in a write of its own, as fugue_send_input's submit: a key press, not a paste.
        let Ok((at, _)) = pane.send(&[hit.answer.as_bytes(), b"\r"]) else { return false };
        self.last = Some(TypedAnswer { at, when: Instant::now(), shown });
        self.answered.push(Answered { question: clip_front(&hit.line), key: hit.key });
        true
    }

    /// The questions answered so far, as an answer's `answered`.
    pub(crate) fn answered(&self) -> Vec<Answered> {
        self.answered.clone()
    }

    /// The question the program asks now, as `take` tries it: the last line it printed since the
    /// command began or, after an answer, since that answer's line, with up to `LINES_BEFORE`
    /// lines printed before it since then; a full-screen program's screen once it has drawn
    /// since the answer. None when there is nothing new to read.
    fn question(&self, pane: &Pane) -> Option<Vec<String>> {
        let end = pane.output().end();
        let full_screen = pane.output().with(|s| s.alt.active());
        let from = match &self.last {
            None => self.from,
            Some(typed) if end <= typed.at => return None,
            Some(_) if full_screen => end,
            Some(typed) if !typed.shown => typed.at,
            // The answer's echo (or the line editor's) ends its line: what follows is new.
            Some(typed) => {
                let to = end.min(typed.at + ECHO_BYTES);
                let (bytes, start) = pane.output().with(|s| s.ring.copy(typed.at, to));
                start + bytes.iter().position(|b| *b == b'\n')? as u64 + 1
            }
        };
        let budget = Budget::tail(QUESTION_BYTES, QUESTION_LINES, None);
        let shown = tail::shown_since(pane, from, &budget);
        if shown.alternate {
            return Some(vec![shown.text().to_string()]);
        }
        let lines = asked_lines(shown.text());
        (!lines.is_empty()).then_some(lines)
    }
}

/// The question's line (the last that holds anything but blanks) and up to `LINES_BEFORE` lines
/// before it, nearest first, from a tail of the output; the tail's gap markers are not lines the
/// program printed.
fn asked_lines(text: &str) -> Vec<String> {
    let printed: Vec<&str> =
        text.lines().map(str::trim_end).filter(|l| !l.trim().is_empty() && !is_marker(l)).collect();
    let from = printed.len().saturating_sub(1 + LINES_BEFORE);
    printed[from..].iter().rev().map(|l| (*l).to_string()).collect()
}

/// Whether `line` is a budget's gap note or fold marker, `[… 12 lines, no errors or warnings]`,
/// `[… 9 more like this]`.
fn is_marker(line: &str) -> bool {
    line.strip_prefix("[… ")
        .and_then(|rest| rest.strip_suffix(']'))
        .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit()))
}

/// The end of a long question, where the question is.
fn clip_front(line: &str) -> String {
    if line.len() <= SHOWN_QUESTION_BYTES {
        return line.to_string();
    }
    let mut start = line.len() - SHOWN_QUESTION_BYTES;
    while !line.is_char_boundary(start) {
        start += 1;
    }
    format!("…{}", &line[start..])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::args::Args;
    use crate::tool::params::Param;
    use serde_json::Map;

    /// `responses` in `map`, read as a tool's table reads it.
    fn read(map: &Map<String, Value>) -> Result<Option<Responses>> {
        let asked = Option::<Ordered>::read(&Args::new(map), "responses", &AS_EXECS)?;
        Responses::parse(asked.as_ref(), 1 << 20)
    }

    fn parse(value: Value) -> Result<Option<Responses>> {
        read(json!({ "responses": value }).as_object().unwrap())
    }

    fn refused(value: Value) -> Error {
        parse(value).err().expect("refused")
    }

    fn answer(responses: &mut Responses, question: &str) -> Option<(String, String)> {
        responses.take(&[question.to_string()]).map(|hit| (hit.key, hit.answer))
    }

    #[test]
    fn a_string_answers_every_time_and_a_list_once_each() {
        let mut r = parse(json!({"Name": "fugue", "Again\\?": ["y", "n"]})).unwrap().unwrap();
        for _ in 0..3 {
            assert_eq!(answer(&mut r, "Name:"), Some(("Name".into(), "fugue".into())));
        }
        assert_eq!(answer(&mut r, "Again?").unwrap().1, "y");
        assert_eq!(answer(&mut r, "Again?").unwrap().1, "n");
        assert_eq!(answer(&mut r, "Again?"), None, "used up: no answer");
        assert_eq!(answer(&mut r, "Something else"), None);
    }

    #[test]
    fn a_list_answers_by_order_whatever_is_asked_and_names_no_answer() {
        let mut r = parse(json!(["break 11", "continue"])).unwrap().unwrap();
        let first = r.take(&["(Pdb)".to_string()]).unwrap();
        assert_eq!((first.key.as_str(), first.answer.as_str()), ("#1", "break 11"));
        let second = r.take(&["Anything at all?".to_string()]).unwrap();
        assert_eq!((second.key.as_str(), second.answer.as_str()), ("#2", "continue"));
        assert!(r.take(&["(Pdb)".to_string()]).is_none(), "used up: the question is the agent's");
        assert_eq!(refused(json!([])).code(), "invalid_argument");
        assert!(refused(json!(["a", 2])).message().contains("string"));
        assert!(refused(json!(vec!["y"; MAX_LIST + 1])).message().contains("limit is 256"));
    }

    #[test]
    fn the_first_key_that_matches_decides() {
        let map =
            crate::tool::order::parse(br#"{"responses": {"Overwrite": ["y"], "O": "other"}}"#)
                .unwrap();
        let map = map.as_object().unwrap().clone();
        let mut r = read(&map).unwrap().unwrap();
        assert_eq!(answer(&mut r, "Overwrite x?").unwrap().0, "Overwrite", "the order written");
        assert_eq!(answer(&mut r, "Overwrite x?"), None, "its list decides, used up");
        assert_eq!(answer(&mut r, "Other?").unwrap().1, "other");
    }

    #[test]
    fn a_full_screen_question_is_the_line_that_matched() {
        let mut r = parse(json!({"Save\\?": "y"})).unwrap().unwrap();
        let hit = r.take(&["  Editor  \n  Save? (y/n)  \n".to_string()]).unwrap();
        assert_eq!(hit.line, "Save? (y/n)");
    }

    #[test]
    fn a_key_is_tried_against_the_lines_printed_with_the_question() {
        let text = "[… 40 lines]\nold line\nChoose a port:\n1) 80\n2) 443\n#? \n";
        let lines = asked_lines(text);
        assert_eq!(lines, ["#?", "2) 443", "1) 80", "Choose a port:"], "nearest first, no more");
        let mut r = parse(json!({"(?i)port": "2"})).unwrap().unwrap();
        let hit = r.take(&lines).unwrap();
        assert_eq!((hit.key.as_str(), hit.line.as_str()), ("(?i)port", "Choose a port:"));
        assert!(asked_lines("\n  \n").is_empty());
    }

    #[test]
    fn wrong_responses_are_refused_naming_the_key() {
        for (bad, code, needle) in [
            (json!("y"), "invalid_argument", "must be an object"),
            (json!({"(": "y"}), "invalid_regex", "invalid pattern"),
            (json!({"Name": 5}), "invalid_argument", "\"Name\""),
            (json!({"Name": []}), "invalid_argument", "empty list"),
            (json!({"Name": ["a", 1]}), "invalid_argument", "\"Name\""),
            (json!({"Name": "a\nb"}), "invalid_argument", "one line"),
        ] {
            let err = parse(bad.clone()).err().unwrap_or_else(|| panic!("{bad} should fail"));
            assert_eq!(err.code(), code, "{bad}: {}", err.message());
            assert!(err.message().contains(needle), "{bad}: {}", err.message());
        }
    }

    #[test]
    fn every_limit_holds_one_past_it() {
        let keys: Map<String, Value> =
            (0..MAX_KEYS).map(|i| (format!("q{i}"), json!("y"))).collect();
        assert!(parse(Value::Object(keys.clone())).is_ok());
        let mut more = keys;
        more.insert("one more".into(), json!("y"));
        assert!(refused(Value::Object(more)).message().contains("limit is 64"));
        assert!(parse(json!({"q": "x".repeat(MAX_ANSWER_BYTES)})).is_ok());
        let long = refused(json!({"q": "x".repeat(MAX_ANSWER_BYTES + 1)}));
        assert!(long.message().contains("limit is 4096"), "{}", long.message());
        assert!(parse(json!({"q": vec!["y"; MAX_LIST]})).is_ok());
        let list = refused(json!({"q": vec!["y"; MAX_LIST + 1]}));
        assert!(list.message().contains("limit is 256"), "{}", list.message());
    }

    #[test]
    fn long_questions_keep_their_end() {
        let line = format!("{}Continue? [y/N]", "é".repeat(200));
        let shown = clip_front(&line);
        assert!(shown.ends_with("Continue? [y/N]") && shown.len() <= SHOWN_QUESTION_BYTES + 3);
    }
}
