//! The git side of a pipeline: its worktree and branch, the commit after the implementer, and the
//! built-in merger.
//!
//! Every call runs `git` through `std::process::Command` (started by `inherit::spawn`) with its
//! arguments as data — no shell, no quoting — and refs are passed in full (`refs/heads/...`) after `--end-of-options` where a name
//! could look like an option. The merger never forces, never touches a checkout with changes,
//! never deletes unmerged work: it computes the merge commit without a working tree
//! (`merge-tree --write-tree`), then moves the base branch by compare-and-swap (`update-ref NEW
//! OLD`), or by `merge --ff-only` in the clean worktree where the base is checked out — all under
//! a per-repository lock, so two pipelines never merge at once. A conflict changes nothing and
//! names the files. The pipeline's worktree is removed only after its branch is in the base.
//!
//! The worktree is written by a stage that may be hostile (sandboxed, but fugue's own git is not):
//! every command runs with the configuration that runs programs turned off (`NO_PROGRAMS`), and in
//! the pipeline's worktree git is told its git directory outright, after fugue has checked that the
//! worktree's `.git` file still names the one fugue made — a `.git` rewritten to point at a
//! directory of the stage's own, whose config says `core.fsmonitor = CMD`, would have git run CMD.
//! Nor does fugue commit a repository a stage made in the worktree: the person's own git would
//! recurse into it.

use crate::error::{Error, ErrorKind, Result};
use crate::files::FileLock;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The result of one git command.
struct GitRun {
    ok: bool,
    stdout: String,
    stderr: String,
}

/// Configuration that makes git run a program, a pager or an editor, each turned off: whatever a
/// repository's, the user's or a stage's configuration says. (A stage cannot write a repository's
/// config, read-only in its sandbox; fugue's own git turns these off all the same.)
const NO_PROGRAMS: [&str; 18] = [
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "core.sshCommand=false",
    "-c",
    "core.pager=cat",
    "-c",
    "core.editor=true",
    "-c",
    "sequence.editor=true",
    "-c",
    "commit.gpgSign=false",
    "-c",
    "diff.external=",
    "-c",
    "credential.helper=",
];

fn run(dir: &Path, args: &[&str]) -> Result<GitRun> {
    let mut cmd = Command::new("git");
    cmd.args(NO_PROGRAMS)
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_EDITOR", "true")
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let output = crate::inherit::spawn(&mut cmd)
        .and_then(std::process::Child::wait_with_output)
        .map_err(|e| Error::new(ErrorKind::Git, format!("cannot run git: {e}")))?;
    Ok(GitRun {
        ok: output.status.success(),
        stdout: String::from_utf8_lossy(&output.stdout).trim_end().to_string(),
        stderr: String::from_utf8_lossy(&output.stderr).trim().to_string(),
    })
}

/// Runs git and returns its output; a failure is an error quoting git.
fn git(dir: &Path, args: &[&str]) -> Result<String> {
    let r = run(dir, args)?;
    if r.ok {
        Ok(r.stdout)
    } else {
        Err(Error::new(ErrorKind::Git, format!("git {} failed: {}", args.join(" "), r.stderr)))
    }
}

fn git_strings(dir: &Path, args: &[String]) -> Result<String> {
    git(dir, &args.iter().map(String::as_str).collect::<Vec<&str>>())
}

/// The repository's main working tree (the directory holding `.git`), from any path inside it or
/// inside one of its worktrees.
pub(crate) fn main_worktree(repo: &Path) -> Result<PathBuf> {
    if !repo.is_dir() {
        return Err(Error::invalid(format!("repo {} is not a directory", repo.display())));
    }
    let common = run(repo, &["rev-parse", "--path-format=absolute", "--git-common-dir"])?;
    if !common.ok {
        return Err(Error::invalid(format!(
            "repo {} is not in a git repository: {}",
            repo.display(),
            common.stderr
        )));
    }
    let common = PathBuf::from(common.stdout);
    if git(repo, &["rev-parse", "--is-bare-repository"])? == "true" {
        return Err(Error::invalid(format!(
            "repo {} is a bare repository; give a repository with a working tree",
            repo.display()
        )));
    }
    match (common.file_name().and_then(|n| n.to_str()), common.parent()) {
        (Some(".git"), Some(parent)) => Ok(parent.to_path_buf()),
        _ => Ok(PathBuf::from(git(repo, &["rev-parse", "--show-toplevel"])?)),
    }
}

