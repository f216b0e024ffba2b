//! The JSON-RPC line loop: stdin in, stdout out.
//!
//! One reader thread reads lines (capped in size), decodes them and answers protocol faults itself.
//! Cheap methods are answered on the spot; tool calls go to a bounded pool of workers, each
//! registered as a `Flight` so `notifications/cancelled` can stop it. One `Writer` puts each message
//! on stdout as a whole line. A flight's `closed` flag is taken under its lock before anything is
//! written for it, so after a cancel nothing more — no progress, no response — goes out for that id.
//! A flight may also ask the client something (a task's question, as `elicitation/create`): the
//! request goes out with an id of fugue's own, and the client's response, read like any line, is
//! handed back to the flight that waits for it.

use crate::cancel::Cancel;
use crate::jsonrpc::{
    self, INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR, RpcError,
};
use crate::line::{self, Next};
use crate::mcp::{Mcp, Method, Request, Route};
use crate::tool::call::Progress;
use crossbeam_channel::{Receiver, Sender};
use parking_lot::{Condvar, Mutex};
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Why the server stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StopCause {
    /// stdin reached end of file: the client is done.
    Eof,
    /// SIGINT, SIGTERM or SIGHUP.
    Signal,
    /// stdout is gone: nobody can hear us any more.
    BrokenPipe,
}

/// Writes whole lines to stdout under one lock.
pub(crate) struct Writer {
    out: Mutex<Box<dyn Write + Send>>,
    stop: Sender<StopCause>,
}

impl Writer {
    pub(crate) fn new(out: Box<dyn Write + Send>, stop: Sender<StopCause>) -> Writer {
        Writer { out: Mutex::new(out), stop }
    }

    pub(crate) fn send(&self, message: &Value) {
        let mut line = serde_json::to_vec(message).unwrap_or_default();
        line.push(b'\n');
        let mut out = self.out.lock();
        if out.write_all(&line).and_then(|_| out.flush()).is_err() {
            let _ = self.stop.try_send(StopCause::BrokenPipe);
        }
    }
}

/// One tool call in progress.
struct Flight {
    cancel: Cancel,
    /// Set once the call is answered or cancelled; checked under this lock before every write.
    closed: Mutex<bool>,
}

/// The calls in flight, and the answers still being written.
#[derive(Default)]
struct Flights {
    calls: HashMap<String, Arc<Flight>>,
    /// Calls out of `calls` whose answer is being written. They keep their slot: when a client
    /// stops reading stdout, a finished worker per unread call would otherwise pile up behind
    /// the writer, without bound.
    answering: usize,
}

/// One JSON-RPC connection's loop: its calls in flight, its writer, its requests to the client.
/// (A "server" in fugue is a process serving MCP; `server/` is the shared kind.)
pub(crate) struct Connection {
    mcp: Arc<Mcp>,
    limits: Bounds,
    writer: Arc<Writer>,
    flights: Mutex<Flights>,
    /// Signalled when an answer has been written and its slot is free.
    answered: Condvar,
    workers: Workers,
    /// Requests fugue sent the client, by id, and where their responses go.
    asked: Mutex<HashMap<String, Sender<Value>>>,
    next_ask: AtomicU64,
}

/// A connection's limits, given at start-up (from `Config`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Bounds {
    /// The longest line read (`FUGUE_MAX_LINE_BYTES`).
    pub(crate) max_line_bytes: usize,
    /// Tool calls running at once (`FUGUE_MAX_CALLS`).
    pub(crate) max_calls: usize,
}

impl Bounds {
    /// The limits `config` sets.
    pub(crate) fn of(config: &crate::config::Config) -> Bounds {
        Bounds { max_line_bytes: config.max_line_bytes, max_calls: config.max_calls }
    }
}

impl Connection {
    pub(crate) fn new(mcp: Arc<Mcp>, writer: Arc<Writer>, limits: Bounds) -> Arc<Connection> {
        let push = writer.clone();
        mcp.set_push(Arc::new(move |message| push.send(&message)));
        Arc::new(Connection {
            mcp,
            limits,
            writer,
            flights: Mutex::new(Flights::default()),
            answered: Condvar::new(),
            workers: Workers::default(),
            asked: Mutex::new(HashMap::new()),
            next_ask: AtomicU64::new(1),
        })
    }

