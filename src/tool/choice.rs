//! Choice arguments: an argument that takes one of a few words, declared once as an enum with
//! `words!` (`crate::words`). Its wire names give both the schema entry and the parse, so the two
//! lists can never differ, as ripgrep's flags do. The same enums name the words an answer reports
//! (a command's `status`), listed by them in the tool's output schema (`Choice::words`).

use super::args::Args;
use crate::error::{Error, Result};
use crate::words::Words;
use serde_json::Value;

/// A `Words` enum taken as a tool's argument or listed in its output schema. The default, where
/// there is one, is the first value.
pub(crate) trait Choice: Words {
    /// The schema of an answer's field that holds one of these words (`enum` alone: its values
    /// say the type, and `tools/list` is paid for in every agent's context).
    fn words() -> Value {
        serde_json::json!({"enum": Self::names()})
    }

    /// The schema entry: a string of these names, the first as the default.
    fn schema(description: &str) -> Value {
        let names = Self::names();
        serde_json::json!({"type": "string", "enum": names, "description": description,
                           "default": names[0]})
    }

    /// The argument `key`, its default (the first value) when absent.
    fn parse(args: &Args<'_>, key: &str) -> Result<Self> {
        match args.str(key)? {
            None => Ok(Self::VALUES[0].1),
            Some(word) => Self::pick(args, key, word),
        }
    }

    /// The argument `key`, which has no default.
    fn required(args: &Args<'_>, key: &str) -> Result<Self> {
        Self::pick(args, key, args.required_str(key)?)
    }

    /// The value named `word`, or the error that lists the names.
    fn pick(args: &Args<'_>, key: &str, word: &str) -> Result<Self> {
        Self::from_word(word)
            .ok_or_else(|| Error::invalid(format!("{} {}", args.at(key), Self::not_one_of(word))))
    }
}

impl<T: Words> Choice for T {}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    crate::words::words! {
        enum Fruit { Apple = "apple", Pear = "pear" }
    }

    #[test]
    fn a_choice_is_one_list_for_schema_and_parse() {
        assert_eq!(Fruit::schema("Which")["enum"], json!(["apple", "pear"]));
        assert_eq!(Fruit::schema("Which")["default"], "apple");
        let map = json!({"f": "pear", "bad": "plum"}).as_object().unwrap().clone();
        let args = Args::new(&map);
        assert_eq!(Fruit::parse(&args, "f").unwrap(), Fruit::Pear);
        assert_eq!(Fruit::parse(&args, "none").unwrap(), Fruit::Apple);
        assert!(Fruit::required(&args, "none").is_err());
        let err = Fruit::parse(&args, "bad").unwrap_err();
        assert_eq!(err.message(), "bad \"plum\" is not one of apple, pear");
    }

    #[test]
    fn an_answer_says_a_choice_by_the_name_its_schema_lists() {
        assert_eq!(serde_json::to_value(Fruit::Pear).unwrap(), json!("pear"));
        assert_eq!(Fruit::words(), json!({"enum": ["apple", "pear"]}));
    }
}
