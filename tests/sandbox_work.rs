//! Everyday work in a sandboxed pane (issue 30, "everyday work still runs sandboxed"): a project's
//! build and test suite, a virtual environment with a package installed from the project, `npm
//! install` of the project's own package, `git` in the project. Each runs for real in a server
//! started with `--sandbox workspace-write` (network off) and, where the call's sandbox could
//! differ, as a call's `sandbox` on a server without one. Caches outside the project are read-only:
//! the tests look at what a tool does then and at what the answer's `sandbox_denied` says.

use crate::sandbox::{failed, nobodys, outside, sandboxed, sandboxed_as_nobody_with};
use crate::util::{Dir, Fugue, GIT_ENV, git, git_repo, have, path_str};
use serde_json::{Value, json};
use std::path::Path;

/// Where a command's sandbox comes from.
#[derive(Clone, Copy, Debug)]
pub enum Way {
    /// `fugue serve --sandbox workspace-write`.
    Server,
    /// A server without a sandbox; each call says `"sandbox": "workspace-write"`.
    Call,
}

/// A fugue serving from `root` the `way` given, with `env` set for it.
pub fn serve(root: &Path, way: Way, env: &[(&str, &str)]) -> Fugue {
    match way {
        Way::Server => sandboxed(root, &["--sandbox", "workspace-write"], env),
        Way::Call => sandboxed(root, &[], env),
    }
}

/// Runs `command` in fugue's own shell, sandboxed the `way` given, with a minute to finish.
pub fn exec(f: &mut Fugue, way: Way, command: &str) -> Value {
    let mut args = json!({"command": command, "timeout_ms": 60000});
    if let Way::Call = way {
        args["sandbox"] = json!("workspace-write");
    }
    f.call("fugue_exec", args)
}

/// Runs `command` and asserts it succeeded; returns its output.
#[track_caller]
pub fn ok(f: &mut Fugue, way: Way, command: &str) -> String {
    let done = exec(f, way, command);
    assert_eq!(done["exit_code"], 0, "{way:?}: {command}: {done}");
    done["output"].as_str().unwrap_or_default().to_string()
}

/// `chown -R nobody:nogroup path`: files a test wrote as root, for a fugue run as nobody.
fn give_to_nobody(path: &Path) {
    let done =
        std::process::Command::new("chown").args(["-R", "nobody:nogroup"]).arg(path).status();
    assert!(done.is_ok_and(|s| s.success()), "chown nobody {}", path.display());
}

/// A small C project with a Makefile (`make` builds, `make test` runs it) and a Python test suite
/// whose tests write into the project and into a temporary directory.
fn c_and_python_project(root: &Dir) {
    root.write(
        "Makefile",
        "all: hello\n\nhello: hello.c\n\tcc -o hello hello.c\n\n\
         test: hello\n\t./hello > hello.out\n\tgrep -q 'hello from c' hello.out\n",
    );
    root.write("hello.c", "#include <stdio.h>\nint main(void) { puts(\"hello from c\"); }\n");
    root.write("tests/__init__.py", "");
    root.write(
        "tests/test_work.py",
        "import os, tempfile, unittest\n\n\
         class Work(unittest.TestCase):\n\
         \x20   def test_in_the_project(self):\n\
         \x20       with open('made-by-test', 'w') as f:\n\
         \x20           f.write('x')\n\n\
         \x20   def test_in_a_temporary_directory(self):\n\
         \x20       with tempfile.TemporaryDirectory() as d:\n\
         \x20           open(os.path.join(d, 'f'), 'w').write('y')\n",
    );
}

/// A crate without dependencies, with one test.
fn crate_project(root: &Dir) {
    root.write("crate/Cargo.toml", "[package]\nname = \"work\"\nversion = \"0.1.0\"\n");
    root.write(
        "crate/src/lib.rs",
        "pub fn two() -> u32 { 2 }\n#[test]\nfn adds() { assert_eq!(two() + 2, 4); }\n",
    );
}