    /// Reads requests until end of file, then reports `StopCause::Eof`.
    pub(crate) fn read_loop(self: &Arc<Connection>, input: impl BufRead, stop: Sender<StopCause>) {
        let mut input = input;
        loop {
            match line::next_line(&mut input, self.limits.max_line_bytes) {
                Next::End => break,
                Next::TooLong(n) => {
                    self.reply_error(&Value::Null, too_long(n, self.limits.max_line_bytes));
                }
                Next::Line(line) => self.dispatch_line(&line),
            }
        }
        let _ = stop.try_send(StopCause::Eof);
    }

    /// Ends every call in flight: nothing more is written for any of them. Never waits on a call
    /// that is writing to a full stdout (that one write is the last), so a stop always gets
    /// through.
    pub(crate) fn cancel_all(&self) {
        let flights: Vec<_> = self.flights.lock().calls.drain().map(|(_, f)| f).collect();
        for flight in flights {
            if let Some(mut closed) = flight.closed.try_lock() {
                *closed = true;
            }
            flight.cancel.cancel();
        }
    }

    fn dispatch_line(self: &Arc<Connection>, line: &[u8]) {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        // The order of `responses` keys is kept beside them (see `tool::order`).
        match crate::tool::order::parse(line) {
            Ok(Value::Object(message)) => self.dispatch(message),
            Ok(Value::Array(_)) => self.reply_error(
                &Value::Null,
                RpcError::new(INVALID_REQUEST, "Invalid Request: batches are not supported"),
            ),
            Ok(_) => self.reply_error(
                &Value::Null,
                RpcError::new(INVALID_REQUEST, "Invalid Request: a message is a JSON object"),
            ),
            Err(e) => self
                .reply_error(&Value::Null, RpcError::new(PARSE_ERROR, format!("Parse error: {e}"))),
        }
    }

