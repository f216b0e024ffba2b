//! Ids that carry their host: `web1:7f3c2a1b` is pane `7f3c2a1b` of host `web1`'s fugue.
//!
//! On the way out, the host is taken off every id argument; on the way back, it is put on every
//! id the answer names (`pane_id`, `session_id`, `window_id`, `pane_ids`, `fired`, and each
//! listed session's, window's and pane's `id`), so the ids a model reads back route themselves.

use super::ssh::check_host;
use crate::error::{Error, Result};
use serde_json::{Map, Value};

/// The arguments that name a pane, window or session.
const ID_ARGS: [&str; 4] = ["pane_id", "session_id", "window_id", "pane_ids"];
/// The keys of an answer whose strings (or arrays of strings) are ids.
const ID_KEYS: [&str; 6] = ["pane_id", "session_id", "window_id", "pane_ids", "fired", "id"];

/// The host an id names, and the id there; `None` for a local id. No local name has a `:` (the
/// registry refuses one), so every key reads one way.
pub(crate) fn split(id: &str) -> Option<(&str, &str)> {
    let (host, rest) = id.split_once(':')?;
    check_host(host).ok().map(|()| (host, rest))
}

/// The one host the id arguments name (`None`: all local), and the arguments with the host taken
/// off. Ids on two hosts in one call are `invalid_argument`.
pub(crate) fn strip(args: &Map<String, Value>) -> Result<(Option<String>, Map<String, Value>)> {
    let mut host: Option<String> = None;
    let mut out = args.clone();
    for key in ID_ARGS {
        match out.get_mut(key) {
            Some(Value::String(id)) => take_host(id, &mut host)?,
            Some(Value::Array(ids)) => {
                for id in ids.iter_mut() {
                    if let Value::String(id) = id {
                        take_host(id, &mut host)?;
                    }
                }
            }
            _ => {}
        }
    }
    Ok((host, out))
}

/// Whether any id argument names a host (cheap: most calls name none).
pub(crate) fn names_a_host(args: &Map<String, Value>) -> bool {
    ID_ARGS.iter().filter_map(|k| args.get(*k)).any(|v| match v {
        Value::String(id) => split(id).is_some(),
        Value::Array(ids) => ids.iter().filter_map(Value::as_str).any(|id| split(id).is_some()),
        _ => false,
    })
}

fn take_host(id: &mut String, host: &mut Option<String>) -> Result<()> {
    let Some((named, rest)) = split(id) else {
        return match host {
            Some(h) => Err(mixed(h, "this fugue")),
            None => Ok(()),
        };
    };
    match host {
        Some(h) if h != named => return Err(mixed(h, named)),
        _ => *host = Some(named.to_string()),
    }
    *id = rest.to_string();
    Ok(())
}

fn mixed(a: &str, b: &str) -> Error {
    Error::invalid(format!("the ids name panes on {a} and on {b}: one call acts on one host"))
}

/// `value` with `host:` put on every id in it.
pub(crate) fn prefix(value: &mut Value, host: &str) {
    match value {
        Value::Object(map) => {
            for (key, inner) in map.iter_mut() {
                if ID_KEYS.contains(&key.as_str()) {
                    put_host(inner, host);
                } else {
                    prefix(inner, host);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|item| prefix(item, host)),
        _ => {}
    }
}

fn put_host(value: &mut Value, host: &str) {
    match value {
        Value::String(id) => *id = format!("{host}:{id}"),
        Value::Array(ids) => ids.iter_mut().for_each(|id| put_host(id, host)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn ids_lose_their_host_going_out_and_get_it_back() {
        let args = json!({"pane_ids": ["web1:ab", "web1:cd"], "mode": "all"});
        let (host, out) = strip(args.as_object().unwrap()).unwrap();
        assert_eq!(host.as_deref(), Some("web1"));
        assert_eq!(out["pane_ids"], json!(["ab", "cd"]));
        let mixed = json!({"pane_ids": ["web1:ab", "web2:cd"]});
        assert!(strip(mixed.as_object().unwrap()).is_err());
        let local = json!({"pane_id": "ab"});
        assert_eq!(strip(local.as_object().unwrap()).unwrap().0, None);
        let mut answer = json!({"pane_id": "ab", "fired": ["ab"], "results": [{"pane_id": "ab"}],
                                "sessions": [{"id": "s", "windows": [{"id": "w"}]}], "cwd": "/x:y"});
        prefix(&mut answer, "web1");
        assert_eq!(answer["pane_id"], "web1:ab");
        assert_eq!(answer["fired"], json!(["web1:ab"]));
        assert_eq!(answer["results"][0]["pane_id"], "web1:ab");
        assert_eq!(answer["sessions"][0]["windows"][0]["id"], "web1:w");
        assert_eq!(answer["cwd"], "/x:y");
    }
}