/// The branch checked out in `repo`.
pub(crate) fn current_branch(repo: &Path) -> Result<String> {
    let r = run(repo, &["symbolic-ref", "--quiet", "--short", "HEAD"])?;
    if r.ok && !r.stdout.is_empty() {
        return Ok(r.stdout);
    }
    Err(Error::invalid(format!("{} has a detached HEAD; give base_branch", repo.display())))
}

/// Checks that `name` is a valid branch name that cannot be taken for an option.
pub(crate) fn check_branch_name(repo: &Path, name: &str) -> Result<()> {
    let ok = !name.starts_with('-')
        && run(repo, &["check-ref-format", "--branch", name]).is_ok_and(|r| r.ok);
    if ok { Ok(()) } else { Err(Error::invalid(format!("{name:?} is not a valid branch name"))) }
}

/// The commit a branch points at.
pub(crate) fn branch_commit(repo: &Path, branch: &str) -> Result<String> {
    let reference = format!("refs/heads/{branch}^{{commit}}");
    let r = run(repo, &["rev-parse", "--verify", "--quiet", "--end-of-options", &reference])?;
    if r.ok {
        Ok(r.stdout)
    } else {
        Err(Error::invalid(format!("branch {branch:?} does not exist in {}", repo.display())))
    }
}

fn branch_exists(repo: &Path, branch: &str) -> Result<bool> {
    let reference = format!("refs/heads/{branch}");
    Ok(run(repo, &["show-ref", "--verify", "--quiet", &reference])?.ok)
}

/// Creates the pipeline's branch at `commit` and checks it out at `path`.
pub(crate) fn add_worktree(repo: &Path, path: &Path, branch: &str, commit: &str) -> Result<()> {
    // Forget worktrees whose directories are gone, so a stale entry cannot block this one.
    git(repo, &["worktree", "prune"])?;
    if path.exists() {
        return Err(Error::new(
            ErrorKind::Git,
            format!("{} already exists; it is not fugue's to reuse", path.display()),
        ));
    }
    if branch_exists(repo, branch)? {
        return Err(Error::new(ErrorKind::Git, format!("branch {branch} already exists")));
    }
    let path_str = path_arg(path)?;
    git(repo, &["worktree", "add", "--quiet", "-b", branch, path_str, commit]).map(|_| ())
}

/// Undoes `add_worktree` for a pipeline that never started: nothing was done on the branch.
pub(crate) fn discard_worktree(repo: &Path, path: &Path, branch: &str, commit: &str) {
    if let Ok(path_str) = path_arg(path) {
        let _ = git(repo, &["worktree", "remove", path_str]);
    }
    let reference = format!("refs/heads/{branch}");
    let _ = git(repo, &["update-ref", "-d", &reference, commit]);
}

fn path_arg(path: &Path) -> Result<&str> {
    path.to_str().ok_or_else(|| Error::invalid(format!("{} is not UTF-8", path.display())))
}

/// `-c` options giving git an identity when the repository has none configured.
fn identity(dir: &Path) -> Result<Vec<&'static str>> {
    let configured = run(dir, &["config", "user.email"])?.ok;
    Ok(if configured {
        Vec::new()
    } else {
        vec!["-c", "user.name=fugue", "-c", "user.email=fugue@localhost"]
    })
}

