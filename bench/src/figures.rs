//! The figures of `make bench`, each measured next to its baseline in the same run.
//!
//! Every figure starts its own fugue server (so one figure's panes cannot slow another's), drives
//! it over stdio like an agent, and returns table rows. Repeated measurements interleave fugue and
//! its baseline, so a burst of load from another user of the machine hits both alike. Throughput
//! and wall-time figures keep the best of a few runs (noise only ever adds time); latency figures
//! report the median and the 99th percentile of many.

use crate::client::{Fugue, R, cpu, open_fds, rss, threads};
use crate::clock::{mb, median, ms, now_ns, quantile, show};
use crate::pty;
use crate::report::Row;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// What every figure needs: the binary under test and this program (for the `emit` helper).
pub struct Bench {
    pub fugue: PathBuf,
    pub me: PathBuf,
    /// Fewer repetitions, for a quick look while working on fugue.
    pub quick: bool,
}

impl Bench {
    pub(crate) fn reps(&self, full: usize) -> usize {
        if self.quick { full.div_ceil(4).max(1) } else { full }
    }

    pub(crate) fn start(&self) -> R<Fugue> {
        Fugue::start(&self.fugue)
    }

    /// The shell command that runs the `emit` helper in a pane.
    fn emit_command(&self) -> String {
        format!("'{}' emit", self.me.display())
    }
}

/// Turns a figure's error into a failed row instead of ending the run.
pub fn guard(figure: &str, target: &str, rows: R<Vec<Row>>) -> Vec<Row> {
    rows.unwrap_or_else(|e| vec![Row::failed(figure, target, &e)])
}

// ---------------------------------------------------------------------------------------------
// Pane ingestion

pub const INGEST: &str = "pane ingestion: `seq 1 3000000` in `fugue_run_parallel`, start → answer";
const INGEST_CMD: &str = "seq 1 3000000";
const INGEST_TARGET: &str = "≥ 0.9× bare";
const TMUX_FIG: &str = "pane ingestion vs tmux (same command)";
const TMUX_TARGET: &str = "faster than tmux";
const WATCHED_FIG: &str = "same, watched by `fugue_expect` (regex over every line)";

/// Bytes per second of `bytes` over `d`, in MB/s.
fn rate(bytes: u64, d: Duration) -> f64 {
    bytes as f64 / d.as_secs_f64() / 1e6
}

/// The best (shortest) run of one way of ingesting, and the least CPU it took.
struct Best {
    time: Duration,
    cpu: Duration,
}

impl Best {
    fn new() -> Best {
        Best { time: Duration::MAX, cpu: Duration::MAX }
    }

    fn add(&mut self, time: Duration, cpu: Duration) {
        self.time = self.time.min(time);
        self.cpu = self.cpu.min(cpu);
    }
}

