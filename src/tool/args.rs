//! Typed access to a tool call's `arguments`, with errors a model can act on.
//!
//! Every getter names the argument and the expected type or range in its error, so a wrong call is
//! answered with exactly what to change. Integers written as `5.0` are accepted; anything else of
//! the wrong type is refused rather than guessed at. Choice arguments are in `choice.rs`.

use crate::error::{Error, Result};
use serde_json::{Map, Value};
use std::path::PathBuf;

pub(crate) struct Args<'a> {
    map: &'a Map<String, Value>,
    /// Where these arguments sit in the call, such as `commands[2].`, so that an error inside an
    /// array element says which element.
    within: String,
}

impl<'a> Args<'a> {
    pub(crate) fn new(map: &'a Map<String, Value>) -> Args<'a> {
        Args { map, within: String::new() }
    }

    /// The full name of argument `key`, as errors show it.
    pub(crate) fn at(&self, key: &str) -> String {
        format!("{}{key}", self.within)
    }

    fn get(&self, key: &str) -> Option<&'a Value> {
        self.map.get(key).filter(|v| !v.is_null())
    }

    /// The raw value of an argument (not null), for nested objects.
    pub(crate) fn value(&self, key: &str) -> Option<&'a Value> {
        self.get(key)
    }

    /// The value of an argument as given, `null` included (where null means something).
    pub(crate) fn raw(&self, key: &str) -> Option<&'a Value> {
        self.map.get(key)
    }

    pub(crate) fn has(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    pub(crate) fn str(&self, key: &str) -> Result<Option<&'a str>> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(other) => Err(wrong_type(&self.at(key), "a string", other)),
        }
    }

    /// A required, non-empty string.
    pub(crate) fn required_str(&self, key: &str) -> Result<&'a str> {
        match self.str(key)? {
            Some(s) if !s.is_empty() => Ok(s),
            Some(_) => {
                Err(Error::invalid(format!("argument '{}' must not be empty", self.at(key))))
            }
            None => Err(Error::invalid(format!("argument '{}' is required", self.at(key)))),
        }
    }

    /// An optional name: non-empty, printable, at most 128 characters.
    pub(crate) fn name(&self, key: &str) -> Result<Option<String>> {
        let Some(name) = self.str(key)? else { return Ok(None) };
        if name.is_empty() || name.len() > 128 || name.chars().any(char::is_control) {
            return Err(Error::invalid(format!(
                "argument '{}' must be 1 to 128 printable characters",
                self.at(key)
            )));
        }
        Ok(Some(name.to_string()))
    }

    pub(crate) fn bool(&self, key: &str) -> Result<Option<bool>> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(other) => Err(wrong_type(&self.at(key), "true or false", other)),
        }
    }

    /// An optional integer within `[min, max]`.
    pub(crate) fn u64(&self, key: &str, min: u64, max: u64) -> Result<Option<u64>> {
        let Some(value) = self.get(key) else { return Ok(None) };
        let n = value
            .as_u64()
            .or_else(|| value.as_f64().and_then(whole_number))
            .ok_or_else(|| wrong_type(&self.at(key), "a non-negative integer", value))?;
        if n < min || n > max {
            return Err(Error::invalid(format!(
                "argument '{}' must be between {min} and {max}, got {n}",
                self.at(key)
            )));
        }
        Ok(Some(n))
    }

    /// An optional integer within `[min, max]`, for sizes such as rows and columns.
    pub(crate) fn u16(&self, key: &str, min: u16, max: u16) -> Result<Option<u16>> {
        let n = self.u64(key, u64::from(min), u64::from(max))?;
        // In range by the check above, so the conversion cannot fail.
        Ok(n.and_then(|n| u16::try_from(n).ok()))
    }

    pub(crate) fn array(&self, key: &str) -> Result<Option<&'a Vec<Value>>> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Array(items)) => Ok(Some(items)),
            Some(other) => Err(wrong_type(&self.at(key), "an array", other)),
        }
    }

    pub(crate) fn strings(&self, key: &str) -> Result<Vec<String>> {
        let Some(items) = self.array(key)? else { return Ok(Vec::new()) };
        items
            .iter()
            .map(|item| match item {
                Value::String(s) => Ok(s.clone()),
                other => Err(wrong_type(&format!("{}[]", self.at(key)), "a string", other)),
            })
            .collect()
    }

    pub(crate) fn path(&self, key: &str) -> Result<Option<PathBuf>> {
        match self.str(key)? {
            Some("") => {
                Err(Error::invalid(format!("argument '{}' must not be empty", self.at(key))))
            }
            Some(s) if s.contains('\0') => {
                Err(Error::invalid(format!("argument '{}' must not contain NUL", self.at(key))))
            }
            Some(s) => Ok(Some(PathBuf::from(s))),
            None => Ok(None),
        }
    }

    /// An environment: an object of string values with valid variable names.
    pub(crate) fn env(&self, key: &str) -> Result<Vec<(String, String)>> {
        let map = match self.get(key) {
            None => return Ok(Vec::new()),
            Some(Value::Object(map)) => map,
            Some(other) => return Err(wrong_type(&self.at(key), "an object of strings", other)),
        };
        map.iter()
            .map(|(name, value)| {
                if !is_env_name(name) {
                    return Err(Error::invalid(format!(
                        "{}: {name:?} is not a valid variable name (letters, digits and _, not \
                         starting with a digit)",
                        self.at(key)
                    )));
                }
                match value {
                    Value::String(s) if !s.contains('\0') => Ok((name.clone(), s.clone())),
                    Value::String(_) => {
                        Err(Error::invalid(format!("{}.{name} contains NUL", self.at(key))))
                    }
                    other => {
                        Err(wrong_type(&format!("{}.{name}", self.at(key)), "a string", other))
                    }
                }
            })
            .collect()
    }

    /// The arguments not named in `known`, for the "unknown argument" error.
    pub(crate) fn unknown<'k>(&self, known: &[&'k str]) -> Vec<&'a str> {
        self.map
            .keys()
            .map(String::as_str)
            .filter(|k| !known.contains(k) && !super::order::is_order_of(k, self.map))
            .collect()
    }

    /// An object argument's entries in the order the caller wrote them (see `order`); in the
    /// map's order when that was not recorded (a call made inside fugue).
    pub(crate) fn in_order(&self, key: &str) -> Result<Option<Vec<(&'a str, &'a Value)>>> {
        let map = match self.get(key) {
            None => return Ok(None),
            Some(Value::Object(map)) => map,
            Some(other) => return Err(wrong_type(&self.at(key), "an object", other)),
        };
        let written = self.map.get(&super::order::order_key(key));
        let keys: Vec<&str> = map.keys().map(String::as_str).collect();
        let ordered: Vec<&str> = match written.and_then(Value::as_array) {
            Some(names) if super::order::lists_exactly(names, &keys) => {
                names.iter().filter_map(Value::as_str).collect()
            }
            _ => keys,
        };
        let entries = ordered.into_iter().filter_map(|k| map.get_key_value(k));
        Ok(Some(entries.map(|(k, v)| (k.as_str(), v)).collect()))
    }

    /// One element of an array argument, as arguments of its own.
    pub(crate) fn object(key: &str, value: &'a Value) -> Result<Args<'a>> {
        match value {
            Value::Object(map) => Ok(Args { map, within: format!("{key}.") }),
            other => Err(wrong_type(key, "an object", other)),
        }
    }
}

