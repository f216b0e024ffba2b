//! Each tool's parameters, declared once: `params!` makes from one table both the struct its
//! handler gets and the `inputSchema` clients read, so a type, default, range or description
//! cannot say one thing in `tools/list` and do another in the handler.
//!
//! A row is `name: Type = Spec`: the Rust type says how the argument reads (`Param`), the `Spec`
//! its description, range and default. Reading goes through `Args`, whose errors name the
//! argument and what it must be (`argument 'lines' must be between 1 and 1000000, got 0`), and
//! an argument the table does not list is refused by name before the handler runs
//! (`Registered::call`, and `Vec<T>` / nested tables for the objects inside). Every wait a call
//! takes is one `Timeout`: milliseconds, 0 (look once) to a day.

mod kinds;
mod spec;

pub(crate) use kinds::{Name, Ordered, Raw, Timeout};
pub(crate) use spec::{Param, Spec};

use super::args::Args;
use crate::error::{Error, Result};
use serde_json::{Map, Value, json};
use spec::{array_schema, check_length, missing};

/// A tool's arguments as one type, declared with `params!`.
pub(crate) trait Params: Sized {
    /// The argument names, in table order.
    const NAMES: &'static [&'static str];

    /// The JSON Schema of the arguments: an object schema that refuses other keys.
    fn schema() -> Value;

    /// The arguments, each checked; none of them read by name outside the table.
    fn read(args: &Args<'_>) -> Result<Self>;
}

/// A list of objects, each a table of its own (a run's commands), within its row's length.
impl<T: Params> Param for Vec<T> {
    fn read(args: &Args<'_>, key: &str, spec: &Spec) -> Result<Self> {
        let Some(items) = args.array(key)? else { return Err(missing(args, key)) };
        check_length(args, key, spec, items.len())?;
        let at = args.at(key);
        let read = |(i, item): (usize, &Value)| nested::<T>(&format!("{at}[{i}]"), item);
        items.iter().enumerate().map(read).collect()
    }
    fn schema(spec: &Spec) -> Value {
        spec.describe(array_schema(spec, T::schema()))
    }
    fn required(_: &Spec) -> bool {
        true
    }
}

/// An object that is a table of its own (a pipeline's `limits`).
impl<T: Params> Param for Option<T> {
    fn read(args: &Args<'_>, key: &str, _: &Spec) -> Result<Self> {
        args.value(key).map(|value| nested::<T>(&args.at(key), value)).transpose()
    }
    fn schema(spec: &Spec) -> Value {
        spec.describe(T::schema())
    }
}

/// `value`, named `at` in errors, read as table `T`: an object with none but `T`'s keys.
pub(crate) fn nested<T: Params>(at: &str, value: &Value) -> Result<T> {
    let inner = Args::object(at, value)?;
    refuse_unknown(&inner, T::NAMES, None)?;
    T::read(&inner)
}

/// The error naming the arguments `args` has that `known` does not list (by their full names,
/// `commands[0].dir`), and the ones it takes; `tool` names the tool they were given to.
pub(crate) fn refuse_unknown(args: &Args<'_>, known: &[&str], tool: Option<&str>) -> Result<()> {
    let unknown = args.unknown(known);
    if unknown.is_empty() {
        return Ok(());
    }
    let names: Vec<String> = unknown.iter().map(|k| format!("'{}'", args.at(k))).collect();
    let to = tool.map(|tool| format!(" for {tool}")).unwrap_or_default();
    let takes = if known.is_empty() { "no arguments".to_string() } else { known.join(", ") };
    Err(Error::invalid(format!("unknown argument {}{to}; it takes: {takes}", names.join(", "))))
}

/// An object schema of `properties` that refuses other keys: what `params!` declares.
pub(crate) fn object(properties: Vec<(&str, Value)>, required: Vec<&str>) -> Value {
    // Inserted one by one, not collected: collecting into a map sorts the pairs first, and that
    // sort's code is its own copy for this one element type.
    let mut map = Map::new();
    for (name, schema) in properties {
        map.insert(name.to_string(), schema);
    }
    let properties = map;
    let mut schema =
        json!({"type": "object", "properties": properties, "additionalProperties": false});
    if !required.is_empty() {
        schema["required"] = json!(required);
    }
    schema
}

