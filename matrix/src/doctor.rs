//! `him matrix doctor` (and the Matrix section of `him doctor`, which runs it): is the Matrix
//! leg set up and working, and how to fix each thing that is not.
//!
//! It asks the homeserver with the bot's token over the client API, and never syncs: a sync
//! here would take the to-device messages (room keys) that the bridge, sharing the store,
//! must read. What only the bridge's store knows (the last sync, whether the bot's device is
//! cross-signed) comes from `status.json`, which the bridge writes after each sync.

use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use him::BoxError;
use him::install::doctor::{Finding, Section, Status, render};

use super::store::{self, RoomConfig, SESSION_FILE, Session};

/// What the bridge saw at its last sync (`<state>/matrix/status.json`).
pub const STATUS_FILE: &str = "status.json";

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct BridgeStatus {
    /// Unix ms of the bridge's last successful sync (0: none yet).
    pub synced_at_ms: u64,
    /// The bot's device is cross-signed by its account (`him matrix login`), so a person who
    /// verified the bot trusts its messages.
    pub device_verified: bool,
    /// The answerers the bot has verified, and who verified it in the same exchange (`him
    /// matrix verify`, the emoji comparison is mutual).
    #[serde(default)]
    pub verified: Vec<String>,
}

/// What the store says now (the bot's device cross-signed, the answerers verified), written
/// to `status.json` for the doctor, which never opens the store: the bridge may hold it.
/// `bridge_synced`: the bridge just synced (`login` and `verify` keep the bridge's last time).
pub async fn observe_and_write(
    dir: &Path,
    client: &matrix_sdk::Client,
    answerers: &[String],
    bridge_synced: bool,
) {
    let mut verified = Vec::new();
    for answerer in answerers {
        let Ok(user) = matrix_sdk::ruma::UserId::parse(answerer.as_str()) else {
            continue;
        };
        if let Ok(Some(identity)) = client.encryption().get_user_identity(&user).await
            && identity.is_verified()
        {
            verified.push(answerer.clone());
        }
    }
    let synced_at_ms = if bridge_synced {
        him::platform::clock::unix_ms()
    } else {
        store::read::<BridgeStatus>(dir, STATUS_FILE, "").map_or(0, |s| s.synced_at_ms)
    };
    let status = BridgeStatus {
        synced_at_ms,
        device_verified: super::setup::cross_signed(client).await,
        verified,
    };
    if let Err(err) = store::write(dir, STATUS_FILE, &status) {
        tracing::warn!("cannot write the Matrix status: {err}");
    }
}

/// How long one request to the homeserver may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