pub fn ingestion(b: &Bench) -> R<Vec<Row>> {
    let mut fugue = b.start()?;
    let parallel = has_tool(&mut fugue, "fugue_run_parallel")?;
    let tmux = Tmux::start();
    let (mut bare, mut ran, mut watched, mut tmuxed) =
        (Best::new(), Best::new(), Best::new(), None);
    let mut bytes = 0;
    for rep in 0..b.reps(7) {
        let (n, d, c) = pty::drain(INGEST_CMD)?;
        bytes = n;
        bare.add(d, c);
        if parallel {
            let before = cpu(fugue.pid());
            let d = ingest_parallel(&mut fugue, bytes)?;
            ran.add(d, cpu(fugue.pid()) - before);
        }
        let before = cpu(fugue.pid());
        let d = ingest_watched(&mut fugue, rep, bytes)?;
        watched.add(d, cpu(fugue.pid()) - before);
        if let Some(tmux) = &tmux {
            let d = tmux.run(INGEST_CMD)?;
            tmuxed.get_or_insert_with(Best::new).add(d, Duration::ZERO);
        }
    }
    fugue.close()?;
    let bare_rate = rate(bytes, bare.time);
    let measured = |best: &Best, figure: &str, target: &str| {
        let fugue_rate = rate(bytes, best.time);
        let ratio = fugue_rate / bare_rate;
        Row {
            baseline: format!("bare PTY {bare_rate:.1} MB/s (CPU {})", show(bare.cpu)),
            fugue: format!(
                "{fugue_rate:.1} MB/s ({} in {}; server CPU {})",
                mb(bytes),
                show(best.time),
                show(best.cpu)
            ),
            ratio: format!("{ratio:.2}×"),
            ..Row::new(figure, target)
        }
        .judge(ratio >= 0.9)
    };
    let mut rows = Vec::new();
    rows.push(if parallel {
        measured(&ran, INGEST, INGEST_TARGET)
    } else {
        Row::skipped(INGEST, INGEST_TARGET, "fugue_run_parallel is not in this build")
    });
    let ours = if parallel { &ran } else { &watched };
    rows.push(match (&tmuxed, &tmux) {
        (Some(best), Some(tmux)) => {
            let (fugue_rate, tmux_rate) = (rate(bytes, ours.time), rate(bytes, best.time));
            Row {
                baseline: format!("{} {tmux_rate:.1} MB/s", tmux.version),
                fugue: format!("{fugue_rate:.1} MB/s"),
                ratio: format!("{:.2}×", fugue_rate / tmux_rate),
                ..Row::new(TMUX_FIG, TMUX_TARGET)
            }
            .judge(fugue_rate > tmux_rate)
        }
        _ => Row::skipped(TMUX_FIG, TMUX_TARGET, "tmux is not installed"),
    });
    // Searching every line is the price of the wait, not of ingestion: reported, not judged.
    let mut row = measured(&watched, WATCHED_FIG, "— (what a full scan costs)");
    row.verdict = crate::report::Verdict::Info;
    rows.push(row);
    Ok(rows)
}

/// One run through `fugue_run_parallel`: the answer comes when the command has exited and the
/// reader has drained every byte. The pane is kept to check that every byte is held.
fn ingest_parallel(fugue: &mut Fugue, bytes: u64) -> R<Duration> {
    let args = json!({"commands": [{"command": INGEST_CMD}], "cleanup": false});
    let (result, took) = fugue.call_timed("fugue_run_parallel", args)?;
    let run = &result["results"][0];
    if run["exit_code"] != 0 {
        return Err(format!("expected exit 0, got {result}"));
    }
    let pane = run["pane_id"].clone();
    let status = fugue.call("fugue_get_status", json!({"pane_id": pane}))?;
    fugue.call("fugue_close_pane", json!({"pane_id": pane}))?;
    match status["offset"].as_u64() {
        Some(held) if held == bytes => Ok(took),
        _ => Err(format!("fugue holds {} bytes, the bare PTY gave {bytes}", status["offset"])),
    }
}

/// One run watched by an expect whose pattern never matches: the answer `exited` comes once
/// every byte was read and searched.
fn ingest_watched(fugue: &mut Fugue, rep: usize, bytes: u64) -> R<Duration> {
    let started = Instant::now();
    let name = format!("ingest-{rep}");
    let created =
        fugue.call("fugue_create_session", json!({"name": name, "command": INGEST_CMD}))?;
    let pane = created["pane_id"].clone();
    let done = fugue.call(
        "fugue_expect",
        json!({"pane_id": pane, "pattern": "^never printed by seq$", "timeout_ms": 120_000}),
    )?;
    let elapsed = started.elapsed();
    if done["status"] != "exited" || done["exit_code"] != 0 {
        return Err(format!("expected an exit 0 answer, got {done}"));
    }
    fugue.call("fugue_close_session", json!({"session_id": name}))?;
    match done["offset"].as_u64() {
        Some(held) if held == bytes => Ok(elapsed),
        _ => Err(format!("fugue searched {} bytes, the bare PTY gave {bytes}", done["offset"])),
    }
}

/// A private tmux server for the comparison, killed on drop.
struct Tmux {
    socket: PathBuf,
    version: String,
}

impl Tmux {
    /// Starts a tmux server with an idle session, or `None` when tmux is not installed.
    fn start() -> Option<Tmux> {
        let version = Command::new("tmux").arg("-V").output().ok()?;
        let version = String::from_utf8_lossy(&version.stdout).trim().to_string();
        let socket = std::env::temp_dir().join(format!("fugue-bench-tmux-{}", std::process::id()));
        let tmux = Tmux { socket, version };
        tmux.cmd(&["new-session", "-d", "-x", "80", "-y", "24", "sleep 600"]).ok()?;
        Some(tmux)
    }

