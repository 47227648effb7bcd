//! Late answers (issue 24): a question whose call ended without an answer (timeout, the
//! call cancelled, the client gone) stays answerable in the panel, and the person's answer
//! waits here for the agent, in `<state>/answers/<id>.json` (folder 0700, files 0600).
//!
//! ```text
//!  him serve ── call ends unanswered ──► writes <id>.json (the question), then
//!            ── withdraw {keep: true} ──► host keeps the card ── answer ──► writes it into <id>.json
//!  get_answer / the same ask again ◄──── reads <id>.json, deletes it once collected
//! ```
//!
//! The agent writes the question (it alone knows the tool and its `HIM_KEEP_MS`, and can
//! tell its caller when the folder cannot be written); a host writes the answer, after
//! checking it against the form it showed; a host that starts offers the open ones again.
//! Every change happens under one lock (`.lock`, flock) and is written whole (a temporary
//! file renamed over the old), so of several browsers the first answer wins and is written
//! once. Never kept: a form with a password field, a permission prompt.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::wire::protocol::{Action, AgentInfo, Answer};

/// The folder under the state directory.
pub const ANSWERS_DIR: &str = "answers";
/// At most this many kept questions and answers at once...
pub const MAX_KEPT: usize = 1000;
/// ...taking at most this many bytes together. A question travels in at most 1 MiB, so
/// this holds 64 of the largest, or a thousand ordinary ones many times over.
pub const MAX_KEPT_BYTES: u64 = 64 * 1024 * 1024;
/// How long a kept question waits when `HIM_KEEP_MS` does not say: a working day and a
/// night, long enough for a person away from the desk.
pub const DEFAULT_KEEP: Duration = Duration::from_secs(24 * 60 * 60);

const LOCK_FILE: &str = ".lock";

/// One kept question, and the person's answer once there is one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    pub id: String,
    /// The ask tool that asked (`ask_text`, …), so the result has its shape.
    pub tool: String,
    pub form: Value,
    pub agent: AgentInfo,
    #[serde(default)]
    pub project: Option<String>,
    pub asked_at_ms: u64,
    pub kept_at_ms: u64,
    pub until_ms: u64,
    #[serde(default)]
    pub answer: Option<KeptAnswer>,
    /// The process still waiting on it, its call having returned `pending` (`agent/pending.rs`):
    /// another `him serve` asking the same question leaves it alone while that one lives.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<Owner>,
}

/// A process, told apart from a later one that reuses its pid by when it started.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Owner {
    pub pid: u32,
    /// Its start time in clock ticks after boot (`/proc/<pid>/stat`, field 22); `None`
    /// where there is no `/proc`, where the pid alone is looked at.
    #[serde(default)]
    pub started: Option<u64>,
}

impl Owner {
    pub fn this_process() -> Owner {
        let pid = std::process::id();
        Owner {
            pid,
            started: start_time(pid),
        }
    }

    /// Whether this is another process, still running.
    pub fn is_another_live_process(&self) -> bool {
        if self.pid == std::process::id() {
            return false;
        }
        match (self.started, start_time(self.pid)) {
            (Some(started), Some(now)) => started == now,
            (Some(_), None) if Path::new("/proc/self/stat").exists() => false,
            _ => {
                let Ok(pid) = i32::try_from(self.pid) else {
                    return false;
                };
                // Signal 0 only checks: the process exists (EPERM: it does, another user's).
                match nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None) {
                    Ok(()) => true,
                    Err(err) => err == nix::errno::Errno::EPERM,
                }
            }
        }
    }
}

/// Process `pid`'s start time, from `/proc/<pid>/stat`: the fields after the command name,
/// which is in parentheses and may hold anything, spaces and parentheses included.
fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after_name = &stat[stat.rfind(')')? + 1..];
    // Field 3 (state) is the first after the name; field 22 is the 20th from there.
    after_name.split_whitespace().nth(19)?.parse().ok()
}

