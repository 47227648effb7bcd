//! `him matrix verify`: the person and the bot verify each other by comparing emojis, so
//! their Matrix app shows the bot's messages without an "unverified" warning.
//!
//! The person starts "Verify" on the phone (Element X: the bot's profile in the chat, an
//! in-room request; other clients may send a to-device one: both are taken). The command
//! shows the 7 emojis and asks whether they match; only `y` confirms, anything else (a
//! different answer, an empty line, the end of input) cancels, as a mismatch: someone may be
//! between the phone and the bot. Only the room's answerers may verify.
//!
//! The bridge and this command must not share the crypto store (two processes would each
//! advance the same Olm sessions from their own copy in memory): the command holds the
//! bridge's lock while it runs, and asks a running bridge to stop first, starting it again
//! after. A bridge stopped so loses nothing (its questions are kept, the sync position in the
//! store: it reads what was answered meanwhile), and a bridge started while the command runs
//! leaves at once.

use std::fs::File;
use std::io::{BufRead, IsTerminal, Write};
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use futures::StreamExt;
use matrix_sdk::Client;
use matrix_sdk::config::SyncSettings;
use matrix_sdk::encryption::verification::{
    SasState, SasVerification, VerificationRequest, VerificationRequestState,
};
use matrix_sdk::ruma::events::key::verification::VerificationMethod;
use matrix_sdk::ruma::events::key::verification::request::ToDeviceKeyVerificationRequestEvent;
use matrix_sdk::ruma::events::room::message::{MessageType, OriginalSyncRoomMessageEvent};
use matrix_sdk::ruma::{OwnedUserId, UserId};
use nix::fcntl::{Flock, FlockArg};
use tokio::sync::{mpsc, oneshot};

use him::BoxError;
use him::wire::runtime;

use super::store::{self, ROOM_FIRST, RoomConfig};

/// How long a running bridge may take to stop.
const STOP_WAIT: Duration = Duration::from_secs(15);

fn say(text: &str) {
    // This command talks with the person at the terminal.
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{text}");
    let _ = out.flush();
}

pub fn run() -> Result<ExitCode, BoxError> {
    him::platform::logging::init();
    let config = him::config::Config::from_env()?;
    let runtime_dir = config.runtime.dir.clone();
    if runtime_dir.as_os_str().is_empty() {
        return Err("no runtime directory (see `him doctor`)".into());
    }
    let dir = store::dir()?;
    let room: RoomConfig = store::read(&dir, him::agent::matrix::ROOM_FILE, ROOM_FIRST)?;
    let (lock, stopped) = hold_the_bridge(&runtime_dir)?;
    let result = super::runtime()?.block_on(verify(&dir, &room));
    drop(lock);
    if stopped {
        restart_the_bridge(&dir);
    }
    result
}

/// Starts the bridge this command stopped again, so the questions open in the room are
/// answered meanwhile; detached, its log in `bridge.log` as when `him serve` starts it.
fn restart_the_bridge(dir: &Path) {
    use std::os::unix::fs::OpenOptionsExt;
    use std::os::unix::process::CommandExt;
    let log = File::options()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(dir.join("bridge.log"));
    let started = std::env::current_exe().and_then(|exe| {
        std::process::Command::new(exe)
            .arg("bridge")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(log.map_or_else(|_| std::process::Stdio::null(), std::process::Stdio::from))
            .process_group(0)
            .spawn()
    });
    match started {
        Ok(child) => say(&format!(
            "The Matrix bridge runs again (pid {}).",
            child.id()
        )),
        Err(err) => say(&format!(
            "Cannot start the Matrix bridge again ({err}); the next question starts it."
        )),
    }
}

/// The bridge's lock, a running bridge asked to stop (SIGTERM) first; whether one was.
pub fn hold_the_bridge(runtime_dir: &Path) -> Result<(Flock<File>, bool), BoxError> {
    let matrix_dir = runtime::matrix_dir(runtime_dir);
    if let Some(lock) = him::host::gateway::lock_in(runtime_dir, &matrix_dir)? {
        return Ok((lock, false));
    }
    let pid_file = matrix_dir.join(super::bridge::PID_FILE);
    let pid: i32 = std::fs::read_to_string(&pid_file)
        .ok()
        .and_then(|text| text.trim().parse().ok())
        .ok_or_else(|| {
            format!(
                "a Matrix bridge runs (it holds {}/lock) but left no pid in {}; stop it, then \
                 run this again",
                matrix_dir.display(),
                pid_file.display()
            )
        })?;
    // A pid file left by an earlier bridge could name a process that reused the pid: where
    // the system says what a process runs, it must be a bridge.
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline"));
    if let Ok(cmdline) = &cmdline
        && !String::from_utf8_lossy(cmdline).contains("bridge")
    {
        return Err(format!(
            "a Matrix bridge runs, but pid {pid} in {} is not it; stop the bridge, then run \
             this again",
            pid_file.display()
        )
        .into());
    }
    say(&format!(
        "The Matrix bridge (pid {pid}) is stopped: it must not use the store meanwhile."
    ));
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGTERM,
    )
    .map_err(|err| format!("cannot stop the Matrix bridge (pid {pid}): {err}"))?;
    // Waits on the lock itself: it is free the moment the bridge's process ends.
    let path = matrix_dir.join("lock");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let locked = File::options()
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|err| err.to_string())
            .and_then(|file| {
                Flock::lock(file, FlockArg::LockExclusive).map_err(|(_, errno)| errno.to_string())
            });
        let _ = tx.send(locked);
    });
    match rx.recv_timeout(STOP_WAIT) {
        Ok(Ok(lock)) => Ok((lock, true)),
        Ok(Err(err)) => Err(format!("cannot take the Matrix bridge's lock: {err}").into()),
        Err(_) => Err(format!(
            "the Matrix bridge (pid {pid}) did not stop within {} s; stop it, then run this again",
            STOP_WAIT.as_secs()
        )
        .into()),
    }
}

