//! Ids and times as fugue writes them: a handle fugue hands out (8 characters), a long random id
//! for names no one types, an id's short form for people, a time in Unix milliseconds or in ISO
//! 8601 (UTC, as MCP's tasks carry them). The handles of panes, windows, sessions and pipelines
//! are each their own type (`PaneId`, ...), so one cannot be passed where another is meant; each
//! reads and writes as its bare string, so answers and records on disk carry the same bytes.
//!
//! A leaf: panes, the mux, live shells, agent pipelines and the front-ends all name things with
//! these, so they live below all of them rather than in any one.

use std::time::{SystemTime, UNIX_EPOCH};

/// A new random id no one types (a UUID v4): the part of a private directory's name or a nonce
/// that must not repeat across processes.
pub(crate) fn new_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// The length of a handle fugue hands out.
pub(crate) const HANDLE_LEN: usize = 8;

/// A new handle for something fugue hands out (a pane, window, session, pipeline): 8 lowercase
/// hex digits of a UUID v4, drawn again while `taken` says it clashes with one in use. Every
/// answer and most requests carry one, so it is short: a UUID cost ~60 bytes a round trip.
pub(crate) fn new_handle(taken: impl Fn(&str) -> bool) -> String {
    loop {
        let simple = uuid::Uuid::new_v4().simple().to_string();
        let handle = simple[..HANDLE_LEN].to_string();
        if !taken(&handle) {
            return handle;
        }
    }
}

/// Why a string is no handle: empty, too long, or with a character no handle has.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BadHandle(pub(crate) String);

impl std::fmt::Display for BadHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "not an id: {:?}", self.0)
    }
}

/// The longest handle read back: a UUID's 36 characters, which pipelines recorded before handles
/// were 8 hex digits still carry on disk.
const LONGEST_HANDLE: usize = 36;

/// Whether `s` reads as a handle: 1 to 36 ASCII letters, digits or dashes.
fn is_handle(s: &str) -> bool {
    (1..=LONGEST_HANDLE).contains(&s.len())
        && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
}

/// Declares a handle type: a string newtype, serialized as the bare string, read with `FromStr`,
/// shown with `Display`, and compared with and borrowed as the `str` it holds (a lookup by key
/// takes an id or a name, both `&str`).
macro_rules! handle {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[derive(serde::Serialize, serde::Deserialize)]
        #[serde(transparent)]
        pub(crate) struct $name(String);

        impl $name {
            /// A new one, drawn again while `taken` says it clashes with one in use.
            pub(crate) fn new(taken: impl Fn(&str) -> bool) -> $name {
                $name(new_handle(taken))
            }
        }

        impl std::str::FromStr for $name {
            type Err = BadHandle;
            fn from_str(s: &str) -> Result<$name, BadHandle> {
                if is_handle(s) { Ok($name(s.to_string())) } else { Err(BadHandle(s.to_string())) }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl std::ops::Deref for $name {
            type Target = str;
            fn deref(&self) -> &str {
                &self.0
            }
        }

        impl std::borrow::Borrow<str> for $name {
            fn borrow(&self) -> &str {
                &self.0
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.0 == other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.0 == *other
            }
        }

        impl PartialEq<String> for $name {
            fn eq(&self, other: &String) -> bool {
                self.0 == *other
            }
        }

        impl From<$name> for String {
            fn from(id: $name) -> String {
                id.0
            }
        }
    };
}

handle!(
    /// A pane's handle.
    PaneId
);
handle!(
    /// A window's handle.
    WindowId
);
handle!(
    /// A session's handle.
    SessionId
);
handle!(
    /// An agent pipeline's handle (36 characters in pipelines recorded before handles were short).
    PipelineId
);

/// The first eight characters of an id: enough to tell ids apart where a person reads them (a
/// window, a branch, a thread name).
pub(crate) fn short_id(id: &str) -> &str {
    id.char_indices().nth(8).map_or(id, |(end, _)| &id[..end])
}

/// `t` in milliseconds since the Unix epoch (0 before it).
pub(crate) fn unix_ms(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

/// `t` as ISO 8601 in UTC, to the millisecond: `2026-11-26T14:30:00.123Z`.
pub(crate) fn iso8601(t: SystemTime) -> String {
    let since = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs();
    let (year, month, day) = civil(secs / 86_400);
    let rest = secs % 86_400;
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60,
        since.subsec_millis()
    )
}

/// The calendar date of a day counted from 1970-01-01 (Howard Hinnant's `civil_from_days`, for
/// days on or after the epoch).
fn civil(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let (era, doe) = (z / 146_097, z % 146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + u64::from(month <= 2), month, day)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_handle_is_eight_hex_digits_drawn_again_on_a_clash() {
        let first = new_handle(|_| false);
        assert_eq!(first.len(), 8);
        assert!(first.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)));
        let tries = std::cell::Cell::new(0);
        let second = new_handle(|h| {
            tries.set(tries.get() + 1);
            tries.get() < 3 || h == first
        });
        assert!(tries.get() >= 3 && second != first, "drawn again while it clashed");
    }

    #[test]
    fn a_handle_reads_and_writes_as_its_bare_string() {
        let id: PaneId = "0a1b2c3d".parse().unwrap();
        assert_eq!(id.to_string(), "0a1b2c3d");
        assert_eq!(serde_json::to_string(&id).unwrap(), "\"0a1b2c3d\"");
        let back: PaneId = serde_json::from_str("\"0a1b2c3d\"").unwrap();
        assert_eq!(back, id);
        let old = "6f1c0e2a-3b4d-4e5f-8a9b-0c1d2e3f4a5b";
        assert_eq!(&*old.parse::<PipelineId>().unwrap(), old);
        for bad in ["", "a b", "x".repeat(37).as_str(), "host:0a1b2c3d"] {
            assert_eq!(bad.parse::<WindowId>(), Err(BadHandle(bad.to_string())), "{bad:?}");
        }
    }

    #[test]
    fn times_are_iso_8601_in_utc() {
        assert_eq!(iso8601(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        let t = UNIX_EPOCH + Duration::from_millis(1_795_703_400_123);
        assert_eq!(iso8601(t), "2026-11-26T14:30:00.123Z");
        assert_eq!(civil(11_016), (2000, 2, 29));
    }
}