    fn dispatch(self: &Arc<Connection>, mut message: Map<String, Value>) {
        let id = message.remove("id");
        let method = match message.get("method") {
            Some(Value::String(m)) => Method::parse(m),
            // A response: to a request fugue sent, or to one it never sent (dropped).
            None if id.is_some()
                && (message.contains_key("result") || message.contains_key("error")) =>
            {
                let waiter = id.as_ref().and_then(|id| self.asked.lock().remove(&key(id)));
                if let Some(waiter) = waiter {
                    let _ = waiter.try_send(Value::Object(message));
                }
                return;
            }
            _ => {
                if let Some(id) = id.clone().filter(is_valid_id) {
                    self.reply_error(
                        &id,
                        RpcError::new(INVALID_REQUEST, "Invalid Request: no method"),
                    );
                } else if id.is_some() {
                    self.reply_error(
                        &Value::Null,
                        RpcError::new(INVALID_REQUEST, "Invalid Request"),
                    );
                }
                return;
            }
        };
        let params = match message.remove("params") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(p)) => p,
            Some(_) => {
                if let Some(id) = id.clone().filter(is_valid_id) {
                    self.reply_error(
                        &id,
                        RpcError::new(INVALID_PARAMS, "params must be an object"),
                    );
                }
                return;
            }
        };
        let Some(id) = id else {
            self.notification(&method, &params);
            return;
        };
        if !is_valid_id(&id) {
            let err =
                RpcError::new(INVALID_REQUEST, "Invalid Request: id must be a string or a number");
            self.reply_error(&Value::Null, err);
            return;
        }
        if message.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
            self.reply_error(
                &id,
                RpcError::new(INVALID_REQUEST, "Invalid Request: jsonrpc must be \"2.0\""),
            );
            return;
        }
        match Mcp::route(&method) {
            Route::Inline => self.run_inline(&id, &method, &params),
            Route::Worker => self.start_flight(id, method, params),
        }
    }

    fn notification(&self, method: &Method, params: &Map<String, Value>) {
        if *method != Method::Cancelled {
            return; // initialized, progress from a client, and unknown ones: nothing to do
        }
        let Some(id) = params.get("requestId") else { return };
        // Another fugue stopping a task of its own there: the work stops, and is answered when it
        // has (`remote::STOP_WORK`).
        let meta = params.get("_meta").and_then(|m| m.get(crate::remote::STOP_WORK));
        if meta == Some(&Value::Bool(true)) {
            if let Some(flight) = self.flights.lock().calls.get(&key(id)) {
                flight.cancel.stop_work();
            }
            return;
        }
        let flight = self.flights.lock().calls.remove(&key(id));
        if let Some(flight) = flight {
            let mut closed = flight.closed.lock();
            if !*closed {
                *closed = true;
                flight.cancel.cancel();
            }
        }
    }

    fn run_inline(&self, id: &Value, method: &Method, params: &Map<String, Value>) {
        let cancel = Cancel::default();
        let progress = Progress::none();
        let notify = |message: Value| self.writer.send(&message);
        let ask = |_: &str, _: Value| None;
        let req = Request {
            id,
            method,
            params,
            cancel: &cancel,
            progress: &progress,
            notify: &notify,
            ask: &ask,
        };
        self.reply(id, self.mcp.handle(&req));
    }

    fn start_flight(self: &Arc<Connection>, id: Value, method: Method, params: Map<String, Value>) {
        let flight = Arc::new(Flight { cancel: Cancel::default(), closed: Mutex::new(false) });
        {
            let mut flights = self.flights.lock();
            // Slots held only by answers being written come free when the writes end: wait for
            // them rather than refuse a call the client rightly thinks has room. While stdout is
            // full, this is where the reader waits, and stops reading stdin: backpressure.
            let max = self.limits.max_calls;
            while flights.calls.len() < max && flights.calls.len() + flights.answering >= max {
                self.answered.wait(&mut flights);
            }
            if flights.calls.contains_key(&key(&id)) {
                drop(flights);
                let err = RpcError::new(
                    INVALID_REQUEST,
                    "Invalid Request: this id is already in use by a request in flight",
                );
                self.reply_error(&id, err);
                return;
            }
            if flights.calls.len() >= max {
                drop(flights);
                self.reply(&id, self.mcp.refuse_busy(&method, &params, &busy_message(max)));
                return;
            }
            flights.calls.insert(key(&id), flight.clone());
        }
        let server = self.clone();
        self.workers.submit(Box::new(move || server.run_flight(&flight, &id, &method, &params)));
    }

    fn run_flight(
        &self,
        flight: &Arc<Flight>,
        id: &Value,
        method: &Method,
        params: &Map<String, Value>,
    ) {
        let notify = |message: Value| {
            let closed = flight.closed.lock();
            if !*closed {
                self.writer.send(&message);
            }
        };
        let progress = match params.get("_meta").and_then(|m| m.get("progressToken")) {
            Some(token) if !token.is_null() => {
                let token = token.clone();
                let writer = self.writer.clone();
                let flight = flight.clone();
                Progress::new(Box::new(move |progress, total, message| {
                    let closed = flight.closed.lock();
                    if !*closed {
                        writer.send(&progress_notification(&token, progress, total, message));
                    }
                }))
            }
            _ => Progress::none(),
        };
        let ask = |method: &str, params: Value| self.ask(flight, method, params);
        let req = Request {
            id,
            method,
            params,
            cancel: &flight.cancel,
            progress: &progress,
            notify: &notify,
            ask: &ask,
        };
        let outcome =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.mcp.handle(&req)))
                .unwrap_or_else(|_| {
                    Err(RpcError::new(INTERNAL_ERROR, "internal error: the handler panicked"))
                });
        let mut closed = flight.closed.lock();
        if !*closed {
            *closed = true;
            {
                // The id is free before the answer goes out, so a client may reuse it as soon as
                // it reads the answer; the slot is held until the write is done.
                let mut flights = self.flights.lock();
                if flights.calls.get(&key(id)).is_some_and(|f| Arc::ptr_eq(f, flight)) {
                    flights.calls.remove(&key(id));
                }
                flights.answering += 1;
            }
            self.reply(id, outcome);
            self.flights.lock().answering -= 1;
            self.answered.notify_all();
        }
    }

    /// Sends the client a request for `flight` and waits for the response message; `None` when the
    /// flight is cancelled (or closed) first.
    fn ask(&self, flight: &Flight, method: &str, params: Value) -> Option<Value> {
        let id = json!(format!("fugue-{}", self.next_ask.fetch_add(1, Ordering::Relaxed)));
        let (tx, rx) = crossbeam_channel::bounded(1);
        self.asked.lock().insert(key(&id), tx);
        let sent = {
            let closed = flight.closed.lock();
            if !*closed {
                self.writer.send(&jsonrpc::request(&id, method, params));
            }
            !*closed
        };
        let response = if sent {
            crossbeam_channel::select! {
                recv(rx) -> response => response.ok(),
                recv(flight.cancel.receiver()) -> _ => None,
            }
        } else {
            None
        };
        self.asked.lock().remove(&key(&id));
        response
    }

    fn reply(&self, id: &Value, outcome: Result<Value, RpcError>) {
        match outcome {
            Ok(result) => self.writer.send(&jsonrpc::result(id, result)),
            Err(err) => self.reply_error(id, err),
        }
    }

    fn reply_error(&self, id: &Value, err: RpcError) {
        self.writer.send(&jsonrpc::error(id, &err));
    }
}

