//! What the bridge keeps in `<state>/matrix/` (0700, each file 0600), never in a log:
//!
//! - `session.json`: the homeserver, the bot's Matrix ID, device and access token;
//! - `store/`: matrix-sdk's SQLite stores (the device's keys, the rooms, the sync position);
//! - `room.json`: the room, who may answer there, whether it may be unencrypted (written
//!   last by `him matrix room`: with it, Matrix is set up, `him::agent::matrix::configured`);
//! - `posted.json`: the questions posted and still open (their events; a form's progress in
//!   its thread), so a bridge started again goes on with them;
//! - `status.json`: what the doctor reads of the store (the last sync, who is verified);
//! - `bridge.log`: the bridge's log, when `him serve` or `him ask` started it.

use std::collections::HashSet;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use matrix_sdk::ruma::{OwnedUserId, UserId};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use him::BoxError;

pub const SESSION_FILE: &str = "session.json";
pub const STORE_DIR: &str = "store";

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Session {
    pub homeserver: String,
    pub user_id: String,
    pub device_id: String,
    pub access_token: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RoomConfig {
    pub room_id: String,
    /// Only their events count as answers.
    pub answerers: Vec<String>,
    #[serde(default)]
    pub allow_unencrypted: bool,
}

impl RoomConfig {
    /// The answerers as Matrix user ids; an id that is not one is an error naming it.
    pub fn answerer_ids(&self) -> Result<HashSet<OwnedUserId>, matrix_sdk::ruma::IdParseError> {
        self.answerers
            .iter()
            .map(|u| UserId::parse(u.as_str()))
            .collect()
    }
}

/// `<state>/matrix`, made private.
pub fn dir() -> Result<PathBuf, BoxError> {
    let dir = him::agent::matrix::state_dir()
        .ok_or("no state directory: give this user a home directory in the password database, or set HIM_STATE_DIR to an absolute path")?;
    him::wire::runtime::ensure_private_dir(&dir)?;
    Ok(dir)
}

pub fn read<T: DeserializeOwned>(dir: &Path, name: &str, fix: &str) -> Result<T, BoxError> {
    let path = dir.join(name);
    let text = std::fs::read_to_string(&path)
        .map_err(|err| format!("cannot read {}: {err}; {fix}", path.display()))?;
    serde_json::from_str(&text)
        .map_err(|err| format!("{} is not as him wrote it: {err}; {fix}", path.display()).into())
}

/// Writes `value` as `dir/name`, 0600, whole or not at all (a temporary file renamed).
pub fn write<T: Serialize>(dir: &Path, name: &str, value: &T) -> Result<PathBuf, BoxError> {
    let path = dir.join(name);
    let partial = dir.join(format!(".{name}.partial"));
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&partial)?;
    file.write_all(serde_json::to_string_pretty(value)?.as_bytes())?;
    file.sync_all()?;
    std::fs::rename(&partial, &path)?;
    Ok(path)
}

pub const LOGIN_FIRST: &str = "run `him matrix login --homeserver URL --user @bot:server` first";
pub const ROOM_FIRST: &str = "run `him matrix room --invite @you:server` first";
