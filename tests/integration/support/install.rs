//! A throw-away user for the install tests: its own HOME, config home and runtime
//! directory, so nothing depends on (or touches) the real machine's browsers.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use tempfile::TempDir;

pub struct Env {
    _tmp: TempDir,
    pub home: PathBuf,
    /// Set as XDG_CONFIG_HOME only when `xdg` is; else the default `~/.config` applies.
    pub xdg: Option<PathBuf>,
    pub runtime: PathBuf,
}

pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    pub fn ok(&self) -> bool {
        self.code == 0
    }
}

impl From<Output> for Run {
    fn from(o: Output) -> Run {
        Run {
            code: o.status.code().unwrap_or(-1),
            stdout: String::from_utf8(o.stdout).unwrap(),
            stderr: String::from_utf8(o.stderr).unwrap(),
        }
    }
}

/// The binary under test, as the manifests must name it (symlinks resolved).
pub fn exe() -> PathBuf {
    Path::new(env!("CARGO_BIN_EXE_him")).canonicalize().unwrap()
}

impl Env {
    pub fn new() -> Env {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        std::fs::create_dir(&home).unwrap();
        let runtime = tmp.path().join("run");
        Env {
            home,
            xdg: None,
            runtime,
            _tmp: tmp,
        }
    }

    pub fn with_xdg_config_home() -> Env {
        let mut env = Env::new();
        let xdg = env.home.parent().unwrap().join("xdg-config");
        std::fs::create_dir(&xdg).unwrap();
        env.xdg = Some(xdg);
        env
    }

    pub fn config_home(&self) -> PathBuf {
        self.xdg
            .clone()
            .unwrap_or_else(|| self.home.join(".config"))
    }

    pub fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_him"));
        cmd.args(args)
            .env("HOME", &self.home)
            .env("HIM_RUNTIME_DIR", &self.runtime)
            .env_remove("XDG_RUNTIME_DIR")
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("XDG_DATA_HOME");
        if let Some(xdg) = &self.xdg {
            cmd.env("XDG_CONFIG_HOME", xdg);
        }
        cmd
    }

    pub fn him(&self, args: &[&str]) -> Run {
        self.command(args).output().unwrap().into()
    }
}

/// Where each browser's manifest must land for this user on Linux (FACTS.md).
pub fn linux_manifest(env: &Env, browser: &str) -> PathBuf {
    let c = env.config_home();
    let dir = match browser {
        "chrome" => c.join("google-chrome/NativeMessagingHosts"),
        "chromium" => c.join("chromium/NativeMessagingHosts"),
        "edge" => c.join("microsoft-edge/NativeMessagingHosts"),
        "brave" => c.join("BraveSoftware/Brave-Browser/NativeMessagingHosts"),
        "vivaldi" => c.join("vivaldi/NativeMessagingHosts"),
        "opera" => c.join("opera/NativeMessagingHosts"),
        "firefox" => env.home.join(".mozilla/native-messaging-hosts"),
        other => panic!("unknown browser {other}"),
    };
    dir.join("dev.him.host.json")
}

pub const BROWSERS: [(&str, &str); 7] = [
    ("chrome", "Google Chrome"),
    ("chromium", "Chromium"),
    ("edge", "Microsoft Edge"),
    ("brave", "Brave"),
    ("vivaldi", "Vivaldi"),
    ("opera", "Opera"),
    ("firefox", "Firefox"),
];

pub fn read_json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

pub fn write_json(path: &Path, value: &serde_json::Value) {
    std::fs::write(path, serde_json::to_string_pretty(value).unwrap()).unwrap();
}
