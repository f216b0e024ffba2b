//! The table `make bench` prints: one row per figure, its baseline, fugue's value, the ratio, the
//! target and the verdict, as a Markdown table that reads the same in a terminal and in RESULTS.md.

use std::fmt::Write;

/// The verdict of one row.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Pass,
    Fail,
    /// A figure without a pass/fail target: reported for what it explains.
    Info,
    /// Not measured in this run (a baseline tool or a fugue tool is missing).
    Skip,
}

pub struct Row {
    pub figure: String,
    pub baseline: String,
    pub fugue: String,
    pub ratio: String,
    pub target: String,
    pub verdict: Verdict,
}

impl Row {
    pub fn new(figure: &str, target: &str) -> Row {
        Row {
            figure: figure.into(),
            baseline: "—".into(),
            fugue: "—".into(),
            ratio: "—".into(),
            target: target.into(),
            verdict: Verdict::Info,
        }
    }

    /// A row whose measurement could not be taken, with the reason in the fugue column.
    pub fn failed(figure: &str, target: &str, why: &str) -> Row {
        Row { fugue: format!("error: {why}"), verdict: Verdict::Fail, ..Row::new(figure, target) }
    }

    pub fn skipped(figure: &str, target: &str, why: &str) -> Row {
        Row { fugue: format!("skipped: {why}"), verdict: Verdict::Skip, ..Row::new(figure, target) }
    }

    pub fn judge(mut self, pass: bool) -> Row {
        self.verdict = if pass { Verdict::Pass } else { Verdict::Fail };
        self
    }
}

/// Renders the rows as an aligned Markdown table.
pub fn table(rows: &[Row]) -> String {
    let head = ["figure", "baseline", "fugue", "ratio", "target", "result"];
    let cells: Vec<[String; 6]> = rows
        .iter()
        .map(|r| {
            let verdict = match r.verdict {
                Verdict::Pass => "pass",
                Verdict::Fail => "FAIL",
                Verdict::Info => "info",
                Verdict::Skip => "skip",
            };
            [
                r.figure.clone(),
                r.baseline.clone(),
                r.fugue.clone(),
                r.ratio.clone(),
                r.target.clone(),
                verdict.to_string(),
            ]
        })
        .collect();
    let mut widths = head.map(|h| h.chars().count());
    for row in &cells {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let line = |out: &mut String, row: &[String]| {
        out.push('|');
        for (cell, w) in row.iter().zip(widths) {
            let pad = w - cell.chars().count();
            let _ = write!(out, " {cell}{} |", " ".repeat(pad));
        }
        out.push('\n');
    };
    line(&mut out, &head.map(String::from));
    line(&mut out, &widths.map(|w| "-".repeat(w)));
    for row in &cells {
        line(&mut out, row);
    }
    out
}

/// One line about the machine: CPU, cores, kernel, load.
pub fn machine() -> String {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split(':').nth(1))
        .map_or("unknown CPU", str::trim)
        .to_string();
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let memory = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| m.lines().next()?.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map_or(0, |kb| kb / 1024 / 1024);
    format!(
        "{model}, {cores} cores, {memory} GiB, Linux {}, load average {}",
        kernel.trim(),
        load()
    )
}

/// The one-minute load average: how busy the shared machine was.
pub fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().map(String::from))
        .unwrap_or_else(|| "?".into())
}