async fn verify(dir: &Path, room: &RoomConfig) -> Result<ExitCode, BoxError> {
    let (client, session) = super::setup::restore(dir).await?;
    let me = UserId::parse(&session.user_id)?;
    let answerers = room.answerer_ids()?;
    let (tx, mut requests) = mpsc::unbounded_channel::<VerificationRequest>();
    add_handlers(&client, &me, tx);
    client.sync_once(super::setup::once()).await?;
    if !super::setup::cross_signed(&client).await {
        if !std::io::stdin().is_terminal() {
            return Err(format!(
                "the bot's device is not cross-signed yet (it was logged in with a token): run \
                 `him matrix verify` in a terminal, where it asks {me}'s password once"
            )
            .into());
        }
        let password = inquire::Password::new(&format!(
            "The bot's device is not cross-signed yet; password of {me} (used once, never kept):"
        ))
        .without_confirmation()
        .prompt()?;
        super::setup::cross_sign(&client, &me, Some(&password)).await?;
        say("The bot's device is now cross-signed by its account.");
    }
    super::doctor::observe_and_write(dir, &client, &room.answerers, false).await;
    tokio::spawn(sync_forever(client.clone()));
    let who: Vec<&str> = room.answerers.iter().map(String::as_str).collect();
    say(&format!(
        "Waiting for a verification request from {} (Ctrl-C to stop).\n\
         On your phone, in the chat with {me}: tap its name, then Verify, and choose to \
         compare emojis.",
        who.join(" or ")
    ));
    loop {
        let request = requests.recv().await.ok_or("the Matrix client stopped")?;
        let from = request.other_user_id().to_owned();
        if !answerers.contains(&from) {
            say(&format!(
                "Refused a verification request from {from}: only the room's answerers ({}) \
                 may verify the bot.",
                who.join(", ")
            ));
            if let Err(err) = request.cancel().await {
                tracing::warn!("cannot cancel {from}'s verification request: {err}");
            }
            continue;
        }
        let outcome = verify_with(&request).await?;
        if matches!(outcome, Outcome::Verified) {
            settle(&client, &from).await;
        }
        super::doctor::observe_and_write(dir, &client, &room.answerers, false).await;
        return Ok(match outcome {
            Outcome::Verified => {
                say(&format!(
                    "Verified: {from} and the bot trust each other; their Matrix app shows the \
                     bot's messages without a warning."
                ));
                ExitCode::SUCCESS
            }
            Outcome::Mismatch => {
                say(
                    "Cancelled: the emojis were not confirmed. If they differ, someone may be \
                     between your phone and the bot: do not verify it; log the bot in again \
                     (him matrix login) and tell your homeserver's admin.",
                );
                ExitCode::FAILURE
            }
            Outcome::Cancelled(why) => {
                say(&format!("The verification was cancelled: {why}."));
                ExitCode::FAILURE
            }
        });
    }
}

/// Makes sure the bot's signature on `user`'s keys is on the homeserver and known here: when
/// the phone confirmed last, the SDK leaves its upload to a later sync, which this command
/// may not wait for. Signing again is harmless.
async fn settle(client: &Client, user: &UserId) {
    let result = async {
        if let Some(identity) = client.encryption().get_user_identity(user).await?
            && !identity.is_verified()
        {
            identity.verify().await?;
        }
        client.encryption().request_user_identity(user).await?;
        Ok::<_, BoxError>(())
    }
    .await;
    if let Err(err) = result {
        tracing::warn!("cannot sign {user}'s keys: {err}");
    }
}

