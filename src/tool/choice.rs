//! Choice arguments: an argument that takes one of a few words, declared once as an enum with
//! `choice_enum!`. Its wire names give both the schema entry and the parse, so the two lists can
//! never differ, as ripgrep's flags do. The names are the contract: each variant carries its own.
//! The same enums name the words an answer reports (a command's `status`): serialized by those
//! names, and listed by them in the tool's output schema (`Choice::words`).

use super::args::Args;
use crate::error::{Error, Result};
use serde_json::Value;

/// An enum declared with `choice_enum!`. The default, where there is one, is the first value.
pub(crate) trait Choice: Copy + PartialEq + 'static {
    /// Every value with its name on the wire, the default first.
    const VALUES: &'static [(&'static str, Self)];

    /// The names, in order.
    fn names() -> Vec<&'static str> {
        Self::VALUES.iter().map(|(name, _)| *name).collect()
    }

    /// The value's name on the wire.
    fn name(self) -> &'static str {
        Self::VALUES.iter().find(|(_, value)| *value == self).map_or("", |(name, _)| *name)
    }

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
        let found = Self::VALUES.iter().find(|(name, _)| *name == word);
        found.map(|(_, value)| *value).ok_or_else(|| {
            Error::invalid(format!(
                "{} {word:?} is not one of {}",
                args.at(key),
                Self::names().join(", ")
            ))
        })
    }
}

/// Declares a `Choice` enum: each variant with its name on the wire, the default first.
///
/// ```ignore
/// choice_enum! {
///     /// What `fugue_get_output` returns.
///     pub(crate) enum Format { Text = "text", Raw = "raw", Screen = "screen" }
/// }
/// ```
macro_rules! choice_enum {
    ($(#[$meta:meta])* $vis:vis enum $name:ident {
        $($(#[$vmeta:meta])* $variant:ident = $wire:literal),+ $(,)?
    }) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        $vis enum $name {
            $($(#[$vmeta])* $variant),+
        }

        impl $crate::tool::choice::Choice for $name {
            const VALUES: &'static [(&'static str, $name)] = &[$(($wire, $name::$variant)),+];
        }

        /// Serialized by its wire name, as an answer reports it.
        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str($crate::tool::choice::Choice::name(*self))
            }
        }
    };
}
pub(crate) use choice_enum;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    choice_enum! {
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