    fn cmd(&self, args: &[&str]) -> R<()> {
        let status = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .args(["-f", "/dev/null"])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .map_err(|e| format!("tmux: {e}"))?;
        if status.success() { Ok(()) } else { Err(format!("tmux {args:?} failed: {status}")) }
    }

    /// Runs `command` in a new tmux window and waits until it signals its end.
    fn run(&self, command: &str) -> R<Duration> {
        let socket = self.socket.display();
        let started = Instant::now();
        let script = format!("{command}; tmux -S '{socket}' wait-for -S fugue-bench-done");
        self.cmd(&["new-window", "-d", &script])?;
        self.cmd(&["wait-for", "fugue-bench-done"])?;
        Ok(started.elapsed())
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.cmd(&["kill-server"]);
        let _ = std::fs::remove_file(&self.socket);
    }
}

// ---------------------------------------------------------------------------------------------
// fugue_run_parallel

pub const TRUE_FIG: &str = "completion: `fugue_run_parallel` of one `true`";
const TRUE_TARGET: &str = "median ≤ baseline + 5 ms";
pub const SLEEP_FIG: &str = "10 × `sleep 0.2` in `fugue_run_parallel`";
const SLEEP_TARGET: &str = "≤ 1.1×";

fn has_tool(fugue: &mut Fugue, name: &str) -> R<bool> {
    let id = fugue.submit("tools/list", json!({}))?;
    let tools = fugue.wait(id)?.value["result"]["tools"].clone();
    Ok(tools.as_array().is_some_and(|t| t.iter().any(|t| t["name"] == name)))
}

/// Times one run_parallel call and checks every command exited 0.
fn run_parallel(fugue: &mut Fugue, commands: &[&str]) -> R<Duration> {
    let commands: Vec<Value> = commands.iter().map(|c| json!({"command": c})).collect();
    let (result, took) = fugue.call_timed("fugue_run_parallel", json!({"commands": commands}))?;
    let results = result["results"].as_array().ok_or("no results[] in the answer")?;
    if results.len() != commands.len() || results.iter().any(|r| r["exit_code"] != 0) {
        return Err(format!("not every command exited 0: {result}"));
    }
    Ok(took)
}

fn timed(cmd: &mut Command) -> R<Duration> {
    let started = Instant::now();
    let status = cmd.status().map_err(|e| e.to_string())?;
    if !status.success() {
        return Err(format!("{cmd:?} failed: {status}"));
    }
    Ok(started.elapsed())
}

pub fn parallel(b: &Bench) -> R<Vec<Row>> {
    let mut fugue = b.start()?;
    if !has_tool(&mut fugue, "fugue_run_parallel")? {
        let why = "fugue_run_parallel is not in this build";
        return Ok(vec![
            Row::skipped(TRUE_FIG, TRUE_TARGET, why),
            Row::skipped(SLEEP_FIG, SLEEP_TARGET, why),
        ]);
    }
    let (mut base, mut on_pty, mut ours) = (Vec::new(), Vec::new(), Vec::new());
    run_parallel(&mut fugue, &["true"])?; // warm up: first pane, first worker thread
    for _ in 0..b.reps(40) {
        base.push(timed(Command::new("sh").args(["-c", "true"]))?);
        // The same on a fresh PTY, read to end of file: what any terminal must pay at least.
        on_pty.push(pty::drain("true")?.1);
        ours.push(run_parallel(&mut fugue, &["true"])?);
    }
    let (base_med, ours_med) = (median(&base), median(&ours));
    let above = ms(ours_med) - ms(base_med);
    let true_row = Row {
        baseline: format!(
            "`sh -c true` {} (on a bare PTY {})",
            show(base_med),
            show(median(&on_pty))
        ),
        fugue: format!("{} (+{above:.2} ms; p99 {})", show(ours_med), show(quantile(&ours, 0.99))),
        ratio: format!("{:.1}×", ms(ours_med) / ms(base_med)),
        ..Row::new(TRUE_FIG, TRUE_TARGET)
    }
    .judge(above <= 5.0);

    let sleeps = ["sleep 0.2"; 10];
    let (mut base_best, mut ours_best) = (Duration::MAX, Duration::MAX);
    for _ in 0..b.reps(3) {
        base_best = base_best.min(xargs_sleeps()?);
        ours_best = ours_best.min(run_parallel(&mut fugue, &sleeps)?);
    }
    let ratio = ours_best.as_secs_f64() / base_best.as_secs_f64();
    let sleep_row = Row {
        baseline: format!("`xargs -P10` {}", show(base_best)),
        fugue: show(ours_best),
        ratio: format!("{ratio:.2}×"),
        ..Row::new(SLEEP_FIG, SLEEP_TARGET)
    }
    .judge(ratio <= 1.1);
    fugue.close()?;
    Ok(vec![true_row, sleep_row])
}