/// `make`, `make test`, a Python test suite and `cargo test` work in the project, sandboxed by
/// the server and by a call; the programs they build land in the project. `make` and the Python
/// suite as nobody too, with namespaces and in the fallback without them.
#[test]
fn a_projects_build_and_test_suite_run_sandboxed() {
    for way in [Way::Server, Way::Call] {
        let root = Dir::new(&format!("work-build-{way:?}"));
        c_and_python_project(&root);
        let mut f = serve(&root.path, way, &[]);
        build_and_test(&mut f, way, &root);
        if have("cargo") {
            crate_project(&root);
            // The target directory in the project, whatever the environment says.
            let out = ok(&mut f, way, "(cd crate && CARGO_TARGET_DIR=target cargo test --offline)");
            assert!(out.contains("test adds ... ok"), "{way:?}: {out}");
            assert!(root.join("crate/target").is_dir(), "{way:?}");
        }
    }
    // As nobody, and in the fallback where user namespaces are not allowed.
    let hook = ("FUGUE_SANDBOX_TEST_NO_USERNS", "1");
    for (name, env) in [("nobody", &[][..]), ("fallback", &[hook][..])] {
        let root = nobodys(&format!("work-build-{name}"));
        c_and_python_project(&root);
        give_to_nobody(&root.path);
        let args = ["--sandbox", "workspace-write"];
        if let Some(mut f) = sandboxed_as_nobody_with(&root.path, &args, env) {
            build_and_test(&mut f, Way::Server, &root);
        }
    }
}

fn build_and_test(f: &mut Fugue, way: Way, root: &Dir) {
    let out = ok(f, way, "make && make test");
    assert!(out.contains("cc -o hello hello.c"), "{way:?}: {out}");
    assert!(root.join("hello").is_file() && root.join("hello.out").is_file(), "{way:?}");
    let out = ok(f, way, "python3 -m unittest discover -s tests -v 2>&1");
    assert!(out.contains("Ran 2 tests") && out.ends_with("OK"), "{way:?}: {out}");
    assert!(root.join("made-by-test").is_file(), "{way:?}");
}

/// A package in the project, built by an in-tree PEP 517 backend that needs nothing from an
/// index: `pip install ./tinypkg` runs pip's whole build (an isolated build environment, metadata,
/// a wheel, the install) without the network.
fn python_package(root: &Dir) {
    root.write(
        "tinypkg/pyproject.toml",
        "[build-system]\nrequires = []\nbuild-backend = \"backend\"\nbackend-path = [\".\"]\n",
    );
    root.write("tinypkg/tinypkg/__init__.py", "WORD = 'tiny'\n");
    root.write(
        "tinypkg/backend.py",
        "import base64, hashlib, os, zipfile\n\
         INFO = 'tinypkg-0.1.dist-info'\n\n\
         def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):\n\
         \x20   files = {'tinypkg/__init__.py': open('tinypkg/__init__.py', 'rb').read(),\n\
         \x20            INFO + '/METADATA': b'Metadata-Version: 2.1\\nName: tinypkg\\nVersion: 0.1\\n',\n\
         \x20            INFO + '/WHEEL': b'Wheel-Version: 1.0\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n'}\n\
         \x20   name = 'tinypkg-0.1-py3-none-any.whl'\n\
         \x20   record = ''\n\
         \x20   with zipfile.ZipFile(os.path.join(wheel_directory, name), 'w') as whl:\n\
         \x20       for path, data in files.items():\n\
         \x20           whl.writestr(path, data)\n\
         \x20           digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b'=')\n\
         \x20           record += f'{path},sha256={digest.decode()},{len(data)}\\n'\n\
         \x20       whl.writestr(INFO + '/RECORD', record + INFO + '/RECORD,,\\n')\n\
         \x20   return name\n",
    );
}