/// The person's answer as the panel sent it, checked against the form by the host.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KeptAnswer {
    pub action: Action,
    #[serde(default)]
    pub values: Option<Map<String, Value>>,
    #[serde(default)]
    pub note: Option<String>,
    pub answered_at_ms: u64,
    /// The answerer's Matrix ID: set by the Matrix bridge only (its relay alone passes it
    /// on), so it also says the answer came over Matrix.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answered_by: Option<String>,
}

impl KeptAnswer {
    pub fn to_answer(&self, id: &str) -> Answer {
        Answer {
            id: id.to_owned(),
            action: self.action,
            values: self.values.clone(),
            note: self.note.clone(),
            answered_by: self.answered_by.clone(),
        }
    }
}

/// What the store holds for one id.
#[derive(Debug, Clone, PartialEq)]
pub enum Lookup {
    /// Kept, not answered yet.
    Open(Box<Record>),
    /// Kept and answered: the answer waits to be collected.
    Answered(Box<Record>),
    /// It was kept, and its time ran out (the file is gone now).
    Expired,
    /// Nothing under that id: never kept, collected already, or expired long ago.
    Unknown,
}

#[derive(Debug)]
pub enum KeepError {
    /// No state directory (platform/state_dir.rs says why).
    NoStateDir(crate::platform::state_dir::NoStateDir),
    Io {
        path: PathBuf,
        err: io::Error,
    },
    Folder(crate::wire::runtime::RuntimeError),
    /// The store holds its most already.
    Full {
        count: usize,
        bytes: u64,
    },
    /// Nothing is kept under that id (collected, expired, or never kept).
    Gone,
    /// Another browser's answer was written first.
    AlreadyAnswered,
}

impl std::fmt::Display for KeepError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KeepError::NoStateDir(why) => write!(f, "there is no folder to keep it in: {why}"),
            KeepError::Io { path, err } => write!(f, "{} cannot be written: {err}", path.display()),
            KeepError::Folder(err) => write!(f, "{err}"),
            KeepError::Full { count, bytes } => write!(
                f,
                "the store of kept answers is full ({count} questions, {bytes} bytes; at most \
                 {MAX_KEPT} or {MAX_KEPT_BYTES} bytes)"
            ),
            KeepError::Gone => write!(
                f,
                "the question is no longer kept (its agent collected it, or it expired)"
            ),
            KeepError::AlreadyAnswered => {
                write!(f, "the question was answered already, in another browser")
            }
        }
    }
}

impl std::error::Error for KeepError {}

/// The answer store: one folder of `<id>.json` files.
#[derive(Debug, Clone, PartialEq)]
pub struct Store {
    dir: PathBuf,
}

impl Store {
    /// The store under the state directory `state_dir`.
    pub fn at(state_dir: &Path) -> Store {
        Store {
            dir: state_dir.join(ANSWERS_DIR),
        }
    }

    /// This process's store (DESIGN.md §1's state directory).
    pub fn locate() -> Result<Store, KeepError> {
        crate::platform::state_dir::state_dir()
            .map(|dir| Store::at(&dir))
            .map_err(KeepError::NoStateDir)
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn path(&self, id: &str) -> PathBuf {
        self.dir.join(format!("{id}.json"))
    }

    /// Holds the store's lock until dropped, creating the folder (0700) first.
    fn lock(&self) -> Result<nix::fcntl::Flock<File>, KeepError> {
        crate::wire::runtime::ensure_private_dir(&self.dir).map_err(KeepError::Folder)?;
        let path = self.dir.join(LOCK_FILE);
        let io_err = |err| KeepError::Io {
            path: path.clone(),
            err,
        };
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(io_err)?;
        nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusive)
            .map_err(|(_, errno)| io_err(io::Error::from(errno)))
    }

    /// Keeps `record` (unanswered) unless a record of its id is kept already, whose expiry
    /// then stands. Returns when it expires.
    pub fn keep(&self, record: &Record, now_ms: u64) -> Result<u64, KeepError> {
        let _lock = self.lock()?;
        if let Some(kept) = self.read_unlocked(&record.id)
            && kept.until_ms > now_ms
        {
            return Ok(kept.until_ms);
        }
        let text = to_text(record);
        self.check_room(text.len() as u64, now_ms, true)?;
        self.write(&record.id, &text)?;
        Ok(record.until_ms)
    }

