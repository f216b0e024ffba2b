//! The answer budget: a failing `make -j4` prints 2000 lines of compiler noise with one error line
//! in the middle; its answer, through `fugue_exec` and through `fugue_run_parallel`, must fit in
//! 4 KB and hold that line. The baseline is the whole output, what an answer without a budget (or
//! a redirect to a file) would carry.

use crate::client::R;
use crate::figures::Bench;
use crate::report::Row;
use serde_json::{Value, json};

pub const ANSWER_FIG: &str = "failing noisy build (2000 lines, one error): answer size";
const TARGET: &str = "≤ 4 KB, error line in it";
const ERROR_LINE: &str = "grammar.c:88:5: error: expected ';' before '}' token";

/// The build: compiler noise, the error line after the first thousand lines, make's last word.
const BUILD: &str = "\
noise() {
  i=$1
  while [ $i -lt $2 ]; do echo \"cc -O2 -Wall -Werror -c src/unit$i.c -o obj/unit$i.o\"; i=$((i+1)); done
}
noise 0 1000
echo \"grammar.c:88:5: error: expected ';' before '}' token\"
noise 1000 2000
echo 'make: *** [Makefile:12: all] Error 2'
exit 2
";

pub fn answers(b: &Bench) -> R<Vec<Row>> {
    let dir = std::env::temp_dir().join(format!("fugue-bench-build-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let script = dir.join("build.sh");
    std::fs::write(&script, BUILD).map_err(|e| e.to_string())?;
    let measured = measure(b, &format!("sh {}", script.display()));
    let _ = std::fs::remove_dir_all(&dir);
    measured
}

fn measure(b: &Bench, command: &str) -> R<Vec<Row>> {
    let whole = std::process::Command::new("sh")
        .args(["-c", command])
        .output()
        .map_err(|e| e.to_string())?
        .stdout
        .len();
    let mut fugue = b.start()?;
    let exec = fugue.call("fugue_exec", json!({"command": command, "timeout_ms": 60000}))?;
    let run = fugue.call("fugue_run_parallel", json!({"commands": [{"command": command}]}))?;
    fugue.close()?;
    let rows = [
        ("`fugue_exec`", &exec, &exec["output"]),
        ("`fugue_run_parallel`", &run, &run["results"][0]["output_tail"]),
    ];
    rows.into_iter().map(|(tool, answer, output)| row(tool, answer, output, whole)).collect()
}

fn row(tool: &str, answer: &Value, output: &Value, whole: usize) -> R<Row> {
    let size = serde_json::to_string(answer).map_err(|e| e.to_string())?.len();
    let found = output.as_str().is_some_and(|o| o.lines().any(|l| l == ERROR_LINE));
    Ok(Row {
        baseline: format!("whole output {:.1} KB", whole as f64 / 1000.0),
        fugue: format!(
            "{tool}: {size} B, error line {}, {} lines omitted",
            if found { "in it" } else { "MISSING" },
            answer
                .pointer("/omitted/lines")
                .or(answer.pointer("/results/0/omitted/lines"))
                .unwrap_or(&json!(0))
        ),
        ratio: format!("{:.3}×", size as f64 / whole as f64),
        ..Row::new(ANSWER_FIG, TARGET)
    }
    .judge(size <= 4096 && found))
}
