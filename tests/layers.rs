//! The layers of `src/`, kept: no file of the crate reaches another that reaches back to it, and
//! every import points down the order README's Development section draws.
//!
//! The graph is read from the source, not from the compiler, so it sees what a reader sees: every
//! `use` (braces expanded) and every path in code (`crate::log::warn`, `super::Shell`,
//! `pane::tail::lines` after a `use crate::pane`), each resolved to the file that defines the module
//! it names. Comments and string literals are blanked first, so prose naming a path is no import.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The order, lowest layer first. A file may import files of its own unit and of units in lower
/// layers; an import up, or sideways to another unit of its own layer, fails. A unit is a module
/// path, and a file belongs to the longest unit its module starts with: `shell` is the live shell
/// that stands above a pane (the pane is a terminal and a process, and knows no shell), while
/// `fugue_exec`, its tool (`tools/exec.rs`), stands with the other tool handlers. README's
/// Development section draws the same order, and `readme_lists_the_layers_of_this_order` holds
/// it to that.
const LAYERS: &[&[&str]] = &[
    // Leaves: they import nothing of the crate, or only the leaves before them.
    &["words"],
    &[
        "error", "log", "ids", "watch", "waiter", "layout", "jsonrpc", "usage", "line", "procfs",
        "cancel", "passwd", "sort", "threads",
    ],
    &["files"],
    &["config", "inherit", "tempdir", "control::dir"],
    // The sandbox: the policy and the launcher that applies it to a pane's process.
    &["sandbox"],
    // The domain: panes, the registry (which places panes and chooses no shell), the live shells
    // above panes, agent pipelines and the pool of fugue's own shells; none of it knows of MCP,
    // of the tool framework or of the runtime.
    &["pane"],
    &["mux"],
    &["shell"],
    &["agent", "shell::pool"],
    // The tool framework: a tool, its arguments, its call and durable tasks.
    &["tool"],
    // What one server owns for its lifetime.
    &["runtime"],
    // The tool handlers, all in `tools/`, each on the runtime and the domain; some on the handlers
    // before them. Below them all, what the tools that run commands share.
    &["tools::common"],
    &["tools"],
    &["tools::command_wait"],
    &["tools::exec"],
    &["tools::panes"],
    &["tools::expect", "tools::wait", "tools::parallel", "tools::pipeline", "tools::agent"],
    // Remote hosts: the one place a call is routed, here or to a host's fugue over ssh.
    &["remote"],
    // The protocol, then the front-ends.
    &["mcp"],
    &["rpc"],
    &["control"],
    &["server"],
    &["attach"],
    // The command line, read once into typed options for each front-end.
    &["cli"],
    &["main"],
];

/// One file of `src/`: where it is and the module it defines (`["pane", "tail"]`; the crate root,
/// `main.rs`, is `[]`).
struct File {
    path: PathBuf,
    module: Vec<String>,
}

/// One import: the file that imports, the line, the file it reaches.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Edge {
    from: String,
    line: usize,
    to: String,
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `.rs` file under `src/` and its module path.
fn files() -> Vec<File> {
    fn walk(dir: &Path, module: &[String], out: &mut Vec<File>) {
        let mut entries: Vec<_> =
            std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
        entries.sort();
        for path in entries {
            let name = path.file_name().unwrap().to_str().unwrap().to_string();
            if path.is_dir() {
                let mut inner = module.to_vec();
                inner.push(name);
                walk(&path, &inner, out);
            } else if let Some(stem) = name.strip_suffix(".rs") {
                let mut m = module.to_vec();
                if stem != "mod" && !(module.is_empty() && stem == "main") {
                    m.push(stem.to_string());
                }
                out.push(File { path, module: m });
            }
        }
    }
    let mut out = Vec::new();
    walk(&src(), &[], &mut out);
    out
}

fn rel(path: &Path) -> String {
    format!("src/{}", path.strip_prefix(src()).unwrap().display())
}

