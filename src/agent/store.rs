//! Agent pipeline state on disk: one JSON file per pipeline, written so that a crash never tears it.
//!
//! A state root (`FUGUE_STATE_DIR`, or `.state` in the repository's main working tree) holds
//! `pipelines/<id>.json` (the state), `pipelines/<id>.lock` (held with `flock` by the fugue process
//! that drives the pipeline, released by the kernel when that process dies), `runs/<id>/` (prompt,
//! verdict and output files of each attempt) and `worktrees/<id>` (the git worktree). Every write is
//! a temp file in the same directory, fsync, rename over the old file, fsync of the directory: a
//! reader sees the old state or the new one, never half of one. Directories are 0700 and files
//! 0600. Ids are checked before they become paths, so no file name can leave the directory. A file
//! that does not parse is renamed aside (`<id>.json.corrupt-<ms>`) and reported, never fatal.

use super::record::{AgentPipeline, SCHEMA_VERSION};
use crate::error::{Error, ErrorKind, Result};
use crate::files::{Existing, FileLock, io_error, private_dir};
use crate::ids::PipelineId;
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Makes `dir` (0700) if it is not there, and checks that it is a directory of this user's, not a
/// link; made private through a descriptor opened without following links, so that a link put
/// in its place in between changes the mode of nothing else.
fn own_dir(dir: &Path) -> Result<(u64, u64)> {
    private_dir(dir, Existing::Keep)?;
    let refuse = |why: &str| {
        Error::new(
            ErrorKind::InvalidState,
            format!(
                "{} {why}; fugue keeps its state only in a directory of its own",
                dir.display()
            ),
        )
    };
    let opened = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(dir);
    let file = match opened {
        Ok(file) => file,
        // O_NOFOLLOW with O_DIRECTORY refuses a link with ENOTDIR, or ELOOP.
        Err(e) if matches!(e.raw_os_error(), Some(libc::ELOOP | libc::ENOTDIR)) => {
            let link = fs::symlink_metadata(dir).is_ok_and(|m| m.file_type().is_symlink());
            return Err(refuse(if link { "is a symbolic link" } else { "is not a directory" }));
        }
        Err(e) => return Err(io_error(dir, &e)),
    };
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let meta = file.metadata().map_err(|e| io_error(dir, &e))?;
    if meta.uid() != crate::procfs::euid() {
        return Err(refuse("belongs to another user"));
    }
    file.set_permissions(fs::Permissions::from_mode(0o700)).map_err(|e| io_error(dir, &e))?;
    Ok((meta.dev(), meta.ino()))
}

/// A state file larger than this is not ours.
const MAX_STATE_BYTES: u64 = 16 << 20;

/// One state root.
#[derive(Debug)]
pub(crate) struct Store {
    root: PathBuf,
    /// The root and its directories as fugue opened them (device, inode): a pane that renames
    /// `.state` away and puts a link in its place later is caught before each write.
    opened: Vec<(PathBuf, (u64, u64))>,
}

/// A state file that could not be used, and what became of it.
#[derive(Clone, Debug)]
pub(crate) struct Problem {
    pub(crate) file: PathBuf,
    /// Where the file was moved, when it was set aside.
    pub(crate) moved_to: Option<PathBuf>,
    pub(crate) error: String,
}

/// What a state directory held.
#[derive(Default)]
pub(crate) struct Loaded {
    pub(crate) pipelines: Vec<AgentPipeline>,
    pub(crate) problems: Vec<Problem>,
}

impl Store {
    /// Opens (creating if needed) the state root and its directories. When the root sits inside a
    /// repository, a `.gitignore` of `*` keeps git from ever seeing it.
    /// A root in a repository is in a directory that sandboxed panes may write, so none of it is
    /// followed through a link: a `.state` a pane made a link to a directory elsewhere is refused,
    /// named, and nothing there is touched.
    pub(crate) fn open(root: &Path) -> Result<Store> {
        if let Some(parent) = root.parent() {
            std::fs::create_dir_all(parent).map_err(|e| io_error(parent, &e))?;
        }
        let mut opened = vec![(root.to_path_buf(), own_dir(root)?)];
        let ignore = root.join(".gitignore");
        if std::fs::symlink_metadata(&ignore).is_err() {
            write_atomic(&ignore, b"# fugue's pipeline state; never committed\n*\n")
                .map_err(|e| io_error(&ignore, &e))?;
        }
        for dir in ["pipelines", "runs", "worktrees"].map(|d| root.join(d)) {
            let id = own_dir(&dir)?;
            opened.push((dir, id));
        }
        Ok(Store { root: root.to_path_buf(), opened })
    }

