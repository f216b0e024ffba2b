//! Answers an agent can trust (issue 33): what four everyday outputs cost an agent as fugue
//! answers them, each beside what the agent would otherwise read (the whole output, or the whole
//! log read back), and a seven-question script answered by a list in one call beside the same
//! script answered one question at a time. Bytes are the structured answers (and, for the
//! dialogue, the arguments sent too), as a client receives them.

use crate::client::{Fugue, R};
use crate::figures::Bench;
use crate::report::Row;
use serde_json::{Value, json};
use std::path::Path;

pub const PROGRESS_FIG: &str = "400 progress lines + one warning, exit 0: answer";
pub const TESTS_FIG: &str = "verbose test run, 200 tests, 3 failures: answer";
pub const MAKE_FIG: &str = "`make -j4`, one error in 110 KB of noise: answer";
pub const SEARCH_FIG: &str = "search a 30 KB log for one warning: answer";
pub const LIST_FIG: &str = "seven-question script answered by a list";

const WARNING: &str = "warning: src/mod200.js is larger than 500 kB";
const PROGRESS: &str = "i=1; while [ $i -le 400 ]; do \
    echo \"bundling module $i/400: src/mod$i.js ($((i * 3)) kB)\"; \
    [ $i = 200 ] && echo 'warning: src/mod200.js is larger than 500 kB'; i=$((i+1)); done\n";

const TESTS: &str = r#"i=1
while [ $i -le 200 ]; do
  case $i in 37|101|166) r=FAILED;; *) r=PASSED;; esac
  echo "tests/unit/test_module_$((i % 9)).py::TestSuite::test_case_$i $r [$((i * 100 / 200))%]"
  i=$((i+1))
done
echo "=================================== FAILURES ==================================="
for n in 37 101 166; do
  echo "_______________________________ test_case_$n ________________________________"
  echo ""
  echo "    def test_case_$n():"
  echo "        data = load_fixture('case_$n')"
  echo ">       result = compute(data)"
  echo ""
  echo "tests/test_module_$((n % 9)).py:$n: "
  echo "_ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _"
  echo "    def compute(data):"
  echo "        if data.value < 0:"
  echo ">           raise ValueError(f'negative value in case {data.name}: {data.value}')"
  echo "E           ValueError: negative value in case case_$n: -$n"
  echo ""
  echo "src/compute.py:42: ValueError"
done
echo "=========================== short test summary info ============================"
for n in 37 101 166; do
  echo "FAILED tests/test_module_$((n % 9)).py::test_case_$n - ValueError: negative value in case case_$n: -$n"
done
echo "======================== 3 failed, 197 passed in 4.21s ========================="
exit 1
"#;

/// The three exception lines the test run prints.
static EXCEPTION: std::sync::LazyLock<[String; 3]> = std::sync::LazyLock::new(|| {
    [37, 101, 166].map(|n| format!("E           ValueError: negative value in case case_{n}: -{n}"))
});

/// make -j4: four jobs' lines interleaved, of several shapes, the error among them.
const MAKE: &str = r#"i=0
while [ $i -lt 1700 ]; do
  case $((i % 4)) in
    0) echo "gcc -O2 -g -Wall -Wextra -Werror -fPIC -Iinclude -c src/core/unit$i.c -o obj/core/unit$i.o";;
    1) echo "  CC      drivers/net/ethernet/intel/e1000/e1000_$i.o";;
    2) echo "ar rcs build/lib/libpart$((i / 4)).a obj/core/unit$((i - 2)).o";;
    *) echo "make[2]: Entering directory '/home/dev/project/build/sub$((i % 17))'";;
  esac
  [ $i = 850 ] && echo "src/parser/grammar.c:88:5: error: expected ';' before '}' token"
  i=$((i+1))
done
echo "make[1]: *** [Makefile:1042: src/parser/grammar.o] Error 1"
echo "make: *** [Makefile:12: all] Error 2"
exit 2
"#;
const MAKE_ERROR: &str = "src/parser/grammar.c:88:5: error: expected ';' before '}' token";

const LOG: &str = "i=0; while [ $i -lt 600 ]; do \
    [ $i = 300 ] && echo 'WARNING: disk /var nearly full (97%)'; \
    echo \"GET /api/items/$i 200 OK in 12 ms from 10.0.0.$((i % 250))\"; i=$((i+1)); done";

const SEVEN: &str = "for q in name email port host user shell editor; do \
    printf '%s? ' \"$q\"; read -r a; echo \"got $q=$a\"; done";
const ANSWERS: [&str; 7] = ["ada", "ada@example.com", "8080", "db.local", "admin", "zsh", "vim"];