/// `text` with comments, string literals and character literals replaced by spaces; line breaks
/// are kept, so lines still count.
fn blank(text: &str) -> String {
    let c: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let keep = |ch: char| if ch == '\n' { '\n' } else { ' ' };
    while i < c.len() {
        if c[i] == '/' && c.get(i + 1) == Some(&'/') {
            while i < c.len() && c[i] != '\n' {
                out.push(' ');
                i += 1;
            }
        } else if c[i] == '/' && c.get(i + 1) == Some(&'*') {
            let mut depth = 0;
            loop {
                if c[i] == '/' && c.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(keep(c[i]));
                    i += 1;
                }
            }
        } else if c[i] == 'r'
            && matches!(c.get(i + 1), Some('"' | '#'))
            && !c[..i].last().is_some_and(|p| p.is_alphanumeric() || *p == '_')
        {
            // A raw string: r"…", r#"…"#; it ends at a quote followed by as many hashes.
            let mut j = i + 1;
            while c.get(j) == Some(&'#') {
                j += 1;
            }
            if c.get(j) != Some(&'"') {
                out.push(c[i]);
                i += 1;
                continue;
            }
            let hashes = j - i - 1;
            j += 1;
            while j < c.len() && !(c[j] == '"' && (1..=hashes).all(|k| c.get(j + k) == Some(&'#')))
            {
                j += 1;
            }
            let end = (j + 1 + hashes).min(c.len());
            out.extend(c[i..end].iter().map(|&ch| keep(ch)));
            i = end;
        } else if c[i] == '"' {
            let mut j = i + 1;
            while j < c.len() && c[j] != '"' {
                j += if c[j] == '\\' { 2 } else { 1 };
            }
            let end = (j + 1).min(c.len());
            out.extend(c[i..end].iter().map(|&ch| keep(ch)));
            i = end;
        } else if c[i] == '\'' && c.get(i + 1) == Some(&'\\') {
            let mut j = i + 2;
            while j < c.len() && c[j] != '\'' {
                j += 1;
            }
            out.extend(c[i..=j.min(c.len() - 1)].iter().map(|&ch| keep(ch)));
            i = j + 1;
        } else if c[i] == '\'' && c.get(i + 2) == Some(&'\'') {
            out.push_str("   ");
            i += 3;
        } else {
            out.push(c[i]);
            i += 1;
        }
    }
    out
}

/// A token of blanked source: a word, `::`, or one other character; with its line.
fn tokens(text: &str) -> Vec<(String, usize)> {
    let c: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let (mut i, mut line) = (0, 1);
    while i < c.len() {
        let ch = c[i];
        if ch == '\n' {
            line += 1;
            i += 1;
        } else if ch.is_whitespace() {
            i += 1;
        } else if ch.is_alphanumeric() || ch == '_' {
            let start = i;
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            out.push((c[start..i].iter().collect(), line));
        } else if ch == ':' && c.get(i + 1) == Some(&':') {
            out.push(("::".to_string(), line));
            i += 2;
        } else {
            out.push((ch.to_string(), line));
            i += 1;
        }
    }
    out
}

fn is_word(t: &str) -> bool {
    t.chars().next().is_some_and(|c| c.is_alphabetic() || c == '_')
}

/// Parses the use tree starting at `tokens[*at]`, after `prefix`: pushes each full path with the
/// name it binds (`None` for a glob).
fn use_tree(
    t: &[(String, usize)],
    at: &mut usize,
    prefix: Vec<String>,
    out: &mut Vec<(Vec<String>, Option<String>)>,
) {
    let mut path = prefix;
    loop {
        match t.get(*at).map(|x| x.0.as_str()) {
            Some("{") => {
                *at += 1;
                while t.get(*at).is_some_and(|x| x.0 != "}") {
                    use_tree(t, at, path.clone(), out);
                    if t.get(*at).is_some_and(|x| x.0 == ",") {
                        *at += 1;
                    }
                }
                *at += 1;
                return;
            }
            Some("*") => {
                *at += 1;
                out.push((path, None));
                return;
            }
            Some(w) if is_word(w) => {
                path.push(w.to_string());
                *at += 1;
                if t.get(*at).is_some_and(|x| x.0 == "::") {
                    *at += 1;
                    continue;
                }
                let mut name = path.last().cloned();
                if t.get(*at).is_some_and(|x| x.0 == "as") {
                    name = t.get(*at + 1).map(|x| x.0.clone());
                    *at += 2;
                }
                if path.last().is_some_and(|l| l == "self") {
                    path.pop();
                    if name.as_deref() == Some("self") {
                        name = path.last().cloned();
                    }
                }
                out.push((path, name));
                return;
            }
            _ => return,
        }
    }
}