    /// Checks that the root and its directories are still the ones fugue opened, not links or
    /// other directories put in their place.
    fn unchanged(&self) -> Result<()> {
        use std::os::unix::fs::MetadataExt;
        for (dir, id) in &self.opened {
            let now = fs::symlink_metadata(dir).ok().filter(|m| m.is_dir());
            if now.map(|m| (m.dev(), m.ino())) != Some(*id) {
                return Err(Error::new(
                    ErrorKind::InvalidState,
                    format!(
                        "{} is no longer the directory fugue opened (a link or another directory \
                         took its place); fugue keeps its state only in a directory of its own",
                        dir.display()
                    ),
                ));
            }
        }
        Ok(())
    }

    fn pipelines_dir(&self) -> PathBuf {
        self.root.join("pipelines")
    }

    pub(crate) fn state_file(&self, id: &PipelineId) -> PathBuf {
        self.pipelines_dir().join(format!("{id}.json"))
    }

    pub(crate) fn worktree_path(&self, id: &PipelineId) -> Result<PathBuf> {
        self.unchanged()?;
        Ok(self.root.join("worktrees").join(&id[..]))
    }

    /// The private directory for one attempt's files, emptied so nothing of an earlier run is read.
    pub(crate) fn run_dir(&self, id: &PipelineId, name: &str) -> Result<PathBuf> {
        self.unchanged()?;
        let pipeline = self.root.join("runs").join(&id[..]);
        private_dir(&pipeline, Existing::Repair)?;
        let dir = pipeline.join(name);
        if dir.exists() {
            fs::remove_dir_all(&dir).map_err(|e| io_error(&dir, &e))?;
        }
        private_dir(&dir, Existing::Repair)?;
        Ok(dir)
    }

    /// Removes a finished pipeline's run files.
    pub(crate) fn remove_runs(&self, id: &PipelineId) {
        if valid_id(id) {
            let _ = fs::remove_dir_all(self.root.join("runs").join(&id[..]));
        }
    }

    /// Writes the pipeline's state atomically and durably.
    pub(crate) fn save(&self, pipeline: &AgentPipeline) -> Result<()> {
        check_id(&pipeline.id)?;
        let text = serde_json::to_vec_pretty(pipeline)
            .map_err(|e| Error::internal(format!("cannot encode the pipeline state: {e}")))?;
        let path = self.state_file(&pipeline.id);
        self.unchanged()?;
        write_atomic(&path, &text).map_err(|e| io_error(&path, &e))
    }

    /// Reads one pipeline's state.
    pub(crate) fn load(&self, id: &PipelineId) -> Result<AgentPipeline> {
        check_id(id)?;
        let path = self.state_file(id);
        read_state(&path, id)
            .map_err(|e| Error::new(ErrorKind::Io, format!("{}: {e}", path.display())))
    }