/// `python3 -m venv .venv && .venv/bin/pip install ./tinypkg` in the project, with the network off
/// and pip's cache (`~/.cache/pip`, in a home outside the roots) read-only: the install works, the
/// package imports, pip goes on without its cache and nothing lands in it. As root and as nobody.
#[test]
fn pip_installs_the_projects_package_into_a_venv() {
    let home = outside("work-pip-home");
    std::fs::create_dir_all(home.join(".cache/pip")).unwrap();
    let root = Dir::new("work-pip");
    python_package(&root);
    let mut f = serve(&root.path, Way::Server, &[("HOME", home.path_str())]);
    venv_and_install(&mut f, &root, "root");
    drop(f);
    let home = outside("work-pip-home-nobody");
    std::fs::create_dir_all(home.join(".cache/pip")).unwrap();
    give_to_nobody(&home.path);
    let root = nobodys("work-pip-nobody");
    python_package(&root);
    give_to_nobody(&root.path);
    let env = [("HOME", home.path_str())];
    if let Some(mut f) =
        sandboxed_as_nobody_with(&root.path, &["--sandbox", "workspace-write"], &env)
    {
        venv_and_install(&mut f, &root, "nobody");
    }
    let cached = std::fs::read_dir(home.join(".cache/pip")).unwrap().count();
    assert_eq!(cached, 0, "nobody: pip wrote its cache outside the roots");
}

fn venv_and_install(f: &mut Fugue, root: &Dir, who: &str) {
    let made =
        f.call("fugue_exec", json!({"command": "python3 -m venv .venv", "timeout_ms": 180000}));
    assert_eq!(made["exit_code"], 0, "{who}: {made}");
    let installed = f.call(
        "fugue_exec",
        json!({"command": ".venv/bin/pip install ./tinypkg", "timeout_ms": 180000}),
    );
    let output = installed["output"].as_str().unwrap_or_default();
    assert_eq!(installed["exit_code"], 0, "{who}: {installed}");
    assert!(output.contains("Successfully installed tinypkg-0.1"), "{who}: {output}");
    let imported = ok(f, Way::Server, ".venv/bin/python -c 'import tinypkg; print(tinypkg.WORD)'");
    assert_eq!(imported, "tiny", "{who}");
    assert!(root.join(".venv/bin/python").exists(), "{who}");
}