pub fn run() -> Result<ExitCode, BoxError> {
    let findings = super::runtime()?.block_on(findings());
    let failed = findings.iter().any(|f| f.status == Status::Fail);
    let section = Section {
        title: "Matrix (answering from your phone)",
        findings,
    };
    // This command exists to print its report.
    use std::io::Write;
    std::io::stdout()
        .lock()
        .write_all(render(&[section]).as_bytes())?;
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

async fn findings() -> Vec<Finding> {
    let dir = match store::dir() {
        Ok(dir) => dir,
        Err(err) => return vec![Finding::new(Status::Fail, err.to_string())],
    };
    let session: Session = match store::read(&dir, SESSION_FILE, store::LOGIN_FIRST) {
        Ok(session) => session,
        Err(_) => {
            return vec![
                Finding::new(Status::Skip, "Matrix is not set up (no bot is logged in)").fix(
                    "him matrix login --homeserver https://matrix.org --user @your-him-bot:matrix.org",
                ),
            ];
        }
    };
    let api = Api::new(&session);
    let mut out = Vec::new();
    match api.get("account/whoami").await {
        Ok(me) if me["user_id"] == session.user_id.as_str() => out.push(Finding::new(
            Status::Pass,
            format!(
                "logged in as {} (device {}) on {}",
                session.user_id, session.device_id, session.homeserver
            ),
        )),
        Ok(other) => {
            out.push(
                Finding::new(
                    Status::Fail,
                    format!("the homeserver says the token is not {}'s", session.user_id),
                )
                .detail(other.to_string())
                .fix(login_again(&session)),
            );
            return out;
        }
        Err(Failure::Refused(why)) => {
            out.push(
                Finding::new(Status::Fail, "the bot's login is no longer valid")
                    .detail(why)
                    .fix(login_again(&session)),
            );
            return out;
        }
        Err(Failure::Unreachable(why)) => {
            out.push(
                Finding::new(
                    Status::Fail,
                    format!("cannot reach the homeserver {}", session.homeserver),
                )
                .detail(why)
                .fix("check the network and the homeserver's URL; the other channels keep working meanwhile"),
            );
            return out;
        }
    }
    let room: RoomConfig = match store::read(&dir, him::agent::matrix::ROOM_FILE, store::ROOM_FIRST)
    {
        Ok(room) => room,
        Err(_) => {
            out.push(
                Finding::new(Status::Fail, "no room is set up for the questions")
                    .fix("him matrix room --invite @you:your.server"),
            );
            return out;
        }
    };
    out.extend(room_findings(&api, &room, &session).await);
    out.extend(bridge_findings(&dir, &room));
    out
}

fn login_again(session: &Session) -> String {
    format!(
        "him matrix login --homeserver {} --user {}",
        session.homeserver, session.user_id
    )
}

async fn room_findings(api: &Api, room: &RoomConfig, session: &Session) -> Vec<Finding> {
    let mut out = Vec::new();
    let id = &room.room_id;
    let members = match api.get(&format!("rooms/{}/members", encode(id))).await {
        Ok(members) => members,
        Err(err) => {
            out.push(
                Finding::new(Status::Fail, format!("the bot is not in the room {id}"))
                    .detail(err.to_string())
                    .fix(format!(
                        "him matrix room --room '{id}' (or make a new one: him matrix room --invite @you:your.server)"
                    )),
            );
            return out;
        }
    };
    let membership = |user: &str| -> Option<String> {
        members["chunk"].as_array()?.iter().find_map(|event| {
            (event["state_key"] == user)
                .then(|| event["content"]["membership"].as_str().map(str::to_owned))
                .flatten()
        })
    };
    match membership(&session.user_id).as_deref() {
        Some("join") => out.push(Finding::new(
            Status::Pass,
            format!("the bot is in the room {id}"),
        )),
        other => out.push(
            Finding::new(Status::Fail, format!("the bot is not in the room {id}"))
                .detail(format!("its membership: {}", other.unwrap_or("none")))
                .fix(format!("him matrix room --room '{id}'")),
        ),
    }
    let encrypted = api
        .get(&format!("rooms/{}/state/m.room.encryption/", encode(id)))
        .await
        .is_ok();
    if encrypted {
        out.push(Finding::new(
            Status::Pass,
            "the room is end-to-end encrypted",
        ));
    } else if room.allow_unencrypted {
        out.push(Finding::new(
            Status::Warn,
            "the room is not end-to-end encrypted (allowed with --allow-unencrypted)",
        ));
    } else {
        out.push(
            Finding::new(
                Status::Fail,
                "the room is not end-to-end encrypted: the bridge posts nothing there",
            )
            .fix("turn encryption on in the room's settings, or make a new room: him matrix room --invite @you:your.server"),
        );
    }
    for answerer in &room.answerers {
        match membership(answerer).as_deref() {
            Some("join") => out.push(Finding::new(
                Status::Pass,
                format!("{answerer} may answer and is in the room"),
            )),
            Some("invite") => out.push(
                Finding::new(
                    Status::Warn,
                    format!("{answerer} is invited but has not joined: no question reaches them"),
                )
                .fix("accept the invitation in your Matrix app (Element X)"),
            ),
            other => out.push(
                Finding::new(
                    Status::Warn,
                    format!("{answerer} may answer but is not in the room"),
                )
                .detail(format!("membership: {}", other.unwrap_or("none")))
                .fix(format!(
                    "him matrix room --room '{id}' --invite {answerer} --answerers {}",
                    room.answerers.join(",")
                )),
            ),
        }
    }
    out
}

fn bridge_findings(dir: &Path, room: &RoomConfig) -> Vec<Finding> {
    let status: Option<BridgeStatus> = store::read(dir, STATUS_FILE, "").ok();
    let not_yet = Finding::new(
        Status::Skip,
        "the bridge has not synced yet: him serve and him ask start it when they ask",
    );
    let Some(status) = status else {
        return vec![not_yet];
    };
    let ago = him::platform::clock::unix_ms().saturating_sub(status.synced_at_ms) / 1000;
    let mut out = vec![if status.synced_at_ms == 0 {
        not_yet
    } else {
        Finding::new(
            Status::Pass,
            format!(
                "the bridge's last sync: {} ({ago} s ago)",
                him::wire::keep::rfc3339(status.synced_at_ms)
            ),
        )
    }];
    if status.device_verified {
        out.push(Finding::new(
            Status::Pass,
            "the bot's device is cross-signed by its account",
        ));
    } else {
        out.push(
            Finding::new(
                Status::Warn,
                "the bot's device is not cross-signed: Element marks its messages as from an unverified device",
            )
            .fix("him matrix verify (it asks the bot's password once, in the terminal)"),
        );
    }
    for answerer in &room.answerers {
        if status.verified.contains(answerer) {
            out.push(Finding::new(
                Status::Pass,
                format!("{answerer} and the bot verified each other (emojis compared)"),
            ));
        } else {
            out.push(
                Finding::new(
                    Status::Warn,
                    format!("{answerer} has not verified the bot: their Matrix app marks its messages as unverified"),
                )
                .fix("him matrix verify, then on the phone: the bot's name in the chat, Verify, and compare the emojis"),
            );
        }
    }
    out
}

/// A path segment, percent-encoded (a room ID holds `!` and `:`).
fn encode(segment: &str) -> String {
    url::form_urlencoded::byte_serialize(segment.as_bytes()).collect()
}

#[derive(Debug)]
enum Failure {
    /// The homeserver answered with an error.
    Refused(String),
    /// No answer at all.
    Unreachable(String),
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Refused(why) | Failure::Unreachable(why) => f.write_str(why),
        }
    }
}

