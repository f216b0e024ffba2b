//! The control protocol on the wire, and its client side.
//!
//! One JSON object per line in each direction. A request is `{"id": N, "op": "...", ...}`; its
//! answer is `{"id": N, "ok": {...}}` or `{"id": N, "error": {"code": "...", "message": "..."}}`.
//! The server may also send `{"event": "changed"}` at any time after a watched `window` answer.
//! `Client` makes blocking calls (for `fugue ls` and attach's start-up) and can then be split into a
//! sender and a reader thread that hands every incoming line to a channel (for attach's loop).

use crate::line::{LineError, read_line};
use crossbeam_channel::Receiver;
use serde_json::{Map, Value, json};
use std::io::{BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

/// The longest request line a server reads.
pub(crate) const MAX_REQUEST: usize = 64 << 10;
/// The longest answer line a client reads: a window of 1000 x 1000 cells with colours fits.
pub(crate) const MAX_ANSWER: usize = 64 << 20;

/// A failed request, as the server answers it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Fault {
    pub(crate) code: String,
    pub(crate) message: String,
}

impl Fault {
    pub(crate) fn new(code: &str, message: impl Into<String>) -> Fault {
        Fault { code: code.to_string(), message: message.into() }
    }
}

impl From<crate::error::Error> for Fault {
    fn from(e: crate::error::Error) -> Fault {
        Fault::new(e.code(), e.message())
    }
}

impl std::fmt::Display for Fault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.message, self.code)
    }
}

/// One line from the server, decoded.
#[derive(Debug)]
pub(crate) enum Incoming {
    Answer { id: u64, result: Result<Value, Fault> },
    Changed,
}

pub(crate) fn decode(line: &[u8]) -> Option<Incoming> {
    let value: Value = serde_json::from_slice(line).ok()?;
    if value.get("event").and_then(Value::as_str) == Some("changed") {
        return Some(Incoming::Changed);
    }
    let id = value.get("id")?.as_u64()?;
    let result = match (value.get("ok"), value.get("error")) {
        (Some(ok), _) => Ok(ok.clone()),
        (None, Some(err)) => Err(Fault::new(
            err.get("code").and_then(Value::as_str).unwrap_or("error"),
            err.get("message").and_then(Value::as_str).unwrap_or("the server gave no reason"),
        )),
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
    pub(crate) fn call(&mut self, op: &str, params: Value) -> Result<Value, Fault> {
        let id = self.sender.send(op, params).map_err(lost)?;
        loop {
            let line = match read_line(&mut self.reader, MAX_ANSWER) {
                Ok(Some(line)) => line,
                Ok(None) => return Err(Fault::new("closed", "the server closed the connection")),
                Err(LineError::TooLong) => return Err(Fault::new("too_long", "answer too long")),
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
        std::thread::Builder::new().name("control-reader".into()).spawn(move || {
            while let Ok(Some(line)) = read_line(&mut reader, MAX_ANSWER) {
                if let Some(incoming) = decode(&line)
                    && tx.send(incoming).is_err()
                {
                    break;
                }
            }
        })?;
        Ok((self.sender, rx))
    }
}

impl Sender {
    /// Writes one request; returns its id.
    pub(crate) fn send(&mut self, op: &str, params: Value) -> std::io::Result<u64> {
        let id = self.next_id;
        self.next_id += 1;
        let mut request = match params {
            Value::Object(map) => map,
            _ => Map::new(),
        };
        request.insert("id".into(), json!(id));
        request.insert("op".into(), json!(op));
        let mut line = serde_json::to_vec(&request).unwrap_or_default();
        line.push(b'\n');
        self.stream.write_all(&line)?;
        Ok(id)
    }
}

fn lost(e: std::io::Error) -> Fault {
    Fault::new("io_error", format!("lost the server: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_errors_and_events_decode() {
        let ok = decode(br#"{"id":3,"ok":{"a":1}}"#).unwrap();
        assert!(matches!(ok, Incoming::Answer { id: 3, result: Ok(ref v) } if v["a"] == 1));
        let err = decode(br#"{"id":4,"error":{"code":"read_only","message":"no"}}"#).unwrap();
        assert!(
            matches!(err, Incoming::Answer { id: 4, result: Err(ref f) } if f.code == "read_only")
        );
        assert!(matches!(decode(br#"{"event":"changed"}"#), Some(Incoming::Changed)));
        assert!(decode(b"not json").is_none());
        assert!(decode(br#"{"id":5}"#).is_none());
    }
}
