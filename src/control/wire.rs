//! The control protocol on the wire, and its client side.
//!
//! JSON-RPC 2.0, one message per line in each direction, as on stdio: a request is
//! `{"jsonrpc": "2.0", "id": N, "method": "...", "params": {...}}`; its answer has `result`, or an
//! `error` whose `data.code` is the stable word of fugue's one error type (`rpc_error`). The
//! server may also send the notification `changed` at any time after a watched `window` answer.
//! `Client` makes blocking calls (for `fugue ls` and attach's start-up) and can then be split into a
//! sender and a reader thread that hands every incoming line to a channel (for attach's loop).

use crate::error::{Error, ErrorKind, Result};
use crate::jsonrpc::{self, INVALID_PARAMS, RpcError};
use crate::line::{LineError, read_line};
use crate::words::Words;
use crossbeam_channel::Receiver;
use serde_json::{Value, json};
use std::io::{BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

/// The longest request line a server reads.
pub(crate) const MAX_REQUEST: usize = 64 << 10;
/// The longest answer line a client reads: a window of 1000 x 1000 cells with colours fits.
pub(crate) const MAX_ANSWER: usize = 64 << 20;

/// The JSON-RPC code of a request that failed for a reason of fugue's own (`data.code` says
/// which): JSON-RPC leaves -32000 to -32099 to the server.
pub(crate) const FAILED: i64 = -32000;

/// A failed request as JSON-RPC answers it: `invalid_argument` as invalid params, anything else
/// as `FAILED`; either way with the error's stable word in `data.code`, as a tool's error has it.
pub(crate) fn rpc_error(e: &Error) -> RpcError {
    let code = if e.kind() == ErrorKind::InvalidArgument { INVALID_PARAMS } else { FAILED };
    RpcError { code, message: e.message().to_string(), data: Some(json!({"code": e.code()})) }
}

/// An error answer read back: its `data.code` word as the kind (a protocol fault, which has none,
/// as `internal`).
fn error_of(error: &Value) -> Error {
    let word = error["data"]["code"].as_str().unwrap_or("");
    let kind = ErrorKind::from_word(word).unwrap_or(ErrorKind::Internal);
    Error::new(kind, error["message"].as_str().unwrap_or("the server gave no reason"))
}

/// One line from the server, decoded.
#[derive(Debug)]
pub(crate) enum Incoming {
    Answer { id: u64, result: Result<Value> },
    Changed,
}

/// The notification that a watched view changed.
pub(crate) const CHANGED: &str = "changed";

pub(crate) fn decode(line: &[u8]) -> Option<Incoming> {
    let value: Value = serde_json::from_slice(line).ok()?;
    if value.get("method").and_then(Value::as_str) == Some(CHANGED) {
        return Some(Incoming::Changed);
    }
    let id = value.get("id")?.as_u64()?;
    let result = match (value.get("result"), value.get("error")) {
        (Some(result), _) => Ok(result.clone()),
        (None, Some(error)) => Err(error_of(error)),
        (None, None) => return None,
    };
    Some(Incoming::Answer { id, result })
}

/// A connection to one server's control socket.
pub(crate) struct Client {
    reader: BufReader<UnixStream>,
    sender: Sender,
}

/// The writing half of a connection.
pub(crate) struct Sender {
    stream: UnixStream,
    next_id: u64,
}

impl Client {
    pub(crate) fn connect(path: &Path, timeout: Option<Duration>) -> std::io::Result<Client> {
        let stream = UnixStream::connect(path)?;
        stream.set_read_timeout(timeout)?;
        stream.set_write_timeout(timeout)?;
        let reader = BufReader::new(stream.try_clone()?);
        Ok(Client { reader, sender: Sender { stream, next_id: 1 } })
    }

    /// Sends a request and waits for its answer; events that arrive first are dropped.
    pub(crate) fn call(&mut self, method: &str, params: Value) -> Result<Value> {
        let id = self.sender.send(method, params).map_err(lost)?;
        loop {
            let line = match read_line(&mut self.reader, MAX_ANSWER) {
                Ok(Some(line)) => line,
                Ok(None) => {
                    return Err(Error::new(ErrorKind::Io, "the server closed the connection"));
                }
                Err(LineError::TooLong) => {
                    return Err(Error::new(ErrorKind::Io, "answer too long"));
                }
                Err(LineError::Io(e)) => return Err(lost(e)),
            };
            if let Some(Incoming::Answer { id: got, result }) = decode(&line)
                && got == id
            {
                return result;
            }
        }
    }

    /// Splits into the sender and a thread that decodes every line onto the returned channel,
    /// which disconnects when the server goes away. Clears any timeout: a quiet server is fine.
    pub(crate) fn split(self) -> std::io::Result<(Sender, Receiver<Incoming>)> {
        self.sender.stream.set_read_timeout(None)?;
        self.sender.stream.set_write_timeout(None)?;
        let (tx, rx) = crossbeam_channel::bounded(64);
        let mut reader = self.reader;
        crate::threads::spawn(
            "control-reader",
            None,
            Box::new(move || {
                while let Ok(Some(line)) = read_line(&mut reader, MAX_ANSWER) {
                    if let Some(incoming) = decode(&line)
                        && tx.send(incoming).is_err()
                    {
                        break;
                    }
                }
            }),
        )?;
        Ok((self.sender, rx))
    }
}

impl Sender {
    /// Writes one request; returns its id.
    pub(crate) fn send(&mut self, method: &str, params: Value) -> std::io::Result<u64> {
        let id = self.next_id;
        self.next_id += 1;
        let request = jsonrpc::request(&json!(id), method, params);
        let mut line = serde_json::to_vec(&request).unwrap_or_default();
        line.push(b'\n');
        self.stream.write_all(&line)?;
        Ok(id)
    }
}

fn lost(e: std::io::Error) -> Error {
    Error::new(ErrorKind::Io, format!("lost the server: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_errors_and_events_decode() {
        let ok = decode(br#"{"jsonrpc":"2.0","id":3,"result":{"a":1}}"#).unwrap();
        assert!(matches!(ok, Incoming::Answer { id: 3, result: Ok(ref v) } if v["a"] == 1));
        let error = rpc_error(&Error::new(ErrorKind::InvalidState, "no"));
        let line = jsonrpc::error(&json!(4), &error).to_string();
        let Some(Incoming::Answer { id: 4, result: Err(e) }) = decode(line.as_bytes()) else {
            panic!("{line}");
        };
        assert_eq!((e.kind(), e.message()), (ErrorKind::InvalidState, "no"));
        let changed = jsonrpc::notification(CHANGED, Value::Null).to_string();
        assert!(matches!(decode(changed.as_bytes()), Some(Incoming::Changed)));
        assert!(decode(b"not json").is_none());
        assert!(decode(br#"{"jsonrpc":"2.0","id":5}"#).is_none());
    }

    #[test]
    fn a_bad_argument_is_invalid_params_and_every_error_names_its_word() {
        let bad = rpc_error(&Error::invalid("rows 0 is below 1")).to_json();
        assert_eq!(
            bad,
            json!({"code": -32602, "message": "rows 0 is below 1",
                               "data": {"code": "invalid_argument"}})
        );
        let gone = rpc_error(&Error::new(ErrorKind::PaneNotFound, "no pane x")).to_json();
        assert_eq!(
            (&gone["code"], &gone["data"]["code"]),
            (&json!(FAILED), &json!("pane_not_found"))
        );
    }
}