/// What one file names: every path it uses with the line, resolved against the crate's modules.
fn edges(file: &File, modules: &BTreeMap<Vec<String>, String>) -> Vec<Edge> {
    let text = std::fs::read_to_string(&file.path).unwrap();
    let t = tokens(&blank(&text));
    // Inline `mod name { … }` blocks: the module a token is in, by brace depth.
    let mut scopes: Vec<(usize, Vec<String>)> = vec![(0, file.module.clone())];
    let mut depth = 0;
    let mut aliases: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut found: Vec<(Vec<String>, usize)> = Vec::new();

    let resolve = |scope: &[String], path: &[String], aliases: &BTreeMap<String, Vec<String>>| {
        let (first, rest) = path.split_first()?;
        let mut base: Vec<String> = match first.as_str() {
            "crate" => Vec::new(),
            "self" => scope.to_vec(),
            "super" => {
                let mut b = scope.to_vec();
                let mut rest = path;
                while rest.first().is_some_and(|s| s == "super") {
                    b.pop();
                    rest = &rest[1..];
                }
                b.extend(rest.iter().cloned());
                return Some(b);
            }
            _ => {
                let mut child = scope.to_vec();
                child.push(first.clone());
                if modules.contains_key(&child) { child } else { aliases.get(first)?.clone() }
            }
        };
        base.extend(rest.iter().cloned());
        Some(base)
    };

    let mut i = 0;
    while i < t.len() {
        let (tok, line) = (&t[i].0, t[i].1);
        let scope = scopes.last().unwrap().1.clone();
        match tok.as_str() {
            "{" => depth += 1,
            "}" => {
                depth -= 1;
                if scopes.len() > 1 && scopes.last().unwrap().0 == depth {
                    scopes.pop();
                }
            }
            "mod" if t.get(i + 2).is_some_and(|x| x.0 == "{") => {
                let mut inner = scope.clone();
                inner.push(t[i + 1].0.clone());
                scopes.push((depth, inner));
                depth += 1;
                i += 3;
                continue;
            }
            "use" if i == 0 || t[i - 1].0 != "::" => {
                let mut at = i + 1;
                let mut trees = Vec::new();
                use_tree(&t, &mut at, Vec::new(), &mut trees);
                for (path, name) in trees {
                    if let Some(abs) = resolve(&scope, &path, &aliases) {
                        if let Some(name) = name {
                            aliases.insert(name, abs.clone());
                        }
                        found.push((abs, line));
                    }
                }
                i = at;
                continue;
            }
            w if is_word(w)
                && t.get(i + 1).is_some_and(|x| x.0 == "::")
                && (i == 0 || t[i - 1].0 != "::") =>
            {
                let mut path = vec![w.to_string()];
                let mut j = i + 1;
                while t.get(j).is_some_and(|x| x.0 == "::")
                    && t.get(j + 1).is_some_and(|x| is_word(&x.0))
                {
                    path.push(t[j + 1].0.clone());
                    j += 2;
                }
                if let Some(abs) = resolve(&scope, &path, &aliases) {
                    found.push((abs, line));
                }
                i = j;
                continue;
            }
            _ => {}
        }
        i += 1;
    }

    let from = rel(&file.path);
    let mut out = BTreeSet::new();
    for (abs, line) in found {
        // The file of the longest prefix that is a module of its own file.
        let to = (0..=abs.len()).rev().find_map(|n| modules.get(&abs[..n]));
        if let Some(to) = to.filter(|to| **to != from) {
            out.insert(Edge { from: from.clone(), line, to: to.clone() });
        }
    }
    out.into_iter().collect()
}

/// The import graph of `src/`: each file's imports of other files.
fn graph() -> (Vec<File>, Vec<Edge>) {
    let files = files();
    let modules: BTreeMap<Vec<String>, String> =
        files.iter().map(|f| (f.module.clone(), rel(&f.path))).collect();
    let edges = files.iter().flat_map(|f| edges(f, &modules)).collect();
    (files, edges)
}

/// The strongly connected components of more than one file (Tarjan's algorithm).
fn circles(edges: &[Edge]) -> Vec<Vec<String>> {
    let mut next: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for e in edges {
        next.entry(&e.from).or_default().insert(&e.to);
        next.entry(&e.to).or_default();
    }
    struct State<'a> {
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on: BTreeSet<&'a str>,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(v: &'a str, next: &BTreeMap<&'a str, BTreeSet<&'a str>>, s: &mut State<'a>) {
        let n = s.index.len();
        s.index.insert(v, n);
        s.low.insert(v, n);
        s.stack.push(v);
        s.on.insert(v);
        for &w in &next[v] {
            if !s.index.contains_key(w) {
                visit(w, next, s);
                let low = s.low[v].min(s.low[w]);
                s.low.insert(v, low);
            } else if s.on.contains(w) {
                let low = s.low[v].min(s.index[w]);
                s.low.insert(v, low);
            }
        }
        if s.low[v] == s.index[v] {
            let mut scc = Vec::new();
            loop {
                let w = s.stack.pop().unwrap();
                s.on.remove(w);
                scc.push(w.to_string());
                if w == v {
                    break;
                }
            }
            if scc.len() > 1 {
                scc.sort();
                s.out.push(scc);
            }
        }
    }
    let mut s = State {
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        out: Vec::new(),
    };
    for &v in next.keys() {
        if !s.index.contains_key(v) {
            visit(v, &next, &mut s);
        }
    }
    s.out
}