/// Commits whatever the agent left uncommitted in `repo`'s pipeline worktree `worktree`, whose
/// branch started at `base`. Returns whether it committed. A repository the stage made inside the
/// worktree is refused (see `refuse_nested`).
pub(crate) fn commit_all(repo: &Path, worktree: &Path, base: &str, message: &str) -> Result<bool> {
    let at = checked_worktree(repo, worktree)?;
    let with = |args: &[&'static str]| -> Vec<String> {
        at.iter().cloned().chain(args.iter().map(|a| (*a).to_string())).collect()
    };
    git_strings(worktree, &with(&["add", "--all"]))?;
    refuse_nested(worktree, &at, base)?;
    let diff = with(&["diff", "--cached", "--quiet", "--no-ext-diff", "--no-textconv"]);
    let diff: Vec<&str> = diff.iter().map(String::as_str).collect();
    if run(worktree, &diff)?.ok {
        return Ok(false);
    }
    let mut args: Vec<String> = identity(repo)?.into_iter().map(String::from).collect();
    args.extend(with(&["commit", "--quiet", "--no-verify", "-m"]));
    args.push(message.to_string());
    git_strings(worktree, &args)?;
    Ok(true)
}

/// Fails, naming the paths, when the index holds a gitlink (mode 160000, an embedded repository)
/// that `base` lacks, and takes those entries out of the index. `git add --all` stages a
/// repository a stage made as a gitlink; once in the index, the person's plain `git status` in the
/// worktree recurses into it and runs what its config says (`core.fsmonitor`), unsandboxed.
fn refuse_nested(worktree: &Path, at: &[String], base: &str) -> Result<()> {
    let mut args = at.to_vec();
    args.extend(
        ["diff", "--cached", "--raw", "-z", "--no-renames", "--no-ext-diff", base]
            .map(String::from),
    );
    let raw = git_strings(worktree, &args)?;
    let added = new_gitlinks(&raw);
    if added.is_empty() {
        return Ok(());
    }
    let mut args = at.to_vec();
    args.extend(["update-index", "--force-remove", "--"].map(String::from));
    args.extend(added.iter().cloned());
    git_strings(worktree, &args)?;
    Err(Error::new(
        ErrorKind::Git,
        format!(
            "the stage made a nested repository at {}; fugue commits no repository inside a \
             worktree",
            added.join(", ")
        ),
    ))
}

/// The paths `git diff --raw -z` says became gitlinks: `:OLD NEW SHA SHA STATUS\0PATH\0`.
fn new_gitlinks(raw: &str) -> Vec<String> {
    let mut fields = raw.split('\0');
    let mut added = Vec::new();
    while let (Some(head), Some(path)) = (fields.next(), fields.next()) {
        let mut modes = head.trim_start_matches(':').split(' ');
        if modes.next() != Some("160000") && modes.next() == Some("160000") {
            added.push(path.to_string());
        }
    }
    added
}

/// Commits on the HEAD of `repo`'s pipeline worktree `worktree` that `base` lacks.
pub(crate) fn commits_ahead(repo: &Path, worktree: &Path, base: &str) -> Result<u64> {
    let range = format!("{base}..HEAD");
    let mut args = checked_worktree(repo, worktree)?;
    args.extend(["rev-list", "--count", &range].map(String::from));
    let count = git_strings(worktree, &args)?;
    count.parse().map_err(|_| Error::new(ErrorKind::Git, format!("rev-list said {count:?}")))
}

/// The arguments that point git at `repo`'s pipeline worktree `worktree` and its own git
/// directory, once checked that the worktree's `.git` is the one fugue made: a plain file (not a
/// link) naming a directory in the repository's `worktrees/` whose `gitdir` names this worktree's
/// `.git` back. Anything else is refused, naming the `.git`.
fn checked_worktree(repo: &Path, worktree: &Path) -> Result<Vec<String>> {
    let dot_git = worktree.join(".git");
    let refuse = |why: &str| {
        Error::new(
            ErrorKind::Git,
            format!(
                "{} is not the .git fugue made for the pipeline's worktree ({why}); fugue runs no \
                 git command there",
                dot_git.display()
            ),
        )
    };
    let meta = std::fs::symlink_metadata(&dot_git).map_err(|e| refuse(&e.to_string()))?;
    if !meta.is_file() || meta.len() > 4096 {
        return Err(refuse("not a small plain file"));
    }
    let text = std::fs::read_to_string(&dot_git).map_err(|e| refuse(&e.to_string()))?;
    let named = text.strip_prefix("gitdir:").map(str::trim).ok_or_else(|| refuse("no gitdir"))?;
    let gitdir = worktree.join(named).canonicalize().map_err(|e| refuse(&e.to_string()))?;
    let common = git(repo, &["rev-parse", "--path-format=absolute", "--git-common-dir"])?;
    let worktrees = Path::new(&common).join("worktrees").canonicalize()?;
    if gitdir.parent() != Some(worktrees.as_path()) {
        return Err(refuse(&format!("it names {}", gitdir.display())));
    }
    let back = std::fs::read_to_string(gitdir.join("gitdir")).unwrap_or_default();
    let ours = worktree.canonicalize()?.join(".git");
    if Path::new(back.trim()).canonicalize().ok() != Some(ours) {
        return Err(refuse(&format!("{} names another worktree", gitdir.display())));
    }
    let (gitdir, worktree) = (path_arg(&gitdir)?, path_arg(worktree)?);
    Ok(vec![format!("--git-dir={gitdir}"), format!("--work-tree={worktree}")])
}