/// Declares a tool's parameters as one table: the struct, its `Params` (schema and reading).
///
/// ```ignore
/// params! {
///     /// `fugue_resize_pane`'s arguments.
///     pub(crate) struct Resize {
///         pane_id: String = Spec::new("Pane id or name"),
///         rows: u16 = Spec::new("Rows").range(2, 1000),
///     }
/// }
/// ```
macro_rules! params {
    ($(#[$meta:meta])* $vis:vis struct $name:ident {
        $($(#[$fmeta:meta])* $field:ident : $ty:ty = $spec:expr),* $(,)?
    }) => {
        $(#[$meta])*
        #[derive(Debug)]
        $vis struct $name {
            $($(#[$fmeta])* pub(crate) $field: $ty,)*
        }

        impl $crate::tool::params::Params for $name {
            const NAMES: &'static [&'static str] = &[$(stringify!($field)),*];

            #[allow(unused_mut, reason = "a table without rows has no properties")]
            fn schema() -> serde_json::Value {
                #[allow(unused_imports, reason = "a table without rows uses no Param")]
                use $crate::tool::params::Param;
                let mut properties = Vec::new();
                let mut required = Vec::new();
                $(
                    let spec: $crate::tool::params::Spec = $spec;
                    properties.push((stringify!($field), <$ty as Param>::schema(&spec)));
                    if <$ty as Param>::required(&spec) {
                        required.push(stringify!($field));
                    }
                )*
                $crate::tool::params::object(properties, required)
            }

            fn read(
                #[allow(unused_variables, reason = "a table without rows reads nothing")]
                args: &$crate::tool::args::Args<'_>,
            ) -> $crate::error::Result<$name> {
                #[allow(unused_imports, reason = "a table without rows uses no Param")]
                use $crate::tool::params::Param;
                Ok($name {
                    $($field: <$ty as Param>::read(args, stringify!($field), &$spec)?,)*
                })
            }
        }
    };
}
pub(crate) use params;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::words::words;
    use std::time::Duration;

    words! {
        enum Side { Left = "left", Right = "right" }
    }

    params! {
        struct Item {
            command: String = Spec::new(""),
            name: Option<Name> = Spec::new("Default item-N"),
        }
    }

    params! {
        struct Sample {
            pane_id: String = Spec::new("Pane id or name"),
            lines: usize = Spec::new("Lines").range(1, 1000).or(100),
            rows: u16 = Spec::new("Rows").range(2, 1000),
            since: Option<u64> = Spec::new("Offset"),
            timeout_ms: Timeout = Spec::new("Give up after this long").or(60_000),
            wait_ms: Option<Timeout> = Spec::new(""),
            submit: bool = Spec::new("Press Enter").or_bool(true),
            side: Side = Spec::new("Which side"),
            items: Vec<Item> = Spec::new("").range(1, 3),
            env: Vec<(String, String)> = Spec::new(""),
        }
    }

    fn read(value: Value) -> Result<Sample> {
        let map = value.as_object().unwrap().clone();
        Sample::read(&Args::new(&map))
    }

    fn least() -> Value {
        json!({"pane_id": "p", "rows": 24, "items": [{"command": "true"}]})
    }

    fn with(key: &str, value: Value) -> Result<Sample> {
        let mut args = least();
        args[key] = value;
        read(args)
    }

    #[test]
    fn the_schema_says_what_the_table_does() {
        let schema = Sample::schema();
        let props = &schema["properties"];
        assert_eq!(schema["required"], json!(["pane_id", "rows", "items"]));
        assert_eq!(schema["additionalProperties"], false);
        assert_eq!(
            props["lines"],
            json!({"type": "integer", "minimum": 1, "maximum": 1000, "default": 100,
                   "description": "Lines"})
        );
        assert_eq!(
            props["since"],
            json!({"type": "integer", "minimum": 0, "description": "Offset"})
        );
        assert_eq!(props["timeout_ms"]["maximum"], Timeout::MAX_MS);
        assert_eq!(
            props["wait_ms"],
            json!({"type": "integer", "minimum": 0, "maximum": 86_400_000})
        );
        assert_eq!(props["submit"]["default"], true);
        assert_eq!(props["side"]["enum"], json!(["left", "right"]));
        assert_eq!(props["side"]["default"], "left");
        assert_eq!(props["items"]["minItems"], 1);
        assert_eq!(props["items"]["maxItems"], 3);
        assert_eq!(props["items"]["items"]["required"], json!(["command"]));
        assert_eq!(Sample::NAMES.len(), props.as_object().unwrap().len());
    }

    #[test]
    fn absent_arguments_take_the_defaults_the_schema_declares() {
        let sample = read(least()).unwrap();
        let props = &Sample::schema()["properties"];
        assert_eq!(json!(sample.lines), props["lines"]["default"]);
        assert_eq!(json!(sample.timeout_ms.0.as_millis() as u64), props["timeout_ms"]["default"]);
        assert_eq!(json!(sample.submit), props["submit"]["default"]);
        assert_eq!(json!(sample.side), props["side"]["default"]);
        assert_eq!((sample.since, sample.wait_ms), (None, None));
        assert_eq!((sample.pane_id.as_str(), sample.rows), ("p", 24));
        assert!(sample.env.is_empty());
        assert_eq!(sample.items[0].command, "true");
        assert_eq!(sample.items[0].name, None);
    }

    #[test]
    fn a_value_past_a_range_is_refused_by_name() {
        let cases = [
            ("lines", json!(0), "argument 'lines' must be between 1 and 1000, got 0"),
            ("lines", json!(1001), "argument 'lines' must be between 1 and 1000, got 1001"),
            ("rows", json!(1), "argument 'rows' must be between 2 and 1000, got 1"),
            (
                "timeout_ms",
                json!(86_400_001),
                "argument 'timeout_ms' must be between 0 and 86400000, got 86400001",
            ),
            ("items", json!([]), "argument 'items' has 0 items; give 1 to 3"),
        ];
        for (key, value, message) in cases {
            assert_eq!(with(key, value).unwrap_err().message(), message);
        }
        assert_eq!(with("timeout_ms", json!(0)).unwrap().timeout_ms, Timeout(Duration::ZERO));
    }

    #[test]
    fn wrong_types_and_missing_arguments_are_named() {
        let message = |r: Result<Sample>| r.unwrap_err().message().to_string();
        assert_eq!(
            message(with("submit", json!("yes"))),
            "argument 'submit' must be true or false, got a string"
        );
        assert_eq!(message(with("side", json!("up"))), "side \"up\" is not one of left, right");
        let mut args = least();
        args.as_object_mut().unwrap().remove("rows");
        assert_eq!(message(read(args)), "argument 'rows' is required");
        assert_eq!(
            message(with("items", json!([{"command": 5}]))),
            "argument 'items[0].command' must be a string, got a number"
        );
        assert_eq!(
            message(with("items", json!([{"command": "x", "cwd": "/"}]))),
            "unknown argument 'items[0].cwd'; it takes: command, name"
        );
        assert_eq!(
            message(with("env", json!({"1X": "y"}))),
            "env: \"1X\" is not a valid variable name (letters, digits and _, not starting with \
             a digit)"
        );
    }
}
