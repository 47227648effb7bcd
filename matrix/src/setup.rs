//! `him matrix login` and `him matrix room`: the two commands of the set-up.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use matrix_sdk::authentication::matrix::MatrixSession;
use matrix_sdk::config::SyncSettings;
use matrix_sdk::ruma::api::client::room::create_room::v3::{Request as CreateRoom, RoomPreset};
use matrix_sdk::ruma::api::client::uiaa::{
    AuthData, MatrixUserIdentifier, Password, UserIdentifier,
};
use matrix_sdk::ruma::events::InitialStateEvent;
use matrix_sdk::ruma::events::room::encryption::RoomEncryptionEventContent;
use matrix_sdk::ruma::{OwnedRoomId, OwnedUserId, RoomId, UserId};
use matrix_sdk::{Client, Room, SessionMeta, SessionTokens};

use him::BoxError;
use him::cli::{MatrixLoginArgs, MatrixRoomArgs};

use super::store::{self, LOGIN_FIRST, RoomConfig, SESSION_FILE, STORE_DIR, Session};

/// One sync that returns at once, whether or not there is news (the default waits 30 s for
/// some).
pub fn once() -> SyncSettings {
    SyncSettings::default().timeout(std::time::Duration::ZERO)
}

/// A client on the stores in `dir` (made private: they hold the device's keys).
async fn client(dir: &Path, homeserver: &str) -> Result<Client, BoxError> {
    him::wire::runtime::ensure_private_dir(&dir.join(STORE_DIR))?;
    Ok(Client::builder()
        .homeserver_url(homeserver)
        .sqlite_store(dir.join(STORE_DIR), None)
        .build()
        .await?)
}

/// The bot's client, logged in as `him matrix login` left it.
pub async fn restore(dir: &Path) -> Result<(Client, Session), BoxError> {
    let session: Session = store::read(dir, SESSION_FILE, LOGIN_FIRST)?;
    let client = client(dir, &session.homeserver).await?;
    let meta = SessionMeta {
        user_id: UserId::parse(&session.user_id)?,
        device_id: session.device_id.as_str().into(),
    };
    let tokens = SessionTokens {
        access_token: session.access_token.clone(),
        refresh_token: None,
    };
    client
        .restore_session(MatrixSession { meta, tokens })
        .await?;
    Ok((client, session))
}

fn say(text: &str) {
    // These commands exist to tell the person what they did.
    let _ = writeln!(std::io::stdout().lock(), "{text}");
}

/// The first line of a file, for a secret that must never be on the command line.
fn first_line(path: &Path) -> Result<String, BoxError> {
    let text = std::fs::read_to_string(path)
        .map_err(|err| format!("cannot read {}: {err}", path.display()))?;
    let line = text.lines().next().unwrap_or_default().trim().to_owned();
    if line.is_empty() {
        return Err(format!("{} is empty", path.display()).into());
    }
    Ok(line)
}