/// `xargs -P10 -n1 sleep` fed ten `0.2`s.
fn xargs_sleeps() -> R<Duration> {
    use std::io::Write;
    let started = Instant::now();
    let mut child = Command::new("xargs")
        .args(["-P10", "-n1", "sleep"])
        .stdin(Stdio::piped())
        .spawn()
        .map_err(|e| format!("xargs: {e}"))?;
    let mut stdin = child.stdin.take().ok_or("xargs has no stdin")?;
    stdin.write_all("0.2\n".repeat(10).as_bytes()).map_err(|e| e.to_string())?;
    drop(stdin);
    let status = child.wait().map_err(|e| e.to_string())?;
    if !status.success() {
        return Err(format!("xargs failed: {status}"));
    }
    Ok(started.elapsed())
}

// ---------------------------------------------------------------------------------------------
// fugue_expect wake-ups

pub const WAKE_FIG: &str = "`fugue_expect` wake-up: output written → answer read";
const WAKE_TARGET: &str = "median ≤ 2 ms, p99 ≤ 10 ms";
pub const HERD_FIG: &str = "100 concurrent `fugue_expect` woken by one line";
const HERD_TARGET: &str = "all ≤ 50 ms";

/// A pane running the `emit` helper, which answers each input line `X` with `GOX <ns>`, where
/// `<ns>` is the monotonic clock just before its write to the PTY. Returns the pane id and the
/// output offset after its start.
pub fn emitter(b: &Bench, fugue: &mut Fugue, session: &str) -> R<(Value, u64)> {
    let created = fugue
        .call("fugue_create_session", json!({"name": session, "command": b.emit_command()}))?;
    let pane = created["pane_id"].clone();
    // The helper announces itself once it reads; from then on it is blocked in read().
    let ready = fugue.call(
        "fugue_expect",
        json!({"pane_id": pane, "pattern": "^EMIT READY$", "timeout_ms": 10_000}),
    )?;
    if ready["status"] != "matched" {
        return Err(format!("the emit helper did not start: {ready}"));
    }
    Ok((pane, ready["offset"].as_u64().unwrap_or(0)))
}

/// Latency from the helper's timestamp (group 1 of the match) to the moment the answer was read.
fn wake_latency(result: &Value, answered_at: u64) -> R<Duration> {
    if result["status"] != "matched" {
        return Err(format!("expect did not match: {result}"));
    }
    let written: u64 = result["groups"][0]
        .as_str()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("no timestamp in {result}"))?;
    Ok(Duration::from_nanos(answered_at.saturating_sub(written)))
}

pub fn wake(b: &Bench) -> R<Vec<Row>> {
    let mut fugue = b.start()?;
    let (pane, offset) = emitter(b, &mut fugue, "wake")?;
    let samples = wake_samples(&mut fugue, &pane, offset, b.reps(200))?;
    fugue.close()?;
    let (med, p99) = (median(&samples), quantile(&samples, 0.99));
    Ok(vec![
        Row {
            fugue: format!("median {}, p99 {} (n={})", show(med), show(p99), samples.len()),
            ..Row::new(WAKE_FIG, WAKE_TARGET)
        }
        .judge(ms(med) <= 2.0 && ms(p99) <= 10.0),
    ])
}