    /// Writes the person's answer to a kept question: once, by the first browser.
    pub fn answer(&self, answer: &Answer, now_ms: u64) -> Result<(), KeepError> {
        if !crate::platform::random::is_question_id(&answer.id) {
            return Err(KeepError::Gone);
        }
        let _lock = self.lock()?;
        let mut record = match self.read_unlocked(&answer.id) {
            Some(record) if record.until_ms <= now_ms => return Err(KeepError::Gone),
            Some(record) if record.answer.is_some() => return Err(KeepError::AlreadyAnswered),
            Some(record) => record,
            None => return Err(KeepError::Gone),
        };
        let before = to_text(&record).len() as u64;
        record.answer = Some(KeptAnswer {
            action: answer.action,
            values: answer.values.clone(),
            note: answer.note.clone(),
            answered_at_ms: now_ms,
            answered_by: answer.answered_by.clone(),
        });
        let text = to_text(&record);
        self.check_room((text.len() as u64).saturating_sub(before), now_ms, false)?;
        self.write(&record.id, &text)
    }

    /// What is kept under `id`; an expired record is removed as it is found.
    pub fn lookup(&self, id: &str, now_ms: u64) -> Lookup {
        self.lookup_taking(id, now_ms, false)
    }

    /// As [`Store::lookup`], and an answer found is removed under the same lock: of two
    /// collectors at once (two sessions, or `get_answer` beside the same question asked
    /// again), only one gets it.
    pub fn take(&self, id: &str, now_ms: u64) -> Lookup {
        self.lookup_taking(id, now_ms, true)
    }

    fn lookup_taking(&self, id: &str, now_ms: u64, take: bool) -> Lookup {
        if !crate::platform::random::is_question_id(id) || !self.dir.is_dir() {
            return Lookup::Unknown;
        }
        let Ok(_lock) = self.lock() else {
            return Lookup::Unknown;
        };
        match self.read_unlocked(id) {
            None => Lookup::Unknown,
            Some(record) if record.until_ms <= now_ms => {
                let _ = std::fs::remove_file(self.path(id));
                Lookup::Expired
            }
            Some(record) if record.answer.is_some() => {
                if take {
                    let _ = std::fs::remove_file(self.path(id));
                }
                Lookup::Answered(Box::new(record))
            }
            Some(record) => Lookup::Open(Box::new(record)),
        }
    }

    /// Removes what is kept under `id` (collected, or the question ended otherwise).
    pub fn remove(&self, id: &str) {
        if crate::platform::random::is_question_id(id) && self.dir.is_dir() {
            let _lock = self.lock();
            let _ = std::fs::remove_file(self.path(id));
        }
    }

    /// Every unexpired record, oldest first; expired ones are removed on the way.
    pub fn list(&self, now_ms: u64) -> Vec<Record> {
        if !self.dir.is_dir() {
            return Vec::new();
        }
        let Ok(_lock) = self.lock() else {
            return Vec::new();
        };
        let mut records: Vec<Record> = self
            .ids()
            .into_iter()
            .filter_map(|id| self.read_unlocked(&id))
            .filter(|record| {
                let live = record.until_ms > now_ms;
                if !live {
                    let _ = std::fs::remove_file(self.path(&record.id));
                }
                live
            })
            .collect();
        records.sort_by_key(|r| (r.kept_at_ms, r.id.clone()));
        records
    }

    /// The question kept for the same call: the same tool, form, agent and project.
    pub fn find(
        &self,
        tool: &str,
        form: &Value,
        agent: &str,
        project: Option<&str>,
        now_ms: u64,
    ) -> Option<Record> {
        self.list(now_ms).into_iter().find(|r| {
            r.tool == tool
                && &r.form == form
                && r.agent.name == agent
                && r.project.as_deref() == project
                // Left open by another `him serve` that still waits on it (two terminals of
                // one client in one project): that one's, not to be taken over.
                && !r.owner.as_ref().is_some_and(Owner::is_another_live_process)
        })
    }