/// A float that is a whole, non-negative number within `u64`, such as `5.0`.
fn whole_number(f: f64) -> Option<u64> {
    // 2^64 as a float; below it, a whole non-negative float converts exactly.
    const LIMIT: f64 = 18_446_744_073_709_551_616.0;
    #[allow(clippy::cast_sign_loss, clippy::cast_possible_truncation, reason = "checked above")]
    (f.fract() == 0.0 && (0.0..LIMIT).contains(&f)).then_some(f as u64)
}

pub(crate) fn is_env_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn wrong_type(key: &str, want: &str, got: &Value) -> Error {
    let kind = match got {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    };
    Error::invalid(format!("argument '{key}' must be {want}, got {kind}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn with<T>(value: Value, f: impl FnOnce(Args<'_>) -> T) -> T {
        let map = value.as_object().unwrap().clone();
        f(Args::new(&map))
    }

    #[test]
    fn integers_are_checked() {
        with(json!({"n": 5, "f": 5.0, "x": 5.5, "s": "5", "neg": -1}), |a| {
            assert_eq!(a.u64("n", 1, 10).unwrap(), Some(5));
            assert_eq!(a.u64("f", 1, 10).unwrap(), Some(5));
            assert!(a.u64("x", 1, 10).is_err());
            assert!(a.u64("s", 1, 10).unwrap_err().message().contains("got a string"));
            assert!(a.u64("neg", 0, 10).is_err());
            assert!(a.u64("n", 6, 10).unwrap_err().message().contains("between 6 and 10"));
            assert_eq!(a.u64("missing", 1, 10).unwrap(), None);
        });
    }

    #[test]
    fn env_names_are_validated() {
        with(json!({"env": {"GOOD_1": "x"}}), |a| assert_eq!(a.env("env").unwrap().len(), 1));
        for bad in
            [json!({"env": {"1X": "x"}}), json!({"env": {"A=B": "x"}}), json!({"env": {"A": 1}})]
        {
            with(bad, |a| assert!(a.env("env").is_err()));
        }
    }

    #[test]
    fn errors_inside_an_element_name_the_element() {
        let item = json!({"command": 5, "env": {"1X": "y"}});
        let args = Args::object("commands[2]", &item).unwrap();
        assert!(args.str("command").unwrap_err().message().contains("'commands[2].command'"));
        assert!(args.env("env").unwrap_err().message().starts_with("commands[2].env:"));
    }

    #[test]
    fn null_means_absent() {
        with(json!({"s": null}), |a| assert_eq!(a.str("s").unwrap(), None));
    }
}