/// The client API with the bot's token, request by request (no sync, no store).
struct Api {
    http: matrix_sdk::reqwest::Client,
    base: String,
    token: String,
}

impl Api {
    fn new(session: &Session) -> Api {
        Api {
            http: matrix_sdk::reqwest::Client::builder()
                .timeout(REQUEST_TIMEOUT)
                .build()
                .unwrap_or_default(),
            base: format!(
                "{}/_matrix/client/v3",
                session.homeserver.trim_end_matches('/')
            ),
            token: session.access_token.clone(),
        }
    }

    async fn get(&self, path: &str) -> Result<Value, Failure> {
        let response = self
            .http
            .get(format!("{}/{path}", self.base))
            .bearer_auth(&self.token)
            .send()
            .await
            .map_err(|err| Failure::Unreachable(err.to_string()))?;
        let status = response.status();
        // Read as bytes: reqwest's `json` feature is on only when the tests' dependencies
        // are built too, so `cargo install` would not have it.
        let body: Value = match response.bytes().await {
            Ok(bytes) => serde_json::from_slice(&bytes).unwrap_or(Value::Null),
            Err(_) => Value::Null,
        };
        if status.is_success() {
            Ok(body)
        } else {
            // The error code and message only: never the request, which holds the token.
            Err(Failure::Refused(format!(
                "{status}: {} {}",
                body["errcode"].as_str().unwrap_or(""),
                body["error"].as_str().unwrap_or("")
            )))
        }
    }
}