    fn ids(&self) -> Vec<String> {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        entries
            .flatten()
            .filter_map(|entry| {
                let name = entry.file_name().into_string().ok()?;
                let id = name.strip_suffix(".json")?;
                crate::platform::random::is_question_id(id).then(|| id.to_owned())
            })
            .collect()
    }

    fn read_unlocked(&self, id: &str) -> Option<Record> {
        let bytes = std::fs::read(self.path(id)).ok()?;
        match serde_json::from_slice::<Record>(&bytes) {
            Ok(record) if record.id == id => Some(record),
            Ok(_) | Err(_) => {
                tracing::warn!(id, "ignoring an unreadable kept answer");
                None
            }
        }
    }

    /// Whether `more` bytes fit, and for a `new` record one more file: an answer to a kept
    /// question adds no file, so a store full of questions still takes their answers.
    /// Expired records are removed first, so only live ones count.
    fn check_room(&self, more: u64, now_ms: u64, new: bool) -> Result<(), KeepError> {
        let mut count = 0usize;
        let mut bytes = 0u64;
        for id in self.ids() {
            let path = self.path(&id);
            match self.read_unlocked(&id) {
                Some(record) if record.until_ms <= now_ms => {
                    let _ = std::fs::remove_file(&path);
                }
                _ => {
                    count += 1;
                    bytes += std::fs::metadata(&path).map_or(0, |m| m.len());
                }
            }
        }
        if (new && count >= MAX_KEPT) || bytes + more > MAX_KEPT_BYTES {
            return Err(KeepError::Full { count, bytes });
        }
        Ok(())
    }

    fn write(&self, id: &str, text: &str) -> Result<(), KeepError> {
        let path = self.path(id);
        crate::platform::file::replace(&path, text, 0o600)
            .map(|_| ())
            .map_err(|err| KeepError::Io { path, err })
    }
}

fn to_text(record: &Record) -> String {
    // Serialising a record cannot fail: every key is a string.
    serde_json::to_string(record).unwrap_or_default()
}