pub fn login(args: &MatrixLoginArgs) -> Result<ExitCode, BoxError> {
    let user = UserId::parse(&args.user).map_err(|err| {
        format!(
            "--user {}: not a Matrix ID like @him-bot:example.org ({err})",
            args.user
        )
    })?;
    url::Url::parse(&args.homeserver)
        .map_err(|err| format!("--homeserver {}: not a URL ({err})", args.homeserver))?;
    let password = match (&args.password_file, &args.token_file) {
        (Some(path), _) => Some(first_line(path)?),
        (None, Some(_)) => None,
        (None, None) => Some(
            inquire::Password::new(&format!("Password of {user}:"))
                .without_confirmation()
                .prompt()?,
        ),
    };
    let dir = store::dir()?;
    // A new login is a new device, whose keys the old stores cannot hold.
    let stores = dir.join(STORE_DIR);
    if stores.exists() {
        std::fs::remove_dir_all(&stores)?;
    }
    super::runtime()?.block_on(async {
        let client = client(&dir, &args.homeserver).await?;
        let (user_id, device_id, access_token) = match (&password, &args.token_file) {
            (Some(password), _) => {
                let response = client
                    .matrix_auth()
                    .login_username(&user, password)
                    .initial_device_display_name("him bridge")
                    .send()
                    .await?;
                (
                    response.user_id.to_string(),
                    response.device_id.to_string(),
                    response.access_token,
                )
            }
            (None, token_file) => {
                let path = token_file
                    .as_deref()
                    .ok_or("give a password or --token-file")?;
                let token = first_line(path)?;
                let (user_id, device_id) = whoami(&args.homeserver, &token).await?;
                (user_id, device_id, token)
            }
        };
        if user_id != user.as_str() {
            return Err(format!("the token is {user_id}'s, not {user}'s").into());
        }
        let session = Session {
            homeserver: args.homeserver.clone(),
            user_id: user_id.clone(),
            device_id: device_id.clone(),
            access_token,
        };
        let path = store::write(&dir, SESSION_FILE, &session)?;
        // Sets up the device's keys on the homeserver now, not at the first question.
        let (client, _) = restore(&dir).await?;
        client.sync_once(once()).await?;
        // Cross-signed, the bot's device is one its account vouches for: once a person
        // verified the bot (`him matrix verify`), their app trusts its messages.
        let signed = match &password {
            Some(password) => {
                cross_sign(&client, &user, Some(password)).await?;
                "its device is cross-signed"
            }
            None => {
                "its device is not cross-signed yet: `him matrix verify` asks the bot's password \
                 once (in the terminal) and does it"
            }
        };
        let answerers: Vec<String> = Vec::new();
        super::doctor::observe_and_write(&dir, &client, &answerers, false).await;
        say(&format!(
            "Logged in as {user_id} (device {device_id}); {signed}; the session is in {} \
             (private).\n\
             Next: him matrix room --invite @you:your.server",
            path.display()
        ));
        Ok::<_, BoxError>(())
    })?;
    Ok(ExitCode::SUCCESS)
}

/// Whether this device holds the account's cross-signing keys and is signed by them.
pub async fn cross_signed(client: &Client) -> bool {
    let complete = client
        .encryption()
        .cross_signing_status()
        .await
        .is_some_and(|status| status.is_complete());
    let signed = matches!(
        client.encryption().get_own_device().await,
        Ok(Some(device)) if device.is_cross_signed_by_owner()
    );
    complete && signed
}

/// Makes the account's cross-signing keys here and signs this device with them. A homeserver
/// asks for the password to replace keys the account already has (a bot logged in again):
/// `password`, used for this request only.
pub async fn cross_sign(
    client: &Client,
    user: &UserId,
    password: Option<&str>,
) -> Result<(), BoxError> {
    let encryption = client.encryption();
    let Err(err) = encryption.bootstrap_cross_signing(None).await else {
        return learn_signed(client, user).await;
    };
    let (Some(uiaa), Some(password)) = (err.as_uiaa_response(), password) else {
        return Err(format!("cannot cross-sign the bot's device: {err}").into());
    };
    let mut auth = Password::new(
        UserIdentifier::Matrix(MatrixUserIdentifier::new(user.to_string())),
        password.to_owned(),
    );
    auth.session = uiaa.session.clone();
    encryption
        .bootstrap_cross_signing(Some(AuthData::Password(auth)))
        .await
        .map_err(|err| format!("cannot cross-sign the bot's device: {err}"))?;
    learn_signed(client, user).await
}

/// Reads the account's keys back, so the store knows this device as signed (it learns a
/// signature it uploaded only from the homeserver).
async fn learn_signed(client: &Client, user: &UserId) -> Result<(), BoxError> {
    client.encryption().request_user_identity(user).await?;
    Ok(())
}

