//! Named keys for `fugue_send_input`: what a person presses, as the bytes a terminal sends; and
//! the items of its `keys`, each a key name or `{"text": "…"}` typed as-is in its place.
//!
//! Cursor keys follow the pane's cursor-key mode (normal `ESC [ A`, application `ESC O A`), the way
//! a real terminal does, so that full-screen programs such as `less` or `vim` see the keys they
//! asked for.

use crate::error::{Error, Result};
use serde_json::Value;

/// The bytes for item `index` of `keys`: a string names a key, an object `{"text": "…"}` (and
/// nothing else) is typed as-is. Anything else is an error that names the item.
pub(crate) fn item(index: usize, item: &Value, application_cursor: bool) -> Result<Vec<u8>> {
    match item {
        Value::String(name) => bytes(name, application_cursor),
        Value::Object(fields) if fields.len() == 1 => match fields.get("text") {
            Some(Value::String(text)) => Ok(text.as_bytes().to_vec()),
            _ => Err(bad_item(index, item)),
        },
        _ => Err(bad_item(index, item)),
    }
}

fn bad_item(index: usize, item: &Value) -> Error {
    let mut shown = item.to_string();
    if shown.len() > 60 {
        let mut end = 60;
        while !shown.is_char_boundary(end) {
            end -= 1;
        }
        shown.truncate(end);
        shown.push('…');
    }
    Error::invalid(format!(
        "keys[{index}] is {shown}; each item is a key name or {{\"text\": \"...\"}}"
    ))
}

/// The bytes for one named key. Names are case-insensitive except for `C-x` letters, which accept
/// either case.
pub(crate) fn bytes(name: &str, application_cursor: bool) -> Result<Vec<u8>> {
    let cursor = |c: u8| -> Vec<u8> {
        if application_cursor { vec![0x1b, b'O', c] } else { vec![0x1b, b'[', c] }
    };
    let lower = name.to_ascii_lowercase();
    let bytes = match lower.as_str() {
        "enter" | "return" => b"\r".to_vec(),
        "tab" => b"\t".to_vec(),
        "btab" | "backtab" | "s-tab" => b"\x1b[Z".to_vec(),
        "escape" | "esc" => b"\x1b".to_vec(),
        "backspace" | "bspace" => b"\x7f".to_vec(),
        "space" => b" ".to_vec(),
        "delete" | "dc" => b"\x1b[3~".to_vec(),
        "insert" | "ic" => b"\x1b[2~".to_vec(),
        "up" => cursor(b'A'),
        "down" => cursor(b'B'),
        "right" => cursor(b'C'),
        "left" => cursor(b'D'),
        "home" => cursor(b'H'),
        "end" => cursor(b'F'),
        "pageup" | "ppage" => b"\x1b[5~".to_vec(),
        "pagedown" | "npage" => b"\x1b[6~".to_vec(),
        _ => return function_or_control(name, &lower),
    };
    Ok(bytes)
}

fn function_or_control(name: &str, lower: &str) -> Result<Vec<u8>> {
    if let Some(n) = lower.strip_prefix('f').and_then(|n| n.parse::<u8>().ok()) {
        let seq: &[u8] = match n {
            1 => b"\x1bOP",
            2 => b"\x1bOQ",
            3 => b"\x1bOR",
            4 => b"\x1bOS",
            5 => b"\x1b[15~",
            6 => b"\x1b[17~",
            7 => b"\x1b[18~",
            8 => b"\x1b[19~",
            9 => b"\x1b[20~",
            10 => b"\x1b[21~",
            11 => b"\x1b[23~",
            12 => b"\x1b[24~",
            _ => return Err(unknown(name)),
        };
        return Ok(seq.to_vec());
    }
    let rest = lower.strip_prefix("c-").or_else(|| lower.strip_prefix("ctrl-"));
    if let Some(rest) = rest
        && let [c] = rest.as_bytes()
    {
        let byte = match c {
            b'a'..=b'z' => c - b'a' + 1,
            b'@' | b' ' => 0,
            b'[' => 0x1b,
            b'\\' => 0x1c,
            b']' => 0x1d,
            b'^' => 0x1e,
            b'_' => 0x1f,
            b'?' => 0x7f,
            _ => return Err(unknown(name)),
        };
        return Ok(vec![byte]);
    }
    Err(unknown(name))
}

fn unknown(name: &str) -> Error {
    Error::invalid(format!(
        "unknown key {name:?}; use Enter, Tab, BTab, Escape, Backspace, Space, Delete, Insert, Up, \
         Down, Left, Right, Home, End, PageUp, PageDown, F1-F12, or C-a..C-z, C-[, C-\\, C-], C-^, C-_"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn named_keys() {
        assert_eq!(bytes("Enter", false).unwrap(), b"\r");
        assert_eq!(bytes("C-c", false).unwrap(), [3]);
        assert_eq!(bytes("C-C", false).unwrap(), [3]);
        assert_eq!(bytes("C-\\", false).unwrap(), [0x1c]);
        assert_eq!(bytes("Up", false).unwrap(), b"\x1b[A");
        assert_eq!(bytes("Up", true).unwrap(), b"\x1bOA");
        assert_eq!(bytes("F5", false).unwrap(), b"\x1b[15~");
        assert_eq!(bytes("PageDown", false).unwrap(), b"\x1b[6~");
    }

    #[test]
    fn items_are_key_names_or_text() {
        use serde_json::json;
        assert_eq!(item(0, &json!("Escape"), false).unwrap(), b"\x1b");
        assert_eq!(item(1, &json!({"text": ":wq"}), false).unwrap(), b":wq");
        for bad in [json!({"txt": "x"}), json!({"text": 1}), json!({"text": "x", "y": 1}), json!(5)]
        {
            let err = item(2, &bad, false).unwrap_err();
            assert_eq!(err.code(), "invalid_argument");
            assert!(err.message().starts_with(&format!("keys[2] is {bad}")), "{}", err.message());
        }
        assert!(item(0, &json!("Hyper"), false).unwrap_err().message().contains("\"Hyper\""));
    }

    #[test]
    fn unknown_keys_are_errors_that_list_the_names() {
        let err = bytes("Hyper-x", false).unwrap_err();
        assert_eq!(err.code(), "invalid_argument");
        assert!(err.message().contains("PageUp"));
        assert!(bytes("F13", false).is_err());
        assert!(bytes("C-1", false).is_err());
    }
}