/// Unix milliseconds as RFC 3339 in UTC (`2026-12-02T10:04:05.123Z`), the form `answered_at`
/// takes in a result.
pub fn rfc3339(unix_ms: u64) -> String {
    let secs = unix_ms / 1000;
    let (days, rest) = (secs / 86_400, secs % 86_400);
    // Days to a civil date (Howard Hinnant's algorithm, for dates after 1970).
    let z = days as i64 + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60,
        unix_ms % 1000
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const ID: &str = "0123456789abcdef0123456789abcdef";

    #[test]
    fn an_owner_is_live_while_its_process_runs_and_not_once_it_ended_or_its_pid_is_reused() {
        assert!(!Owner::this_process().is_another_live_process(), "this one");
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let owner = Owner {
            pid: child.id(),
            started: start_time(child.id()),
        };
        assert!(owner.started.is_some(), "Linux has /proc");
        assert!(owner.is_another_live_process());
        // The same pid, started at another time: another process.
        let reused = Owner {
            started: owner.started.map(|t| t + 1),
            ..owner.clone()
        };
        assert!(!reused.is_another_live_process());
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(!owner.is_another_live_process());
    }

    fn record(id: &str, until_ms: u64) -> Record {
        Record {
            id: id.into(),
            tool: "ask_text".into(),
            form: json!({"title": "Name?", "fields": [{"name": "answer", "type": "text", "label": "Name?"}]}),
            agent: AgentInfo {
                name: "agent".into(),
                title: None,
                version: None,
                via: None,
            },
            project: Some("p".into()),
            asked_at_ms: 1,
            kept_at_ms: 2,
            until_ms,
            answer: None,
            owner: None,
        }
    }

    fn submit(id: &str, text: &str) -> Answer {
        Answer {
            id: id.into(),
            action: Action::Submit,
            values: json!({"answer": text}).as_object().cloned(),
            note: None,
            answered_by: None,
        }
    }

    #[test]
    fn a_kept_question_takes_one_answer_which_is_collected_once() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::at(dir.path());
        assert_eq!(store.keep(&record(ID, 100), 10).unwrap(), 100);
        assert!(matches!(store.lookup(ID, 10), Lookup::Open(_)));
        store.answer(&submit(ID, "Ada"), 20).unwrap();
        assert!(matches!(
            store.answer(&submit(ID, "Bob"), 21),
            Err(KeepError::AlreadyAnswered)
        ));
        let Lookup::Answered(kept) = store.lookup(ID, 30) else {
            panic!("not answered")
        };
        let answer = kept.answer.unwrap();
        assert_eq!(answer.values.unwrap()["answer"], "Ada");
        assert_eq!(answer.answered_at_ms, 20);
        // Taken once: a second collector finds nothing.
        assert!(matches!(store.take(ID, 30), Lookup::Answered(_)));
        assert_eq!(store.take(ID, 30), Lookup::Unknown);
    }

    #[test]
    fn the_folder_is_private_and_each_file_is_the_owners_alone() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let store = Store::at(dir.path());
        store.keep(&record(ID, 100), 10).unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(store.dir()), 0o700);
        assert_eq!(mode(&store.path(ID)), 0o600);
    }

    #[test]
    fn an_expired_question_is_reported_once_and_removed() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::at(dir.path());
        store.keep(&record(ID, 100), 10).unwrap();
        assert!(matches!(
            store.answer(&submit(ID, "late"), 100),
            Err(KeepError::Gone)
        ));
        assert_eq!(store.lookup(ID, 100), Lookup::Expired);
        assert!(!store.path(ID).exists());
        assert_eq!(store.lookup(ID, 100), Lookup::Unknown);
    }

    #[test]
    fn keeping_again_keeps_the_first_expiry() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::at(dir.path());
        store.keep(&record(ID, 100), 10).unwrap();
        assert_eq!(store.keep(&record(ID, 500), 50).unwrap(), 100);
    }

    #[test]
    fn the_store_holds_at_most_a_thousand_questions() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::at(dir.path());
        for n in 0..MAX_KEPT {
            store.keep(&record(&format!("{n:032x}"), 100), 10).unwrap();
        }
        let over = store.keep(&record(&format!("{:032x}", MAX_KEPT), 100), 10);
        assert!(
            matches!(
                over,
                Err(KeepError::Full {
                    count: MAX_KEPT,
                    ..
                })
            ),
            "{over:?}"
        );
        // A full store still takes the answer to a question it keeps: that adds no file.
        let first = format!("{:032x}", 0);
        store.answer(&submit(&first, "Ada"), 20).unwrap();
        // Expired ones make room.
        store
            .keep(&record(&format!("{:032x}", MAX_KEPT), 1000), 100)
            .unwrap();
    }

    #[test]
    fn the_same_call_finds_its_kept_question() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::at(dir.path());
        let kept = record(ID, 100);
        store.keep(&kept, 10).unwrap();
        let found = store.find("ask_text", &kept.form, "agent", Some("p"), 10);
        assert_eq!(found.map(|r| r.id), Some(ID.to_owned()));
        assert!(
            store
                .find("ask_text", &kept.form, "other", Some("p"), 10)
                .is_none()
        );
        assert!(
            store
                .find("ask_form", &kept.form, "agent", Some("p"), 10)
                .is_none()
        );
        assert!(
            store
                .find("ask_text", &kept.form, "agent", None, 10)
                .is_none()
        );
    }

    #[test]
    fn times_read_as_rfc_3339_in_utc() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339(1_796_036_645_123), "2026-11-30T11:04:05.123Z");
        assert_eq!(rfc3339(951_782_400_000), "2000-02-29T00:00:00.000Z");
    }
}
