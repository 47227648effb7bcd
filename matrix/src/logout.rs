//! `him matrix logout` (and `him uninstall --matrix`, which runs it): the bot's device logged
//! out on the homeserver, so it leaves the account's device list, and the local session
//! removed: `<state>/matrix/` whole (the token, the encryption store, the room's settings,
//! the bridge's status and log). The account stays on the homeserver.
//!
//! The bridge uses the token and the store: it is stopped first, and one started meanwhile
//! leaves at once (`verify::hold_the_bridge`); with `room.json` gone, agents start none.

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use him::BoxError;

use super::store::{self, SESSION_FILE, Session};

/// How long the homeserver may take to log the device out.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

fn say(text: &str) {
    // This command exists to tell the person what it did.
    let _ = writeln!(std::io::stdout().lock(), "{text}");
}

pub fn run() -> Result<ExitCode, BoxError> {
    him::platform::logging::init();
    let config = him::config::Config::from_env()?;
    let runtime_dir = config.runtime.dir.clone();
    let Some(dir) = him::agent::matrix::state_dir().filter(|dir| dir.exists()) else {
        say("No Matrix session on this machine: nothing to remove.");
        return Ok(ExitCode::SUCCESS);
    };
    let lock = if runtime_dir.as_os_str().is_empty() {
        None
    } else {
        Some(super::verify::hold_the_bridge(&runtime_dir)?.0)
    };
    let session: Option<Session> = store::read(&dir, SESSION_FILE, "").ok();
    if let Some(session) = &session {
        match super::runtime()?.block_on(log_out(session)) {
            Ok(()) => say(&format!(
                "Logged the bot's device {} out on {}; the account {} stays.",
                session.device_id, session.homeserver, session.user_id
            )),
            Err(why) => say(&format!(
                "Could not log the bot's device {} out on {} ({why}): it stays in the \
                 account's device list; remove it there from any Matrix app (Element: \
                 Settings, Sessions).",
                session.device_id, session.homeserver
            )),
        }
    }
    std::fs::remove_dir_all(&dir)
        .map_err(|err| format!("cannot remove {}: {err}", dir.display()))?;
    say(&format!(
        "Removed the local Matrix session ({}); `him matrix login` sets it up again.",
        dir.display()
    ));
    drop(lock);
    Ok(ExitCode::SUCCESS)
}

/// The homeserver's `logout` with the bot's token: the device and its keys are removed from
/// the account. A token already refused means it is gone already.
async fn log_out(session: &Session) -> Result<(), String> {
    let url = format!(
        "{}/_matrix/client/v3/logout",
        session.homeserver.trim_end_matches('/')
    );
    let response = matrix_sdk::reqwest::Client::builder()
        .timeout(REQUEST_TIMEOUT)
        .build()
        .map_err(|err| err.to_string())?
        .post(url)
        .bearer_auth(&session.access_token)
        .body("{}")
        .send()
        .await
        .map_err(|err| format!("cannot reach it: {err}"))?;
    let status = response.status();
    if status.is_success() || status == 401 {
        return Ok(());
    }
    // The error code only: never the request, which holds the token.
    let body = response.text().await.unwrap_or_default();
    let code = serde_json::from_str::<serde_json::Value>(&body)
        .ok()
        .and_then(|v| v["errcode"].as_str().map(str::to_owned))
        .unwrap_or_default();
    Err(format!("it answered {status} {code}"))
}
