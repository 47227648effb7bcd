//! A fresh local user for one test, so that the test can start him as real clients and
//! browsers do — with their own environment, not one the test prepared — without reaching
//! the developer's own browser or another test's hosts: each user has its own uid, home and
//! runtime directory. Needs root (`useradd`); without it the test is skipped with a
//! message, except under `HIM_E2E=1`, where that is a failure.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// What a client such as the Python or TypeScript SDK's default environment, or the MCP
/// Inspector CLI, passes to a stdio server: these variables and nothing else.
pub const CLIENT_WHITELIST: [&str; 6] = ["PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM"];

pub struct FreshUser {
    pub name: String,
    pub uid: u32,
    pub gid: u32,
    pub home: PathBuf,
    /// A copy of the him binary the user can run: the build folder may sit under a home
    /// others cannot enter (CI's `/root`).
    pub him: PathBuf,
    /// Holds the home and the binary; removed with the user.
    base: tempfile::TempDir,
    login_session_dir: Option<PathBuf>,
}

/// Skips (returning `None`) when the test cannot make a user, or fails under `HIM_E2E=1`.
pub fn fresh_user() -> Option<FreshUser> {
    let ok = super::require(
        nix::unistd::geteuid().is_root(),
        "this test makes a user of its own and needs root",
        "run the tests as root, as CI does",
    ) && super::require(
        Path::new("/usr/sbin/useradd").exists(),
        "useradd is missing",
        "apt-get install passwd",
    );
    ok.then(FreshUser::create)
}

impl FreshUser {
    fn create() -> FreshUser {
        let base = tempfile::Builder::new()
            .prefix("him-user-")
            .tempdir()
            .expect("temp dir");
        std::fs::set_permissions(base.path(), std::fs::Permissions::from_mode(0o755))
            .expect("chmod");
        let id = him::platform::random::question_id().expect("random");
        let name = format!("himt{}", &id[..8]);
        let home = base.path().join("home");
        // useradd takes a lock on /etc/passwd; tests running at once may meet it taken.
        let mut made = false;
        for _ in 0..50 {
            let status = Command::new("/usr/sbin/useradd")
                .args([
                    "--create-home",
                    "--user-group",
                    "--shell",
                    "/bin/sh",
                    "--home-dir",
                ])
                .arg(&home)
                .arg(&name)
                .status()
                .expect("run useradd");
            if status.success() {
                made = true;
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        assert!(made, "useradd {name} kept failing");
        let user = nix::unistd::User::from_name(&name)
            .expect("password database")
            .expect("the new user");
        let him = base.path().join("him");
        // A link, or a copy by `cp`: a copy written by this process would hold the file open
        // for writing while other tests fork, and exec then fails with "Text file busy".
        if std::fs::hard_link(env!("CARGO_BIN_EXE_him"), &him).is_err() {
            let copied = Command::new("cp")
                .arg(env!("CARGO_BIN_EXE_him"))
                .arg(&him)
                .status()
                .expect("run cp");
            assert!(copied.success(), "cannot copy the him binary");
        }
        FreshUser {
            name,
            uid: user.uid.as_raw(),
            gid: user.gid.as_raw(),
            home,
            him,
            base,
            login_session_dir: None,
        }
    }

    /// What systemd-logind makes at login: `/run/user/<uid>`, the user's, mode 0700.
    pub fn log_in(&mut self) -> PathBuf {
        let dir = PathBuf::from(format!("/run/user/{}", self.uid));
        std::fs::create_dir_all(&dir).expect("create /run/user/<uid>");
        std::os::unix::fs::chown(&dir, Some(self.uid), Some(self.gid)).expect("chown");
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).expect("chmod");
        self.login_session_dir = Some(dir.clone());
        dir
    }

    /// `him <args>` as this user, in the home folder, with exactly `env` and nothing else.
    pub fn command(&self, env: &[(&str, String)]) -> tokio::process::Command {
        let mut command = tokio::process::Command::new(&self.him);
        command
            .env_clear()
            .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
            .current_dir(&self.home)
            .uid(self.uid)
            .gid(self.gid);
        command
    }

    /// `bash -c <script>` as this user, as a local attacker would run it: only PATH and
    /// HOME, in the home folder.
    pub fn bash(&self, script: &str) -> tokio::process::Command {
        let mut command = tokio::process::Command::new("/bin/bash");
        command
            .arg("-c")
            .arg(script)
            .env_clear()
            .env("PATH", self.login_value("PATH"))
            .env("HOME", &self.home)
            .current_dir(&self.home)
            .uid(self.uid)
            .gid(self.gid)
            .kill_on_drop(true);
        command
    }

    /// Sends `request` raw to 127.0.0.1:`port` as this user and reads until the server
    /// closes: whether the connection was made, and every byte that came back.
    pub async fn send_raw(&self, port: u16, request: &str) -> (bool, String) {
        let output = self
            .bash(&format!(
                "exec 3<>/dev/tcp/127.0.0.1/{port} || exit 9; echo connected >&2; \
                 printf '%s' \"$REQUEST\" >&3 2>/dev/null; timeout 20 cat <&3"
            ))
            .env("REQUEST", request)
            .output()
            .await
            .expect("run bash as the other user");
        let connected = String::from_utf8_lossy(&output.stderr).contains("connected");
        (
            connected,
            String::from_utf8_lossy(&output.stdout).into_owned(),
        )
    }

    /// The value a login shell of this user would have for `variable`.
    pub fn login_value(&self, variable: &str) -> String {
        match variable {
            "PATH" => "/usr/local/bin:/usr/bin:/bin".into(),
            "HOME" => self.home.display().to_string(),
            "USER" | "LOGNAME" => self.name.clone(),
            "SHELL" => "/bin/sh".into(),
            "TERM" => "xterm-256color".into(),
            other => panic!("no login value for {other}"),
        }
    }

    /// The environment an MCP client with a default whitelist gives `him serve`.
    pub fn client_env(&self) -> Vec<(&'static str, String)> {
        CLIENT_WHITELIST
            .iter()
            .map(|v| (*v, self.login_value(v)))
            .collect()
    }

    /// The environment a browser gives its native host: the desktop session's, with
    /// `XDG_RUNTIME_DIR` when the user logged in through logind.
    pub fn browser_env(&self) -> Vec<(&'static str, String)> {
        let mut env = self.client_env();
        env.extend([
            ("DISPLAY", ":0".to_owned()),
            ("XDG_SESSION_TYPE", "x11".to_owned()),
            ("LANG", "C.UTF-8".to_owned()),
            ("HIM_LOG", "debug".to_owned()),
        ]);
        if let Some(dir) = &self.login_session_dir {
            env.push(("XDG_RUNTIME_DIR", dir.display().to_string()));
            env.push((
                "DBUS_SESSION_BUS_ADDRESS",
                format!("unix:path={}/bus", dir.display()),
            ));
        }
        env
    }
}

impl Drop for FreshUser {
    fn drop(&mut self) {
        // Processes of the user are children of the test, killed on drop before this.
        let _ = Command::new("/usr/sbin/userdel").arg(&self.name).status();
        if let Some(dir) = &self.login_session_dir {
            let _ = std::fs::remove_dir_all(dir);
        }
        let _ = self.base.path();
    }
}