    /// Reads every state file. Broken ones are set aside and reported; leftovers of an
    /// interrupted write are removed.
    pub(crate) fn load_all(&self) -> Loaded {
        let mut loaded = Loaded::default();
        let dir = self.pipelines_dir();
        let entries = match fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) => {
                loaded.problems.push(Problem { file: dir, moved_to: None, error: e.to_string() });
                return loaded;
            }
        };
        let mut names: Vec<String> =
            entries.filter_map(|e| e.ok()?.file_name().into_string().ok()).collect();
        crate::sort::sort(&mut names);
        for name in names {
            let path = dir.join(&name);
            if name.starts_with('.') && name.contains(".tmp-") {
                let _ = fs::remove_file(&path);
                continue;
            }
            let Some(id) = name.strip_suffix(".json") else { continue };
            match read_state(&path, id) {
                Ok(pipeline) => loaded.pipelines.push(pipeline),
                Err(Unusable::Newer(error)) => {
                    loaded.problems.push(Problem { file: path, moved_to: None, error })
                }
                Err(Unusable::Corrupt(error)) => loaded.problems.push(set_aside(&path, error)),
            }
        }
        crate::sort::sort_by_key(&mut loaded.pipelines, |p| p.created_at);
        loaded
    }

    /// The finished pipelines' states, oldest first. Unreadable files are skipped here: loading
    /// the root reported them.
    pub(crate) fn load_finished(&self) -> Vec<AgentPipeline> {
        let Ok(entries) = fs::read_dir(self.pipelines_dir()) else { return Vec::new() };
        let mut finished: Vec<AgentPipeline> = entries
            .filter_map(|e| {
                let path = e.ok()?.path();
                let id = path.file_name()?.to_str()?.strip_suffix(".json")?.to_string();
                read_state(&path, &id).ok().filter(|p| p.status.is_terminal())
            })
            .collect();
        crate::sort::sort_by_key(&mut finished, |p| p.created_at);
        finished
    }

    /// Whether `handle` clashes with a pipeline this store has or had: a state, lock, worktree or
    /// runs entry whose id starts with it. An older fugue's id is a whole UUID whose first eight
    /// characters name its branch (`fugue/<first 8>`), so a new handle equal to them is taken too.
    pub(crate) fn taken(&self, handle: &str) -> bool {
        ["pipelines", "worktrees", "runs"].iter().any(|dir| {
            fs::read_dir(self.root.join(dir)).into_iter().flatten().flatten().any(|entry| {
                entry.file_name().to_str().is_some_and(|name| name.starts_with(handle))
            })
        })
    }

    /// Removes the lock file of a pipeline that was never created; `lock` is released with it.
    pub(crate) fn discard_lock(&self, id: &PipelineId, lock: FileLock) {
        if valid_id(id) {
            let _ = fs::remove_file(self.pipelines_dir().join(format!("{id}.lock")));
        }
        drop(lock);
    }

    /// Takes the pipeline's lock; `None` when another process holds it.
    pub(crate) fn lock(&self, id: &PipelineId) -> Result<Option<FileLock>> {
        check_id(id)?;
        self.unchanged()?;
        FileLock::try_take(&self.pipelines_dir().join(format!("{id}.lock")))
    }
}

enum Unusable {
    /// Written by a newer fugue: left alone.
    Newer(String),
    /// Not a pipeline state: set aside.
    Corrupt(String),
}

impl std::fmt::Display for Unusable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unusable::Newer(e) | Unusable::Corrupt(e) => f.write_str(e),
        }
    }
}

fn read_state(path: &Path, id: &str) -> std::result::Result<AgentPipeline, Unusable> {
    if !valid_id(id) {
        return Err(Unusable::Corrupt(format!("{id:?} is not a pipeline id")));
    }
    let size = fs::metadata(path).map_err(|e| Unusable::Corrupt(e.to_string()))?.len();
    if size > MAX_STATE_BYTES {
        return Err(Unusable::Corrupt(format!("{size} bytes is too large for a state file")));
    }
    let text = fs::read(path).map_err(|e| Unusable::Corrupt(e.to_string()))?;
    let value: serde_json::Value = serde_json::from_slice(&text)
        .map_err(|e| Unusable::Corrupt(format!("not valid JSON: {e}")))?;
    let version = value.get("schema_version").and_then(serde_json::Value::as_u64).unwrap_or(0);
    if version > u64::from(SCHEMA_VERSION) {
        return Err(Unusable::Newer(format!(
            "schema_version {version} is newer than this fugue understands ({SCHEMA_VERSION}); \
             left as is"
        )));
    }
    let pipeline: AgentPipeline = serde_json::from_value(value)
        .map_err(|e| Unusable::Corrupt(format!("not a pipeline state: {e}")))?;
    if pipeline.id != id || pipeline.stages.len() != 4 {
        return Err(Unusable::Corrupt("the file's content does not match its name".into()));
    }
    Ok(pipeline)
}

