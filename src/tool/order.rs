//! The order of an object argument's keys, where it means something: `responses`, whose keys are
//! tried in the order the caller wrote them.
//!
//! serde_json's `Map` sorts its keys, so the order is lost once a message is parsed. `parse`
//! reads a message as `serde_json::from_slice` would, and beside every object under one of the
//! `ORDERED` keys puts the list of its keys as written, under `order_key(key)`: a name no caller
//! writes (it holds a NUL), which travels with the arguments wherever they are copied (a task's
//! call, and `fugue call` through a shared server, which sends the arguments it parsed), and which
//! `Args::in_order` reads and `Args::unknown` passes over. A key list already there is kept when it
//! lists exactly the object's keys (the message was made from arguments parsed here), and replaced
//! by the order written otherwise.

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};
use std::collections::HashSet;
use std::fmt;

/// The arguments whose keys' order is kept.
const ORDERED: &[&str] = &["responses"];

/// The name of the list of `key`'s keys, beside it.
pub(crate) fn order_key(key: &str) -> String {
    format!("{key}\0order")
}

/// Whether `name` is the key list of an argument in `map` (and so no argument of its own).
pub(crate) fn is_order_of(name: &str, map: &Map<String, Value>) -> bool {
    name.strip_suffix("\0order").is_some_and(|key| ORDERED.contains(&key) && map.contains_key(key))
}

/// One JSON message, as `serde_json::from_slice::<Value>` reads it, with the key lists of the
/// `ORDERED` objects beside them.
pub(crate) fn parse(bytes: &[u8]) -> serde_json::Result<Value> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let (value, _) = Seed { keys: false }.deserialize(&mut de)?;
    de.end()?;
    Ok(value)
}

/// Builds a `Value`; with `keys`, an object also gives its keys in the order written.
#[derive(Clone, Copy)]
struct Seed {
    keys: bool,
}

impl<'de> DeserializeSeed<'de> for Seed {
    type Value = (Value, Vec<String>);

    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<Self::Value, D::Error> {
        de.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Seed {
    type Value = (Value, Vec<String>);

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
        Ok((Value::Bool(v), Vec::new()))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        Ok((Value::Number(v.into()), Vec::new()))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        Ok((Value::Number(v.into()), Vec::new()))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        Ok((Number::from_f64(v).map_or(Value::Null, Value::Number), Vec::new()))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok((Value::String(v.to_string()), Vec::new()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        Ok((Value::String(v), Vec::new()))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok((Value::Null, Vec::new()))
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok((Value::Null, Vec::new()))
    }

    fn visit_some<D: Deserializer<'de>>(self, de: D) -> Result<Self::Value, D::Error> {
        de.deserialize_any(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut items = Vec::new();
        while let Some((item, _)) = seq.next_element_seed(Seed { keys: false })? {
            items.push(item);
        }
        Ok((Value::Array(items), Vec::new()))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut object = Map::new();
        let mut keys = Vec::new();
        let mut orders = Vec::new();
        while let Some(key) = map.next_key::<String>()? {
            let keep = ORDERED.contains(&key.as_str());
            let (value, inner) = map.next_value_seed(Seed { keys: keep })?;
            if keep && value.is_object() {
                orders.push((order_key(&key), inner));
            }
            if self.keys && !object.contains_key(&key) {
                keys.push(key.clone());
            }
            object.insert(key, value);
        }
        for (name, inner) in orders {
            let given = object.get(&name).and_then(Value::as_array);
            if !given.is_some_and(|given| lists_exactly(given, &inner)) {
                object.insert(name, Value::Array(inner.into_iter().map(Value::String).collect()));
            }
        }
        Ok((Value::Object(object), keys))
    }
}

/// Whether `names` lists exactly the distinct `keys`, in any order.
pub(crate) fn lists_exactly<K: AsRef<str>>(names: &[Value], keys: &[K]) -> bool {
    let set: HashSet<&str> = names.iter().filter_map(Value::as_str).collect();
    names.len() == keys.len()
        && set.len() == keys.len()
        && keys.iter().all(|k| set.contains(k.as_ref()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn messages_read_as_serde_json_reads_them() {
        for text in [
            r#"{"a": [1, -2, 3.5, 1e400, null, true, "x\u00e9"], "b": {"c": {}}}"#,
            r#"[{"z": 1, "a": 2}]"#,
            r#""text""#,
            r#"18446744073709551615"#,
        ] {
            let ours = parse(text.as_bytes());
            let theirs = serde_json::from_str::<Value>(text);
            assert_eq!(ours.ok(), theirs.ok(), "{text}");
        }
        for bad in ["{", "[1,]", "{} x", r#"{"a": "\ud800"}"#] {
            assert!(parse(bad.as_bytes()).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_keys_of_responses_keep_their_order_wherever_they_are() {
        let text = r#"{"params": {"arguments": {"responses": {"b": "1", "a": "2", "c": ["3"]},
            "commands": [{"responses": {"y": "", "x": ""}}]}}}"#;
        let value = parse(text.as_bytes()).unwrap();
        let arguments = &value["params"]["arguments"];
        assert_eq!(arguments[order_key("responses")], json!(["b", "a", "c"]));
        assert_eq!(arguments["responses"], json!({"a": "2", "b": "1", "c": ["3"]}));
        assert_eq!(arguments["commands"][0][order_key("responses")], json!(["y", "x"]));
        let map = arguments.as_object().unwrap();
        assert!(is_order_of(&order_key("responses"), map));
        assert!(!is_order_of("responses", map));
    }

    #[test]
    fn a_key_list_already_there_is_kept_only_when_it_lists_the_keys() {
        // `fugue call` through a shared server sends the arguments it parsed, keys sorted.
        let resent = r#"{"responses\u0000order": ["b", "a"], "responses": {"a": "", "b": ""}}"#;
        let value = parse(resent.as_bytes()).unwrap();
        assert_eq!(value[order_key("responses")], json!(["b", "a"]));
        let wrong = r#"{"responses\u0000order": ["a", "a"], "responses": {"b": "", "a": ""}}"#;
        let value = parse(wrong.as_bytes()).unwrap();
        assert_eq!(value[order_key("responses")], json!(["b", "a"]));
        let alone = parse(br#"{"responses\u0000order": []}"#).unwrap();
        assert!(!is_order_of(&order_key("responses"), alone.as_object().unwrap()));
    }

    #[test]
    fn only_objects_under_the_ordered_keys_are_listed() {
        let value = parse(br#"{"responses": "text", "env": {"b": "1", "a": "2"}}"#).unwrap();
        assert_eq!(value.as_object().unwrap().len(), 2, "{value}");
    }
}