/// `reps` wake-ups of an expect on an emitter pane: from the helper's write to the answer.
pub fn wake_samples(
    fugue: &mut Fugue,
    pane: &Value,
    mut offset: u64,
    reps: usize,
) -> R<Vec<Duration>> {
    let mut samples = Vec::new();
    for i in 0..reps {
        let pattern = format!("^GO{i} ([0-9]+)$");
        let expect = fugue.submit_tool(
            "fugue_expect",
            json!({"pane_id": pane, "pattern": pattern, "since": offset, "timeout_ms": 10_000}),
        )?;
        // Let the call reach its wait; a call that is late still measures honestly (longer).
        std::thread::sleep(Duration::from_millis(10));
        fugue.call(
            "fugue_send_input",
            json!({"pane_id": pane, "input": i.to_string(), "submit": true}),
        )?;
        let (result, at) = fugue.wait_tool(expect)?;
        samples.push(wake_latency(&result, at)?);
        offset = result["offset"].as_u64().unwrap_or(offset);
    }
    Ok(samples)
}

pub fn herd(b: &Bench) -> R<Vec<Row>> {
    let mut fugue = b.start()?;
    let (pane, offset) = emitter(b, &mut fugue, "herd")?;
    let calls: Vec<u64> = (0..100)
        .map(|_| {
            fugue.submit_tool(
                "fugue_expect",
                json!({"pane_id": pane, "pattern": "^GOHERD ([0-9]+)$", "since": offset,
                       "timeout_ms": 30_000}),
            )
        })
        .collect::<R<_>>()?;
    // Every call must be waiting before the line is printed; a worker thread each, so allow for
    // the thread starts on a loaded machine.
    std::thread::sleep(Duration::from_millis(500));
    fugue.call("fugue_send_input", json!({"pane_id": pane, "input": "HERD", "submit": true}))?;
    let mut samples = Vec::new();
    for id in calls {
        let (result, at) = fugue.wait_tool(id)?;
        samples.push(wake_latency(&result, at)?);
    }
    fugue.close()?;
    let worst = samples.iter().max().copied().unwrap_or_default();
    Ok(vec![
        Row {
            fugue: format!(
                "all 100 matched; median {}, last {}",
                show(median(&samples)),
                show(worst)
            ),
            ..Row::new(HERD_FIG, HERD_TARGET)
        }
        .judge(samples.len() == 100 && ms(worst) <= 50.0),
    ])
}

// ---------------------------------------------------------------------------------------------
// Start-up

pub const INIT_FIG: &str = "start → `initialize` answer";
const INIT_TARGET: &str = "≤ 10 ms";

pub fn startup(b: &Bench) -> R<Vec<Row>> {
    let (mut base, mut ours) = (Vec::new(), Vec::new());
    for _ in 0..b.reps(30) {
        base.push(timed(&mut Command::new("true"))?);
        let started = now_ns();
        let mut fugue = Fugue::spawn(&b.fugue, &[])?;
        let answer = fugue.initialize()?;
        ours.push(Duration::from_nanos(answer.at - started));
        fugue.close()?;
    }
    let (base_med, ours_med) = (median(&base), median(&ours));
    Ok(vec![
        Row {
            baseline: format!("`true` {}", show(base_med)),
            fugue: format!("median {}, p99 {}", show(ours_med), show(quantile(&ours, 0.99))),
            ratio: format!("{:.1}×", ms(ours_med) / ms(base_med)),
            ..Row::new(INIT_FIG, INIT_TARGET)
        }
        .judge(ms(ours_med) <= 10.0),
    ])
}

// ---------------------------------------------------------------------------------------------
// Memory

pub const MEM_FIG: &str = "server RSS after one pane printed 200 MB";
const MEM_TARGET: &str = "≤ 40 MB, flat";
const MEM_BYTES: u64 = 200_000_000;