/// The unit a file belongs to and the index of its layer.
fn unit(module: &[String]) -> Option<(String, usize)> {
    let name = if module.is_empty() { "main".to_string() } else { module.join("::") };
    LAYERS
        .iter()
        .enumerate()
        .flat_map(|(layer, units)| units.iter().map(move |u| (*u, layer)))
        .filter(|(u, _)| name == *u || name.starts_with(&format!("{u}::")))
        .max_by_key(|(u, _)| u.len())
        .map(|(u, layer)| (u.to_string(), layer))
}

#[test]
fn no_files_import_each_other_in_a_circle() {
    let (_, edges) = graph();
    let mut report = String::new();
    for circle in circles(&edges) {
        report.push_str(&format!("a circle of {} files:\n", circle.len()));
        let mut named = BTreeSet::new();
        for e in edges.iter().filter(|e| circle.contains(&e.from) && circle.contains(&e.to)) {
            // The first line that imports each file is enough to find the import.
            if named.insert((&e.from, &e.to)) {
                report.push_str(&format!("  {}:{} imports {}\n", e.from, e.line, e.to));
            }
        }
    }
    assert!(report.is_empty(), "{report}");
}

#[test]
fn every_import_points_down_the_layers() {
    let (files, edges) = graph();
    let module: BTreeMap<String, &[String]> =
        files.iter().map(|f| (rel(&f.path), f.module.as_slice())).collect();
    let mut report = String::new();
    for f in &files {
        if unit(&f.module).is_none() {
            report.push_str(&format!("{} is in no unit of LAYERS; place it\n", rel(&f.path)));
        }
    }
    for e in &edges {
        let (Some((from, a)), Some((to, b))) = (unit(module[&e.from]), unit(module[&e.to])) else {
            continue;
        };
        if from != to && a <= b {
            let way = if a == b { "sideways" } else { "up" };
            report.push_str(&format!(
                "{}:{} imports {}: `{from}` (layer {a}) may not import `{to}` (layer {b}), {way}\n",
                e.from, e.line, e.to
            ));
        }
    }
    assert!(report.is_empty(), "imports against the order of LAYERS:\n{report}");
}

#[test]
fn every_unit_of_the_order_is_a_module() {
    let files = files();
    for unit in LAYERS.iter().flat_map(|l| l.iter()) {
        let path: Vec<String> =
            if *unit == "main" { Vec::new() } else { unit.split("::").map(String::from).collect() };
        assert!(files.iter().any(|f| f.module == path), "LAYERS names {unit}, which is no module");
    }
}

/// README's list of the layers: every unit named in backquotes in the numbered list under
/// "The files stand in layers", in the order it names them, files (`live.rs`) read as modules of
/// the unit named last (`shell`), a folder's path (`tools/common/`) as its module.
fn readme_units() -> Vec<String> {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let start = readme.find("The files stand in layers").expect("README's list of layers");
    let list = &readme[start..];
    let list = &list[list.find("\n1. ").expect("a numbered list")..];
    let end = list.find("\n\n").unwrap_or(list.len());
    let mut units = Vec::new();
    let mut parent = String::new();
    for (i, piece) in list[..end].split('`').enumerate() {
        if i % 2 == 0 {
            continue;
        }
        let piece = piece.trim_end_matches('/');
        if let Some((first, _)) = piece.split_once('/')
            && unit_of_name(first).is_some()
        {
            parent = first.to_string();
        }
        let unit = match piece.strip_suffix(".rs") {
            Some("mod") => parent.clone(),
            Some(file) if file.contains('/') => file.replace('/', "::"),
            Some(file) => format!("{parent}::{file}"),
            None if piece.contains('/') => piece.replace('/', "::"),
            None => piece.to_string(),
        };
        if !unit.contains("::") && unit_of_name(&unit).is_some() {
            parent = unit.clone();
        }
        units.push(unit);
    }
    units
}

#[test]
fn readme_lists_the_layers_of_this_order() {
    let ordered: Vec<&str> = LAYERS.iter().flat_map(|l| l.iter().copied()).collect();
    let named = readme_units();
    let known: Vec<&String> = named.iter().filter(|u| unit_of_name(u).is_some()).collect();
    for unit in &ordered {
        assert!(named.iter().any(|n| n == unit), "README's list of layers leaves out `{unit}`");
    }
    // Each unit's layer as README names it: never lower than a unit it named before.
    let mut last = (String::new(), 0);
    for name in known {
        let (unit, layer) = unit_of_name(name).unwrap();
        assert!(
            layer >= last.1,
            "README names `{name}` (layer {layer}) after `{}` (layer {}); LAYERS has them the \
             other way round",
            last.0,
            last.1
        );
        last = (unit, layer);
    }
}

/// The unit and layer of a name README gives, as `unit` finds a module's.
fn unit_of_name(name: &str) -> Option<(String, usize)> {
    let module: Vec<String> =
        if name == "main" { Vec::new() } else { name.split("::").map(String::from).collect() };
    unit(&module)
}