/// How a merge ended.
#[derive(Debug, PartialEq)]
pub(crate) enum Merge {
    /// The base branch now holds the work, at `commit`.
    Landed { commit: String, how: &'static str },
    /// Nothing changed; the reason says what is in the way and what to do.
    Blocked(String),
}

/// What the built-in merger works on.
pub(crate) struct MergeJob<'a> {
    pub(crate) repo: &'a Path,
    pub(crate) base_branch: &'a str,
    pub(crate) branch: &'a str,
    pub(crate) message: &'a str,
}

/// Lands the pipeline's branch on the base branch, under the repository's merge lock.
pub(crate) fn merge(job: &MergeJob<'_>) -> Result<Merge> {
    let _lock = merge_lock(job.repo)?;
    // The base can move between the look and the update; the compare-and-swap notices, and a
    // second look merges onto the new base.
    for _ in 0..3 {
        match merge_once(job)? {
            Some(done) => return Ok(done),
            None => continue,
        }
    }
    Ok(Merge::Blocked(format!("{} kept moving while merging; retry", job.base_branch)))
}

/// One try; `None` when the base branch moved underneath it.
fn merge_once(job: &MergeJob<'_>) -> Result<Option<Merge>> {
    let repo = job.repo;
    let head = branch_commit(repo, job.branch)?;
    let base = branch_commit(repo, job.base_branch)?;
    if is_ancestor(repo, &head, &base)? {
        return Ok(Some(Merge::Landed { commit: base, how: "already merged" }));
    }
    let (commit, how) = if is_ancestor(repo, &base, &head)? {
        (head.clone(), "fast-forward")
    } else {
        match merge_commit(job, &base, &head)? {
            Ok(commit) => (commit, "merge commit"),
            Err(blocked) => return Ok(Some(blocked)),
        }
    };
    Ok(match advance(job, &base, &commit)? {
        Advance::Done => Some(Merge::Landed { commit, how }),
        Advance::Moved => None,
        Advance::Blocked(reason) => Some(Merge::Blocked(reason)),
    })
}

fn is_ancestor(repo: &Path, a: &str, b: &str) -> Result<bool> {
    let r = run(repo, &["merge-base", "--is-ancestor", a, b])?;
    Ok(r.ok)
}

/// A merge commit of `head` into `base`, built without a working tree; a conflict is `Err`.
fn merge_commit(job: &MergeJob<'_>, base: &str, head: &str) -> Result<Result<String, Merge>> {
    let r =
        run(job.repo, &["merge-tree", "--write-tree", "--name-only", "--no-messages", base, head])?;
    if !r.ok {
        let mut lines = r.stdout.lines();
        let tree = lines.next().unwrap_or("");
        let files: Vec<&str> = lines.filter(|l| !l.is_empty()).collect();
        if tree.len() < 40 || files.is_empty() {
            return Err(Error::new(ErrorKind::Git, format!("git merge-tree failed: {}", r.stderr)));
        }
        return Ok(Err(Merge::Blocked(format!(
            "merge conflict: {} moved since the pipeline started and both changed {}. Resolve it \
             in the pipeline's worktree (e.g. merge {} there and commit), then retry; or send a \
             followup asking the implementer to do it",
            job.base_branch,
            files.join(", "),
            job.base_branch
        ))));
    }
    let tree = r.stdout.lines().next().unwrap_or("").to_string();
    let mut args = identity(job.repo)?;
    args.extend(["commit-tree", &tree, "-p", base, "-p", head, "-m", job.message]);
    Ok(Ok(git(job.repo, &args)?))
}