pub fn memory(b: &Bench) -> R<Vec<Row>> {
    let mut fugue = b.start()?;
    let pid = fugue.pid();
    let idle = rss(pid);
    // 200 MB of 80-column lines; the PTY adds a \r to each.
    let command = format!(
        "yes 'fugue bench: two hundred megabytes of ordinary log lines, eighty columns wide..' \
         | head -c {MEM_BYTES}"
    );
    let sampler = Sampler::start(pid);
    let started = Instant::now();
    let created = fugue.call("fugue_create_session", json!({"name": "mem", "command": command}))?;
    let pane = created["pane_id"].clone();
    let done = fugue.call(
        "fugue_expect",
        json!({"pane_id": pane, "pattern": "^never printed by yes$", "timeout_ms": 600_000}),
    )?;
    let took = started.elapsed();
    let printed = done["offset"].as_u64().unwrap_or(0);
    if done["status"] != "exited" || printed < MEM_BYTES {
        return Err(format!("the 200 MB pane did not finish cleanly: {done}"));
    }
    // Read what an agent would read next: the tail, in every view.
    for format in ["text", "raw", "screen"] {
        fugue.call("fugue_get_output", json!({"pane_id": pane, "format": format}))?;
    }
    let samples = sampler.stop();
    let end = rss(pid);
    fugue.close()?;
    let peak = samples.iter().map(|s| s.1).max().unwrap_or(end).max(end);
    // Flat: the second half of the run added (almost) nothing to the first half's memory.
    let half = samples.iter().filter(|s| s.0 <= took / 2).map(|s| s.1).max().unwrap_or(idle);
    let growth = peak.saturating_sub(half);
    Ok(vec![
        Row {
            baseline: format!("idle server {}", mb(idle)),
            fugue: format!(
                "end {}, peak {}, +{} over the second half ({:.1} MB/s)",
                mb(end),
                mb(peak),
                mb(growth),
                rate(printed, took)
            ),
            ..Row::new(MEM_FIG, MEM_TARGET)
        }
        .judge(peak <= 40_000_000 && growth <= 2_000_000),
    ])
}

/// Samples a process's RSS every 100 ms on its own thread.
struct Sampler {
    stop: std::sync::mpsc::Sender<()>,
    thread: std::thread::JoinHandle<Vec<(Duration, u64)>>,
}

impl Sampler {
    fn start(pid: u32) -> Sampler {
        let (stop, stopped) = std::sync::mpsc::channel::<()>();
        let thread = std::thread::spawn(move || {
            let started = Instant::now();
            let mut samples = Vec::new();
            loop {
                samples.push((started.elapsed(), rss(pid)));
                match stopped.recv_timeout(Duration::from_millis(100)) {
                    Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
                    _ => return samples,
                }
            }
        });
        Sampler { stop, thread }
    }

    fn stop(self) -> Vec<(Duration, u64)> {
        let _ = self.stop.send(());
        self.thread.join().unwrap_or_default()
    }
}

// ---------------------------------------------------------------------------------------------
// Many panes

const PANES: usize = 200;
pub const PANES_FIG: &str = "200 panes running `sleep`";

pub fn many_panes(b: &Bench) -> R<Vec<Row>> {
    let mut fugue = b.start()?;
    let pid = fugue.pid();
    // One pane and one closed, so the baseline already has its worker threads and allocator pools.
    fugue.call("fugue_create_session", json!({"name": "warm", "command": "true"}))?;
    fugue.call("fugue_close_session", json!({"session_id": "warm"}))?;
    let (rss0, threads0, fds0) = (rss(pid), threads(pid), open_fds(pid));

    let started = Instant::now();
    let mut panes = Vec::new();
    let first =
        fugue.call("fugue_create_session", json!({"name": "many", "command": "sleep 600"}))?;
    panes.push(first["pane_id"].clone());
    for _ in 1..PANES {
        let w = fugue
            .call("fugue_create_window", json!({"session_id": "many", "command": "sleep 600"}))?;
        panes.push(w["pane_id"].clone());
    }
    let created = started.elapsed();
    let (rss1, threads1, fds1) = (rss(pid), threads(pid), open_fds(pid));

    // Usable: each pane takes input and its reader sees the terminal's echo of it.
    let mut usable = 0;
    for (i, pane) in panes.iter().enumerate() {
        let input = format!("ping-{i}");
        let sent = fugue
            .call("fugue_send_input", json!({"pane_id": pane, "input": input, "submit": true}))?;
        let seen = fugue.call(
            "fugue_expect",
            json!({"pane_id": pane, "pattern": format!("^{input}$"), "since": sent["offset"],
                   "timeout_ms": 10_000}),
        )?;
        usable += usize::from(seen["status"] == "matched");
    }
    let mut list = Vec::new();
    let mut listed = 0;
    for _ in 0..b.reps(40) {
        let (result, took) = fugue.call_timed("fugue_list_sessions", json!({}))?;
        listed = count_running(&result);
        list.push(took);
    }
    let shutdown = fugue.close()?;

    let per_pane = rss1.saturating_sub(rss0) / PANES as u64;
    let thread_delta = threads1.saturating_sub(threads0);
    let list_med = median(&list);
    Ok(vec![
        Row {
            fugue: format!(
                "{usable}/{PANES} echo their input; {listed} listed running; created in {}, \
                 shut down in {}",
                show(created),
                show(shutdown)
            ),
            ..Row::new(&format!("{PANES_FIG}: all usable"), "all usable")
        }
        .judge(usable == PANES && listed == PANES),
        Row {
            fugue: format!("median {}, p99 {}", show(list_med), show(quantile(&list, 0.99))),
            ..Row::new(&format!("{PANES_FIG}: `fugue_list_sessions`"), "≤ 5 ms")
        }
        .judge(ms(list_med) <= 5.0),
        Row {
            baseline: format!("server {}", mb(rss0)),
            fugue: format!("{:.0} KB per pane ({} for {PANES})", per_pane as f64 / 1e3, mb(rss1)),
            ..Row::new(&format!("{PANES_FIG}: RSS per idle pane"), "≤ 1 MB")
        }
        .judge(per_pane <= 1_000_000),
        Row {
            baseline: format!("{threads0} threads, {fds0} fds"),
            fugue: format!(
                "{threads1} threads ({:.1} per pane), {fds1} fds ({:.1} per pane)",
                thread_delta as f64 / PANES as f64,
                fds1.saturating_sub(fds0) as f64 / PANES as f64
            ),
            ..Row::new(&format!("{PANES_FIG}: threads"), "says where they go")
        },
    ])
}

