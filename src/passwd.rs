//! The password database's entry of a user, as `getpwuid(3)` gives it, read from `/etc/passwd`.
//!
//! portable-pty asks `getpwuid` for the login shell when `$SHELL` is unset. In a static binary,
//! glibc's `getpwuid` brings its name-service switch along (160 KB, and modules it can only load
//! from a glibc of the same version at run time); this definition stands in its place at link
//! time, so the entry comes from the file every Linux system has, as the `files` service would
//! give it. A user the file does not name has no entry (null), and portable-pty falls back to
//! `/bin/sh`, as it does when glibc finds none.

use parking_lot::Mutex;
use std::collections::HashMap;
use std::ffi::CString;

/// One user's entry, kept for the rest of the process: `getpwuid` hands out a pointer into it,
/// which stays valid however many calls follow (glibc's is overwritten by the next call).
struct Entry {
    strings: [CString; 5],
    passwd: libc::passwd,
}

// SAFETY: the pointers in `passwd` point into `strings`, which the entry owns and never changes;
// nothing writes through them, so the entry may be reached from any thread.
unsafe impl Send for Entry {}
// SAFETY: as for Send: the entry is never changed once built.
unsafe impl Sync for Entry {}

/// Process-wide: the user database, a fact of the host, read once per user asked about.
static ENTRIES: Mutex<Option<HashMap<libc::uid_t, &'static Entry>>> = Mutex::new(None);

/// The entry of `uid` in /etc/passwd, or null.
///
/// # Safety
///
/// Callable from C with any uid; the result is null or points to an entry that lives as long as
/// the process.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn getpwuid(uid: libc::uid_t) -> *mut libc::passwd {
    let mut entries = ENTRIES.lock();
    let entries = entries.get_or_insert_with(HashMap::new);
    if let Some(entry) = entries.get(&uid) {
        return std::ptr::from_ref(&entry.passwd).cast_mut();
    }
    let Some(entry) = read_entry(uid) else { return std::ptr::null_mut() };
    let entry: &'static Entry = Box::leak(entry);
    entries.insert(uid, entry);
    std::ptr::from_ref(&entry.passwd).cast_mut()
}

/// `uid`'s line of /etc/passwd (`name:password:uid:gid:gecos:dir:shell`) as an entry.
fn read_entry(uid: libc::uid_t) -> Option<Box<Entry>> {
    let text = std::fs::read_to_string("/etc/passwd").ok()?;
    text.lines().find_map(|line| parse(line).filter(|fields| fields.uid == uid)).map(Fields::entry)
}

/// The fields of one line.
#[derive(Debug, PartialEq, Eq)]
struct Fields<'a> {
    name: &'a str,
    password: &'a str,
    uid: libc::uid_t,
    gid: libc::gid_t,
    gecos: &'a str,
    dir: &'a str,
    shell: &'a str,
}

fn parse(line: &str) -> Option<Fields<'_>> {
    let mut parts = line.split(':');
    let mut next = || parts.next();
    let (name, password, uid, gid) = (next()?, next()?, next()?, next()?);
    let (gecos, dir, shell) = (next()?, next()?, next()?);
    let fields = Fields {
        name,
        password,
        uid: uid.parse().ok()?,
        gid: gid.parse().ok()?,
        gecos,
        dir,
        shell,
    };
    Some(fields).filter(|_| next().is_none())
}

impl Fields<'_> {
    fn entry(self) -> Box<Entry> {
        let c = |s: &str| CString::new(s).unwrap_or_default();
        let strings = [c(self.name), c(self.password), c(self.gecos), c(self.dir), c(self.shell)];
        let mut entry = Box::new(Entry {
            strings,
            // SAFETY: `passwd` is plain data; every pointer is set just below.
            passwd: unsafe { std::mem::zeroed() },
        });
        let [name, password, gecos, dir, shell] = entry.strings.each_ref().map(|s| s.as_ptr());
        entry.passwd = libc::passwd {
            pw_name: name.cast_mut(),
            pw_passwd: password.cast_mut(),
            pw_uid: self.uid,
            pw_gid: self.gid,
            pw_gecos: gecos.cast_mut(),
            pw_dir: dir.cast_mut(),
            pw_shell: shell.cast_mut(),
        };
        entry
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CStr;

    #[test]
    fn a_line_is_read_field_by_field_and_a_bad_one_is_none() {
        let line = "ann:x:1000:100:Ann A,,,:/home/ann:/usr/bin/fish";
        let fields = parse(line).unwrap();
        assert_eq!((fields.name, fields.uid, fields.gid), ("ann", 1000, 100));
        assert_eq!((fields.dir, fields.shell), ("/home/ann", "/usr/bin/fish"));
        assert_eq!(parse("ann:x:1000:100:Ann:/home/ann"), None);
        assert_eq!(parse("ann:x:uid:100:Ann:/home/ann:/bin/sh"), None);
        assert_eq!(parse("ann:x:1000:100:Ann:/home/ann:/bin/sh:extra"), None);
    }

    #[test]
    fn the_users_entry_is_the_files_and_stays_where_it_was() {
        let uid = procfs_uid();
        let text = std::fs::read_to_string("/etc/passwd").unwrap();
        let line = text.lines().find_map(|l| parse(l).filter(|f| f.uid == uid)).unwrap();
        // SAFETY: getpwuid returns null or an entry that lives as long as the process.
        let first = unsafe { getpwuid(uid) };
        assert!(!first.is_null());
        // SAFETY: not null, and its strings are NUL-terminated copies of the file's.
        let shell = unsafe { CStr::from_ptr((*first).pw_shell) };
        assert_eq!(shell.to_str().unwrap(), line.shell);
        // SAFETY: as above.
        assert_eq!(unsafe { getpwuid(uid) }, first, "a second call moved the entry");
        // SAFETY: as above.
        assert!(unsafe { getpwuid(u32::MAX - 7) }.is_null());
    }

    fn procfs_uid() -> libc::uid_t {
        // SAFETY: getuid cannot fail.
        unsafe { libc::getuid() }
    }
}