/// Verification requests to the bot, in a room or to its device, go to `requests`.
fn add_handlers(
    client: &Client,
    me: &UserId,
    requests: mpsc::UnboundedSender<VerificationRequest>,
) {
    let tx = requests.clone();
    client.add_event_handler(
        move |ev: ToDeviceKeyVerificationRequestEvent, client: Client| {
            let tx = tx.clone();
            async move {
                if let Some(request) = client
                    .encryption()
                    .get_verification_request(&ev.sender, &ev.content.transaction_id)
                    .await
                {
                    let _ = tx.send(request);
                }
            }
        },
    );
    let bot: OwnedUserId = me.to_owned();
    client.add_event_handler(move |ev: OriginalSyncRoomMessageEvent, client: Client| {
        let tx = requests.clone();
        let bot = bot.clone();
        async move {
            let MessageType::VerificationRequest(content) = &ev.content.msgtype else {
                return;
            };
            if ev.sender == bot || content.to != bot {
                return;
            }
            if let Some(request) = client
                .encryption()
                .get_verification_request(&ev.sender, &ev.event_id)
                .await
            {
                let _ = tx.send(request);
            }
        }
    });
}

/// Keeps the verification's messages flowing (it is a conversation over the homeserver).
async fn sync_forever(client: Client) {
    let settings = SyncSettings::default().timeout(Duration::from_secs(10));
    let mut backoff = Duration::from_secs(1);
    loop {
        match client.sync_once(settings.clone()).await {
            Ok(_) => backoff = Duration::from_secs(1),
            Err(err) => {
                tracing::warn!(
                    "sync failed (trying again in {} s): {err}",
                    backoff.as_secs()
                );
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(30));
            }
        }
    }
}

enum Outcome {
    Verified,
    Mismatch,
    Cancelled(String),
}

/// Accepts an answerer's request, takes it to the emoji comparison, and asks the person.
async fn verify_with(request: &VerificationRequest) -> Result<Outcome, BoxError> {
    let mut changes = request.changes();
    // Emojis only: a terminal cannot scan or show a QR code.
    request
        .accept_with_methods(vec![VerificationMethod::SasV1])
        .await?;
    let mut state = request.state();
    let sas = loop {
        match state {
            VerificationRequestState::Transitioned { verification, .. } => {
                match verification.sas() {
                    Some(sas) => break sas,
                    None => {
                        request.cancel().await?;
                        return Ok(Outcome::Cancelled(
                            "the phone chose a way other than emojis".into(),
                        ));
                    }
                }
            }
            VerificationRequestState::Done => return Ok(Outcome::Verified),
            VerificationRequestState::Cancelled(info) => {
                return Ok(Outcome::Cancelled(info.reason().to_owned()));
            }
            _ => {}
        }
        state = changes
            .next()
            .await
            .ok_or("the verification request ended")?;
    };
    compare(&sas).await
}

async fn compare(sas: &SasVerification) -> Result<Outcome, BoxError> {
    let mut changes = sas.changes();
    if !sas.we_started() {
        sas.accept().await?;
    }
    let mut state = sas.state();
    loop {
        match state {
            SasState::KeysExchanged { emojis, .. } => {
                let Some(emojis) = emojis else {
                    sas.cancel().await?;
                    return Ok(Outcome::Cancelled("the phone offered no emojis".into()));
                };
                let mut text = String::from(
                    "Compare these emojis with the ones on your phone, in this order:\n",
                );
                for emoji in &emojis.emojis {
                    text.push_str(&format!("  {}  {}\n", emoji.symbol, emoji.description));
                }
                let mut out = std::io::stdout().lock();
                let _ = write!(out, "{text}Do they match? [y/N] ");
                let _ = out.flush();
                drop(out);
                let answer = tokio::select! {
                    answer = read_answer() => answer,
                    // The phone may cancel while the person looks.
                    cancelled = until_cancelled(&mut changes) => return Ok(cancelled),
                };
                if answer.trim().eq_ignore_ascii_case("y") {
                    sas.confirm().await?;
                } else {
                    sas.mismatch().await?;
                    return Ok(Outcome::Mismatch);
                }
            }
            SasState::Done { .. } => return Ok(Outcome::Verified),
            SasState::Cancelled(info) => return Ok(Outcome::Cancelled(info.reason().to_owned())),
            _ => {}
        }
        state = changes.next().await.ok_or("the verification ended")?;
    }
}

async fn until_cancelled(changes: &mut (impl futures::Stream<Item = SasState> + Unpin)) -> Outcome {
    while let Some(state) = changes.next().await {
        if let SasState::Cancelled(info) = state {
            return Outcome::Cancelled(info.reason().to_owned());
        }
    }
    Outcome::Cancelled("the verification ended".into())
}

/// One line from the person; the end of input is no.
async fn read_answer() -> String {
    let (tx, rx) = oneshot::channel();
    // A thread of its own, not the runtime's blocking pool: a read still pending when the
    // phone cancels must not hold the runtime's shutdown.
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = std::io::stdin().lock().read_line(&mut line);
        let _ = tx.send(line);
    });
    rx.await.unwrap_or_default()
}