fn count_running(list: &Value) -> usize {
    let sessions = list["sessions"].as_array().map(Vec::as_slice).unwrap_or_default();
    sessions
        .iter()
        .flat_map(|s| s["windows"].as_array().map(Vec::as_slice).unwrap_or_default())
        .flat_map(|w| w["panes"].as_array().map(Vec::as_slice).unwrap_or_default())
        .filter(|p| p["status"] == "running")
        .count()
}

// ---------------------------------------------------------------------------------------------
// Sizes

pub const TOOLS_FIG: &str = "`tools/list` size";
pub const SIZE_FIG: &str = "static binary size";

pub fn tools_list(b: &Bench) -> R<Vec<Row>> {
    let mut fugue = b.start()?;
    let id = fugue.submit("tools/list", json!({}))?;
    let answer = fugue.wait(id)?.value;
    fugue.close()?;
    let size = serde_json::to_string(&answer["result"]).map_err(|e| e.to_string())?.len();
    let count = answer["result"]["tools"].as_array().map_or(0, Vec::len);
    Ok(vec![
        Row {
            fugue: format!("{:.1} KiB ({size} B) for {count} tools", size as f64 / 1024.0),
            ..Row::new(TOOLS_FIG, "≤ 24 KiB, as tests/protocol.rs holds it")
        }
        .judge(size <= 24 * 1024),
    ])
}

pub fn binary_size(b: &Bench) -> R<Vec<Row>> {
    let size = std::fs::metadata(&b.fugue).map_err(|e| e.to_string())?.len();
    let linking = if is_static(&b.fugue)? { "static" } else { "dynamic: build with make static" };
    Ok(vec![
        Row { fugue: format!("{} ({linking})", mb(size)), ..Row::new(SIZE_FIG, "≤ 4 MB") }
            .judge(size <= 4_000_000 && linking == "static"),
    ])
}

/// Whether an ELF executable needs no dynamic loader (it has no PT_INTERP program header).
fn is_static(path: &Path) -> R<bool> {
    const PT_INTERP: u32 = 3;
    let elf = std::fs::read(path).map_err(|e| e.to_string())?;
    let word = |at: usize, n: usize| -> R<u64> {
        let bytes = elf.get(at..at + n).ok_or("truncated ELF header")?;
        Ok(bytes.iter().rev().fold(0u64, |acc, b| acc << 8 | u64::from(*b)))
    };
    if elf.get(..5) != Some(b"\x7fELF\x02") {
        return Err("not a 64-bit ELF file".into());
    }
    let (phoff, phentsize, phnum) = (word(0x20, 8)?, word(0x36, 2)?, word(0x38, 2)?);
    for i in 0..phnum {
        if word((phoff + i * phentsize) as usize, 4)? == u64::from(PT_INTERP) {
            return Ok(false);
        }
    }
    Ok(true)
}