/// A Node project whose dependency is a package directory in the project, and a second whose
/// dependency is that package packed as a tarball (which npm unpacks through its cache).
fn node_projects(root: &Dir) {
    root.write("web/tinyjs/package.json", r#"{"name": "tinyjs", "version": "1.0.0"}"#);
    root.write("web/tinyjs/index.js", "module.exports = 'tinyjs';\n");
    root.write(
        "web/package.json",
        r#"{"name": "web", "version": "1.0.0", "dependencies": {"tinyjs": "file:./tinyjs"}}"#,
    );
    // The tarball `npm pack` makes: the package under `package/`, gzipped.
    root.write("pack/package/package.json", r#"{"name": "tinyjs", "version": "1.0.0"}"#);
    root.write("pack/package/index.js", "module.exports = 'tinyjs';\n");
    root.write(
        "packed/package.json",
        r#"{"name": "packed", "version": "1.0.0",
            "dependencies": {"tinyjs": "file:./tinyjs-1.0.0.tgz"}}"#,
    );
    let tar = std::process::Command::new("tar")
        .args(["-czf", "packed/tinyjs-1.0.0.tgz", "-C", "pack", "package"])
        .current_dir(&root.path)
        .status();
    assert!(tar.is_ok_and(|s| s.success()), "tar");
}

/// `npm install` of the project's own package works with the network off and `~/.npm` (outside
/// the roots) read-only; one from the registry fails, `sandbox_denied` naming the request. A dependency that goes through npm's cache fails with `sandbox_denied`
/// naming the cache; with `--writable ~/.npm`, or the cache among a call's own roots, it installs.
#[test]
fn npm_installs_the_projects_package_and_names_the_cache_it_needs() {
    if !have("npm") {
        return;
    }
    let home = outside("work-npm-home");
    let cache = home.join(".npm");
    std::fs::create_dir_all(&cache).unwrap();
    let root = Dir::new("work-npm");
    node_projects(&root);
    let env = [("HOME", home.path_str())];
    let mut f = serve(&root.path, Way::Server, &env);
    ok(&mut f, Way::Server, "(cd web && npm install --no-audit --no-fund)");
    let used = ok(&mut f, Way::Server, "(cd web && node -e 'console.log(require(\"tinyjs\"))')");
    assert_eq!(used, "tinyjs");
    let packed = exec(&mut f, Way::Server, "(cd packed && npm install --no-audit --no-fund)");
    assert!(failed(&packed), "{packed}");
    let denied = packed["sandbox_denied"].as_str().unwrap_or_default();
    assert!(denied.contains(path_str(&cache)), "names the cache: {packed}");
    assert!(!root.join("packed/node_modules/tinyjs").exists());
    // The registry, with the network off and the cache in the project: the line naming the
    // request is the answer's, not npm's bare error code.
    let fetch =
        "(cd web && npm_config_cache=$PWD/.npm-cache npm install left-pad --fetch-retries=0)";
    let fetched = exec(&mut f, Way::Server, fetch);
    assert!(failed(&fetched), "{fetched}");
    let denied = fetched["sandbox_denied"].as_str().unwrap_or_default();
    assert!(denied.contains("left-pad"), "names the request: {fetched}");
    drop(f);
    let args = ["--sandbox", "workspace-write", "--writable", root.path_str(), "--writable"];
    let mut f = sandboxed(&root.path, &[&args[..], &[path_str(&cache)]].concat(), &env);
    ok(&mut f, Way::Server, "(cd packed && npm install --no-audit --no-fund)");
    assert!(root.join("packed/node_modules/tinyjs/index.js").is_file());
    drop(f);
    // On a server without a sandbox a call's own sandbox may add the cache to its roots.
    std::fs::remove_dir_all(root.join("packed/node_modules")).unwrap();
    let mut f = serve(&root.path, Way::Call, &env);
    let writable = [root.path_str(), path_str(&cache)];
    let done = f.call(
        "fugue_exec",
        json!({"command": "(cd packed && npm install --no-audit --no-fund)", "timeout_ms": 60000,
               "sandbox": {"mode": "workspace-write", "writable": writable}}),
    );
    assert_eq!(done["exit_code"], 0, "{done}");
    assert!(root.join("packed/node_modules/tinyjs/index.js").is_file());
}

/// `git status` works in the project; `git commit` fails while `.git` is read-only, the answer's
/// `sandbox_denied` naming `.git`, the repository unchanged; with `--writable-git` it commits.
/// Sandboxed by the server and by a call.
#[test]
fn git_status_works_and_commit_needs_writable_git() {
    for way in [Way::Server, Way::Call] {
        let dir = Dir::new(&format!("work-git-{way:?}"));
        let repo = git_repo(&dir);
        std::fs::write(repo.join("new.txt"), "new\n").unwrap();
        let mut f = serve(&repo, way, &GIT_ENV);
        let status = ok(&mut f, way, "git status --short");
        assert_eq!(status, "?? new.txt", "{way:?}");
        let head = git(&repo, &["rev-parse", "HEAD"]);
        let commit = exec(&mut f, way, "git add new.txt && git commit -q -m new");
        assert!(failed(&commit), "{way:?}: {commit}");
        let denied = commit["sandbox_denied"].as_str().unwrap_or_default();
        let git_dir = repo.join(".git");
        assert!(
            denied.contains(path_str(&git_dir)) && denied.contains("Read-only file system"),
            "{way:?}: {commit}"
        );
        assert_eq!(git(&repo, &["rev-parse", "HEAD"]), head, "{way:?}");
    }
    let dir = Dir::new("work-git-writable");
    let repo = git_repo(&dir);
    std::fs::write(repo.join("new.txt"), "new\n").unwrap();
    let mut f = sandboxed(&repo, &["--sandbox", "workspace-write", "--writable-git"], &GIT_ENV);
    ok(&mut f, Way::Server, "git add new.txt && git commit -q -m new");
    assert_eq!(git(&repo, &["log", "-1", "--format=%s"]), "new");
}