/// The answer to a line over `FUGUE_MAX_LINE_BYTES` (`max`), which was skipped: `n` bytes long.
pub(crate) fn too_long(n: u64, max: usize) -> RpcError {
    RpcError::new(
        INVALID_REQUEST,
        format!("message of {n} bytes or more is over the {max} byte limit (FUGUE_MAX_LINE_BYTES)"),
    )
}

fn busy_message(max_calls: usize) -> String {
    format!(
        "server busy: {max_calls} calls are already running (FUGUE_MAX_CALLS); retry when one ends"
    )
}

fn progress_notification(token: &Value, progress: f64, total: Option<f64>, message: &str) -> Value {
    let mut params = json!({"progressToken": token, "progress": progress});
    if let Some(total) = total {
        params["total"] = json!(total);
    }
    if !message.is_empty() {
        params["message"] = json!(message);
    }
    jsonrpc::notification("notifications/progress", params)
}

/// Ids are strings or numbers; the JSON text is the key, so `1` and `"1"` stay apart.
fn key(id: &Value) -> String {
    id.to_string()
}

fn is_valid_id(id: &Value) -> bool {
    id.is_string() || id.is_number()
}

/// A tool call's run, queued for a worker.
type Queued = Box<dyn FnOnce() + Send>;

/// Worker threads for tool calls, grown on demand and retired when idle. Each submit either claims
/// an idle worker or starts one, so a queued call never waits behind a slow one; the number of
/// threads is bounded because calls in flight are (`FUGUE_MAX_CALLS`).
struct Workers {
    tx: Sender<Queued>,
    rx: Receiver<Queued>,
    /// (threads, idle and unclaimed)
    counts: Arc<Mutex<(usize, usize)>>,
}

impl Default for Workers {
    fn default() -> Workers {
        let (tx, rx) = crossbeam_channel::unbounded();
        Workers { tx, rx, counts: Arc::new(Mutex::new((0, 0))) }
    }
}

const IDLE_RETIRE: Duration = Duration::from_secs(30);

impl Workers {
    fn submit(&self, job: Queued) {
        let spawn = {
            let mut counts = self.counts.lock();
            if counts.1 > 0 {
                counts.1 -= 1;
                false
            } else {
                counts.0 += 1;
                true
            }
        };
        if spawn {
            let rx = self.rx.clone();
            let counts = self.counts.clone();
            let started =
                crate::threads::spawn("fugue-worker", None, Box::new(move || worker(rx, counts)));
            if started.is_err() {
                self.counts.lock().0 -= 1;
                crate::log::error("cannot start a worker thread; running the call on the reader");
                job();
                return;
            }
        }
        let _ = self.tx.send(job);
    }
}

fn worker(rx: Receiver<Queued>, counts: Arc<Mutex<(usize, usize)>>) {
    loop {
        match rx.recv_timeout(IDLE_RETIRE) {
            Ok(job) => {
                job();
                counts.lock().1 += 1;
            }
            Err(crossbeam_channel::RecvTimeoutError::Timeout) => {
                let mut counts = counts.lock();
                if counts.1 > 0 {
                    counts.0 -= 1;
                    counts.1 -= 1;
                    return;
                }
            }
            Err(crossbeam_channel::RecvTimeoutError::Disconnected) => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_keep_their_type() {
        assert_ne!(key(&json!(1)), key(&json!("1")));
        assert!(is_valid_id(&json!(0)));
        assert!(!is_valid_id(&Value::Null));
        assert!(!is_valid_id(&json!({"a": 1})));
    }
}