enum Advance {
    Done,
    /// The base branch is no longer at the commit merged onto.
    Moved,
    Blocked(String),
}

/// Moves the base branch from `old` to `new`: a compare-and-swap of the ref when it is not checked
/// out, else a fast-forward in its clean checkout.
fn advance(job: &MergeJob<'_>, old: &str, new: &str) -> Result<Advance> {
    let reference = format!("refs/heads/{}", job.base_branch);
    let Some(dir) = checkout_of(job.repo, &reference)? else {
        let msg = "fugue: merge pipeline branch";
        let r = run(job.repo, &["update-ref", "-m", msg, &reference, new, old])?;
        return Ok(if r.ok { Advance::Done } else { Advance::Moved });
    };
    let dirty = git(&dir, &["status", "--porcelain", "--untracked-files=no"])?;
    if !dirty.is_empty() {
        return Ok(Advance::Blocked(format!(
            "{} is checked out in {} with uncommitted changes; fugue does not touch a dirty \
             checkout. Commit or stash them, then retry",
            job.base_branch,
            dir.display()
        )));
    }
    if git(&dir, &["rev-parse", "HEAD"])? != old {
        return Ok(Advance::Moved);
    }
    let r = run(&dir, &["merge", "--ff-only", "--quiet", new])?;
    Ok(if r.ok {
        Advance::Done
    } else {
        Advance::Blocked(format!(
            "cannot fast-forward {} in {}: {}",
            job.base_branch,
            dir.display(),
            r.stderr
        ))
    })
}

/// The working tree where `reference` is checked out, if any.
fn checkout_of(repo: &Path, reference: &str) -> Result<Option<PathBuf>> {
    let list = git(repo, &["worktree", "list", "--porcelain"])?;
    let mut path = None;
    for line in list.lines() {
        if let Some(p) = line.strip_prefix("worktree ") {
            path = Some(PathBuf::from(p));
        } else if line.strip_prefix("branch ") == Some(reference) {
            return Ok(path);
        }
    }
    Ok(None)
}

/// After a merge: removes the worktree (only if clean) and then the branch (only if the base holds
/// it). Returns what was done, in words.
pub(crate) fn clean_up(repo: &Path, worktree: &Path, base_branch: &str, branch: &str) -> String {
    let Ok(path) = path_arg(worktree) else { return "worktree kept: path is not UTF-8".into() };
    let removed = run(repo, &["worktree", "remove", path]);
    match removed {
        Ok(r) if r.ok => {}
        Ok(r) => return format!("worktree kept at {path}: {}", r.stderr),
        Err(e) => return format!("worktree kept at {path}: {e}"),
    }
    let (Ok(head), Ok(base)) = (branch_commit(repo, branch), branch_commit(repo, base_branch))
    else {
        return "worktree removed; branch kept (cannot read it)".into();
    };
    if !is_ancestor(repo, &head, &base).unwrap_or(false) {
        return format!("worktree removed; branch {branch} kept: {base_branch} does not hold it");
    }
    let reference = format!("refs/heads/{branch}");
    match run(repo, &["update-ref", "-d", &reference, &head]) {
        Ok(r) if r.ok => format!("worktree removed; branch {branch} deleted (merged)"),
        _ => format!("worktree removed; branch {branch} kept"),
    }
}

/// Takes the exclusive lock on the repository's merges, held while the value lives. It is a file in
/// the git directory, so every fugue process (and every thread: each opens its own descriptor)
/// agrees.
fn merge_lock(repo: &Path) -> Result<FileLock> {
    let common = git(repo, &["rev-parse", "--path-format=absolute", "--git-common-dir"])?;
    let path = PathBuf::from(common).join("fugue-merge.lock");
    FileLock::take(&path)
}