pub fn trust(b: &Bench) -> R<Vec<Row>> {
    let dir = std::env::temp_dir().join(format!("fugue-bench-trust-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let measured = measure(b, &dir);
    let _ = std::fs::remove_dir_all(&dir);
    measured
}

fn measure(b: &Bench, dir: &Path) -> R<Vec<Row>> {
    let mut fugue = Fugue::start(&b.fugue)?;
    let mut rows = Vec::new();
    for (figure, script, target, must) in [
        (PROGRESS_FIG, PROGRESS, 800, vec![WARNING, "bundling module 400/400"]),
        (TESTS_FIG, TESTS, 3500, vec![&EXCEPTION[0][..], &EXCEPTION[1], &EXCEPTION[2]]),
        (MAKE_FIG, MAKE, 1500, vec![MAKE_ERROR]),
    ] {
        let path = dir.join("script.sh");
        std::fs::write(&path, script).map_err(|e| e.to_string())?;
        let command = format!("sh {}", path.display());
        rows.push(output_row(&mut fugue, (figure, &command), target, &must)?);
    }
    rows.push(search_row(&mut fugue)?);
    rows.push(list_row(&mut fugue)?);
    fugue.close()?;
    Ok(rows)
}

/// One command's answer against its whole output: within `target` bytes, with the lines `must`
/// names.
fn output_row(
    fugue: &mut Fugue,
    (figure, command): (&str, &str),
    target: usize,
    must: &[&str],
) -> R<Row> {
    let whole = std::process::Command::new("sh")
        .args(["-c", command])
        .output()
        .map_err(|e| e.to_string())?
        .stdout
        .len();
    let answer = fugue.call("fugue_exec", json!({"command": command, "timeout_ms": 60000}))?;
    let size = answer.to_string().len();
    let output = answer["output"].as_str().unwrap_or_default();
    let missing: Vec<&&str> = must.iter().filter(|m| !output.contains(**m)).collect();
    Ok(Row {
        baseline: format!("whole output {:.1} KB", whole as f64 / 1000.0),
        fugue: format!(
            "{size} B, {}, omitted {}",
            if missing.is_empty() {
                "all it must hold".to_string()
            } else {
                format!("MISSING {missing:?}")
            },
            answer.get("omitted").map_or("nothing".into(), Value::to_string),
        ),
        ratio: format!("{:.3}×", size as f64 / whole as f64),
        ..Row::new(figure, &format!("≤ {target} B with what matters"))
    }
    .judge(size <= target && missing.is_empty()))
}

/// `pattern` against reading the log back whole.
fn search_row(fugue: &mut Fugue) -> R<Row> {
    let pane = fugue.call("fugue_create_session", json!({"command": LOG}))?["pane_id"].clone();
    fugue.call("fugue_wait", json!({"pane_ids": [pane], "timeout_ms": 30000}))?;
    let whole = fugue.call(
        "fugue_get_output",
        json!({"pane_id": pane, "since": 0, "lines": 5000, "max_bytes": 1 << 20}),
    )?;
    let found = fugue.call("fugue_get_output", json!({"pane_id": pane, "pattern": "(?i)warn"}))?;
    let (size, base) = (found.to_string().len(), whole.to_string().len());
    let hit = found["output"].as_str().is_some_and(|o| o.contains("WARNING: disk /var"));
    Ok(Row {
        baseline: format!("the log read back: {base} B"),
        fugue: format!(
            "`pattern`: {size} B, {} match, warning {}",
            found["matches"],
            if hit { "in it" } else { "MISSING" }
        ),
        ratio: format!("{:.3}×", size as f64 / base as f64),
        ..Row::new(SEARCH_FIG, "≤ 300 B")
    }
    .judge(size <= 300 && hit))
}

/// Calls and bytes (arguments sent + answers read) of a dialogue.
#[derive(Default)]
struct Way {
    calls: usize,
    bytes: usize,
}

fn counted(fugue: &mut Fugue, way: &mut Way, tool: &str, args: Value) -> R<Value> {
    let answer = fugue.call(tool, args.clone())?;
    way.calls += 1;
    way.bytes += args.to_string().len() + answer.to_string().len();
    Ok(answer)
}

/// The list in one call against one answer per call.
fn list_row(fugue: &mut Fugue) -> R<Row> {
    let pane = fugue.call("fugue_create_session", json!({}))?["pane_id"].clone();
    fugue.call("fugue_exec", json!({"pane_id": pane, "command": "true"}))?;
    let mut one = Way::default();
    let args =
        json!({"pane_id": pane, "command": SEVEN, "responses": ANSWERS, "timeout_ms": 60000});
    let listed = counted(fugue, &mut one, "fugue_exec", args)?;
    let mut trips = Way::default();
    let args = json!({"pane_id": pane, "command": SEVEN, "timeout_ms": 60000});
    let mut answer = counted(fugue, &mut trips, "fugue_exec", args)?;
    for text in ANSWERS {
        if answer["status"] != "input" {
            return Err(format!("a round trip before {text:?}: {answer}"));
        }
        let args = json!({"pane_id": pane, "input": text, "submit": true, "wait_ms": 60000});
        answer = counted(fugue, &mut trips, "fugue_send_input", args)?;
    }
    let ok = listed["status"] == "ok" && answer["status"] == "ok";
    Ok(Row {
        baseline: format!("{} calls, one per answer: {} B", trips.calls, trips.bytes),
        fugue: format!("{} call: {} B{}", one.calls, one.bytes, if ok { "" } else { ", NOT ok" }),
        ratio: format!("{:.2}× bytes", one.bytes as f64 / trips.bytes as f64),
        ..Row::new(LIST_FIG, "1 call; bytes ≤ 0.5× one by one")
    }
    .judge(ok && one.calls == 1 && one.bytes * 2 <= trips.bytes))
}