fn set_aside(path: &Path, error: String) -> Problem {
    let ms = crate::ids::unix_ms(std::time::SystemTime::now());
    let mut aside = path.as_os_str().to_owned();
    aside.push(format!(".corrupt-{ms}"));
    let aside = PathBuf::from(aside);
    match fs::rename(path, &aside) {
        Ok(()) => {
            crate::log::warn(&format!(
                "pipeline state {} is unusable ({error}); moved to {}",
                path.display(),
                aside.display()
            ));
            Problem { file: path.to_path_buf(), moved_to: Some(aside), error }
        }
        Err(e) => Problem {
            file: path.to_path_buf(),
            moved_to: None,
            error: format!("{error}; could not move it aside: {e}"),
        },
    }
}

/// A pipeline id: a UUID-like word of letters, digits and dashes. Nothing else becomes a path.
pub(crate) fn valid_id(id: &str) -> bool {
    (1..=64).contains(&id.len())
        && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
        && !id.starts_with('-')
}

fn check_id(id: &str) -> Result<()> {
    if valid_id(id) { Ok(()) } else { Err(Error::invalid(format!("{id:?} is not a pipeline id"))) }
}

/// Replaces `path` with `bytes` atomically: temp file beside it, fsync, rename, fsync the directory.
/// The file is private (0600).
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    // Process-wide: the temporary names must differ across every runtime of the process.
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("state");
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let temp = dir.join(format!(".{name}.tmp-{}-{n}", std::process::id()));
    let written = (|| {
        let mut file = OpenOptions::new().write(true).create_new(true).mode(0o600).open(&temp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        drop(file);
        fs::rename(&temp, path)
    })();
    if let Err(e) = written {
        let _ = fs::remove_file(&temp);
        return Err(e);
    }
    File::open(dir)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    struct Temp(PathBuf);

    impl Temp {
        fn new(name: &str) -> Temp {
            let path =
                std::env::temp_dir().join(format!("fugue-store-{}-{name}", std::process::id()));
            let _ = fs::remove_dir_all(&path);
            Temp(path)
        }
    }

    impl Drop for Temp {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    /// An id as a state file carries it: read as written, whatever it says.
    fn id(id: &str) -> PipelineId {
        serde_json::from_value(id.into()).unwrap()
    }

    fn pipeline(id: &str) -> AgentPipeline {
        crate::agent::record::sample(id, None)
    }

    fn mode(path: &Path) -> u32 {
        fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn saves_privately_and_atomically() {
        let temp = Temp::new("save");
        let store = Store::open(&temp.0).unwrap();
        let mut p = pipeline("aaaa-1");
        store.save(&p).unwrap();
        p.prompt = "second".into();
        store.save(&p).unwrap();
        assert_eq!(store.load(&id("aaaa-1")).unwrap(), p);
        assert_eq!(mode(&store.state_file(&id("aaaa-1"))), 0o600);
        assert_eq!(mode(&store.pipelines_dir()), 0o700);
        assert_eq!(mode(&temp.0.join("runs")), 0o700);
        let names: Vec<_> =
            fs::read_dir(store.pipelines_dir()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, ["aaaa-1.json"], "no temp file is left behind");
        assert!(fs::read_to_string(temp.0.join(".gitignore")).unwrap().contains('*'));
    }

    #[test]
    fn a_failed_write_leaves_the_old_state_whole() {
        let temp = Temp::new("fail");
        let store = Store::open(&temp.0).unwrap();
        let p = pipeline("bbbb");
        store.save(&p).unwrap();
        // The rename target is a non-empty directory now: the rename fails after the temp write.
        let path = store.state_file(&id("bbbb"));
        fs::rename(&path, temp.0.join("saved.json")).unwrap();
        fs::create_dir(&path).unwrap();
        fs::write(path.join("x"), "x").unwrap();
        let mut changed = p.clone();
        changed.prompt = "new".into();
        assert!(store.save(&changed).is_err());
        let leftovers = fs::read_dir(store.pipelines_dir())
            .unwrap()
            .filter(|e| e.as_ref().unwrap().file_name().to_string_lossy().contains(".tmp-"))
            .count();
        assert_eq!(leftovers, 0);
        fs::remove_dir_all(&path).unwrap();
        fs::rename(temp.0.join("saved.json"), &path).unwrap();
        assert_eq!(store.load(&id("bbbb")).unwrap(), p);
    }

    #[test]
    fn corrupt_files_are_set_aside_and_temp_files_removed() {
        let temp = Temp::new("corrupt");
        let store = Store::open(&temp.0).unwrap();
        store.save(&pipeline("good")).unwrap();
        let dir = store.pipelines_dir();
        fs::write(dir.join("torn.json"), "{\"schema_version\": 1, \"id\": \"to").unwrap();
        fs::write(dir.join("other.json"), serde_json::to_vec(&pipeline("mismatch")).unwrap())
            .unwrap();
        fs::write(dir.join(".good.json.tmp-1-1"), "partial").unwrap();
        let mut newer = serde_json::to_value(pipeline("newer")).unwrap();
        newer["schema_version"] = 99.into();
        fs::write(dir.join("newer.json"), newer.to_string()).unwrap();
        let loaded = store.load_all();
        assert_eq!(loaded.pipelines.len(), 1);
        assert_eq!(loaded.pipelines[0].id, "good");
        assert_eq!(loaded.problems.len(), 3, "{:?}", loaded.problems);
        let aside = loaded.problems.iter().filter(|p| p.moved_to.is_some()).count();
        assert_eq!(aside, 2);
        assert!(dir.join("newer.json").exists(), "a newer file is left alone");
        assert!(!dir.join("torn.json").exists());
        assert!(!dir.join(".good.json.tmp-1-1").exists());
        assert!(
            fs::read_dir(&dir).unwrap().any(|e| e
                .unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with("torn.json.corrupt-"))
        );
        // A second load finds nothing new to complain about except the newer file.
        assert_eq!(store.load_all().problems.len(), 1);
    }

    #[test]
    fn ids_cannot_escape_the_directory() {
        for bad in ["", "../x", "a/b", "-rf", ".", "a.json", &"a".repeat(65)] {
            assert!(!valid_id(bad), "{bad:?}");
        }
        let temp = Temp::new("ids");
        let store = Store::open(&temp.0).unwrap();
        // An id no handle reads as, as a state file could carry it, is still refused.
        assert!("../x".parse::<PipelineId>().is_err());
        assert!(store.load(&id("../../etc/passwd")).is_err());
        assert!(store.lock(&id("../x")).is_err());
        assert!(valid_id(&crate::ids::new_id()));
    }

    #[test]
    fn a_new_handle_is_none_an_old_pipeline_starts_with() {
        let dir = Temp::new("handles");
        let store = Store::open(&dir.0).unwrap();
        let old = "1a2b3c4d-0000-4000-8000-000000000000";
        store.save(&pipeline(old)).unwrap();
        assert!(store.taken("1a2b3c4d"), "an old UUID's first eight characters name its branch");
        assert!(!store.taken("5e6f7a8b"));
        assert_eq!(store.load(&id(old)).unwrap().id, old, "an old id is still read");
        let new = crate::ids::new_handle(|h| store.taken(h) || h == "1a2b3c4d");
        store.save(&pipeline(&new)).unwrap();
        assert_eq!(store.load(&id(&new)).unwrap().id, new);
    }

    #[test]
    fn a_lock_is_exclusive_until_dropped() {
        let temp = Temp::new("lock");
        let store = Store::open(&temp.0).unwrap();
        let held = store.lock(&id("cccc")).unwrap().expect("free");
        assert!(store.lock(&id("cccc")).unwrap().is_none());
        drop(held);
        assert!(store.lock(&id("cccc")).unwrap().is_some());
    }

    #[test]
    fn run_dirs_start_empty() {
        let temp = Temp::new("runs");
        let store = Store::open(&temp.0).unwrap();
        let dir = store.run_dir(&id("dddd"), "analyzer-1").unwrap();
        fs::write(dir.join("verdict.json"), "{}").unwrap();
        let again = store.run_dir(&id("dddd"), "analyzer-1").unwrap();
        assert!(!again.join("verdict.json").exists());
        assert_eq!(mode(&again), 0o700);
    }
}