/// Whose token `token` is, and of which device (the homeserver's `whoami`).
async fn whoami(homeserver: &str, token: &str) -> Result<(String, String), BoxError> {
    let url = format!(
        "{}/_matrix/client/v3/account/whoami",
        homeserver.trim_end_matches('/')
    );
    let response = matrix_sdk::reqwest::Client::new()
        .get(url)
        .bearer_auth(token)
        .send()
        .await?;
    let status = response.status();
    let body: serde_json::Value = serde_json::from_str(&response.text().await?)?;
    if !status.is_success() {
        return Err(format!("the homeserver refused the token: {status} {body}").into());
    }
    let user = body["user_id"].as_str().ok_or("whoami gave no user_id")?;
    let device = body["device_id"]
        .as_str()
        .ok_or("the token belongs to no device; log in with a password instead")?;
    Ok((user.to_owned(), device.to_owned()))
}

fn parse_users(list: &[String], what: &str) -> Result<Vec<OwnedUserId>, BoxError> {
    list.iter()
        .map(|id| {
            UserId::parse(id.trim()).map_err(|err| {
                format!("{what} {id}: not a Matrix ID like @you:example.org ({err})").into()
            })
        })
        .collect()
}

pub fn room(args: &MatrixRoomArgs) -> Result<ExitCode, BoxError> {
    let invite = parse_users(&args.invite, "--invite")?;
    let mut answerers = parse_users(&args.answerers, "--answerers")?;
    if answerers.is_empty() {
        answerers = invite.clone();
    }
    if answerers.is_empty() {
        return Err("say who may answer: --answerers @you:your.server".into());
    }
    let wanted_room =
        match &args.room {
            Some(id) => Some(RoomId::parse(id).map_err(|err| {
                format!("--room {id}: not a room ID like !abc:example.org ({err})")
            })?),
            None => None,
        };
    let dir = store::dir()?;
    let room_id = super::runtime()?.block_on(async {
        let (client, _) = restore(&dir).await?;
        client.sync_once(once()).await?;
        let room = match &wanted_room {
            Some(id) => join(&client, id).await?,
            None => create(&client, &invite).await?,
        };
        let encrypted = room.latest_encryption_state().await?.is_encrypted();
        if !encrypted && !args.allow_unencrypted {
            return Err(format!(
                "the room {} is not end-to-end encrypted, so him will not post questions there: \
                 turn encryption on in the room's settings, or give --allow-unencrypted",
                room.room_id()
            )
            .into());
        }
        for user in invite.iter().filter(|_| wanted_room.is_some()) {
            room.invite_user_by_id(user).await?;
        }
        Ok::<OwnedRoomId, BoxError>(room.room_id().to_owned())
    })?;
    let config = RoomConfig {
        room_id: room_id.to_string(),
        answerers: answerers.iter().map(|u| u.to_string()).collect(),
        allow_unencrypted: args.allow_unencrypted,
    };
    store::write(&dir, him::agent::matrix::ROOM_FILE, &config)?;
    let who: Vec<String> = answerers.iter().map(|u| u.to_string()).collect();
    say(&format!(
        "Questions go to the room {room_id}; answers count from {}.\n\
         Accept the invitation in your Matrix app (Element X); him serve and him ask start the \
         bridge when they ask.",
        who.join(", ")
    ));
    Ok(ExitCode::SUCCESS)
}

async fn join(client: &Client, id: &RoomId) -> Result<Room, BoxError> {
    if let Some(room) = client.get_room(id)
        && room.state() == matrix_sdk::RoomState::Joined
    {
        return Ok(room);
    }
    Ok(client.join_room_by_id(id).await?)
}

/// A new room, encrypted from its first event: a direct chat with one person, a private
/// room for a team.
async fn create(client: &Client, invite: &[OwnedUserId]) -> Result<Room, BoxError> {
    let mut request = CreateRoom::new();
    request.invite = invite.to_vec();
    request.is_direct = invite.len() == 1;
    request.preset = Some(if invite.len() == 1 {
        RoomPreset::TrustedPrivateChat
    } else {
        RoomPreset::PrivateChat
    });
    request.name = Some("him".to_owned());
    request.initial_state = vec![
        InitialStateEvent::with_empty_state_key(
            RoomEncryptionEventContent::with_recommended_defaults(),
        )
        .to_raw_any(),
    ];
    Ok(client.create_room(request).await?)
}
