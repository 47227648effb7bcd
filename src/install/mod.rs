//! Setting him up: browser host manifests (`him manifest`, `install`, `uninstall`), the
//! `him doctor` check-up, and MCP client snippets (`him config`).
//!
//! ```text
//! browsers.rs  where each browser reads manifests (pure: OS + home in, paths out)
//! manifest.rs  the manifest JSON: build, render, check (pure)
//! extension.rs the extension built into him, and the per-user folder it is written to
//! firefox.rs   the Firefox profiles that keep an unsigned add-on, and what makes them keep it
//! setup.rs     what install and uninstall do with the extension's builds and those profiles
//! guide.rs     what install says is left to do in each browser
//! zip.rs       the stored zip the Firefox add-on (.xpi) is
//! doctor.rs    every check, each with its fix; the host probe
//! clients.rs   one snippet per MCP client (pure)
//! ```
//!
//! Install and uninstall are symmetric: install writes `<dir>/dev.him.host.json` in each
//! browser's per-user folder and the extension's files in him's own folder
//! (extension.rs); uninstall removes exactly those files when they hold a him manifest, and
//! him's extension folder, and nothing else. Commands whose job is to print write to stdout;
//! warnings and explanations go to stderr.

pub mod browsers;
pub mod clients;
pub mod doctor;
pub mod extension;
pub mod firefox;
pub mod guide;
pub mod manifest;
mod setup;
mod zip;

pub use setup::write_extension;

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::BoxError;
use crate::cli::{Browser, ConfigArgs, DoctorArgs, InstallArgs, ManifestArgs, UninstallArgs};
use browsers::{Layout, Os};

/// What the commands read from the process environment, gathered once.
#[derive(Debug, Clone)]
pub struct Context {
    pub layout: Layout,
    /// The running binary, canonicalized: the path manifests point at.
    pub exe: PathBuf,
    /// Where the extension's builds go (extension.rs).
    pub extension_root: PathBuf,
}

impl Context {
    pub fn from_env() -> Result<Context, BoxError> {
        if cfg!(windows) {
            return Err(
                "on Windows the browsers find native hosts through the registry, which \
                        him does not set up yet; `him manifest <browser>` prints the manifest \
                        to register by hand"
                    .into(),
            );
        }
        let home = std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from)
            .ok_or("HOME is not set; him needs it to find the browsers' folders")?;
        let xdg = std::env::var_os("XDG_CONFIG_HOME")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from);
        let xdg_data = std::env::var_os("XDG_DATA_HOME")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from);
        Ok(Context {
            extension_root: extension::install_root(Os::current(), &home, xdg_data),
            layout: Layout::new(Os::current(), home, xdg),
            exe: current_exe()?,
        })
    }
}

/// The running binary's canonical path (symlinks resolved, as the browser will see it).
pub fn current_exe() -> Result<PathBuf, BoxError> {
    let exe =
        std::env::current_exe().map_err(|e| format!("cannot find the running binary: {e}"))?;
    Ok(exe.canonicalize().unwrap_or(exe))
}

/// Why a binary at this path would not last, if it looks like a build product or lives in
/// a temporary folder: a manifest pointing there breaks on `cargo clean` or a reboot.
pub fn looks_temporary(exe: &Path, temp_dir: &Path) -> Option<String> {
    let parts: Vec<&str> = exe.iter().filter_map(|c| c.to_str()).collect();
    // target/<profile>/him, or target/<triple>/<profile>/him when cross-compiling.
    let is_profile = |i: usize| {
        parts
            .get(i)
            .is_some_and(|p| matches!(*p, "debug" | "release"))
    };
    if let Some(i) = parts.iter().position(|c| *c == "target")
        && (is_profile(i + 1) || is_profile(i + 2))
    {
        return Some("a cargo build folder (target/)".to_owned());
    }
    let temps = [
        temp_dir,
        Path::new("/tmp"),
        Path::new("/var/tmp"),
        Path::new("/private/var/folders"),
    ];
    if temps
        .iter()
        .any(|t| t.components().count() > 1 && exe.starts_with(t))
    {
        return Some("a temporary folder".to_owned());
    }
    None
}

/// The advice printed wherever a temporary-looking binary is noticed.
pub const INSTALL_FOR_GOOD: &str = "install him for good: `cargo install --path .` in the him \
     source folder, then run `~/.cargo/bin/him install`";

/// How to spell this binary in a fix: `him` when that is what PATH finds, else its path.
pub fn him_command(exe: &Path) -> String {
    let on_path = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join("him"))
            .find(|candidate| candidate.is_file())
    });
    match on_path.and_then(|p| p.canonicalize().ok()) {
        Some(found) if found == exe => "him".to_owned(),
        _ => clients::shell_quote(&exe.to_string_lossy()),
    }
}

fn out() -> io::StdoutLock<'static> {
    io::stdout().lock()
}

fn dedup(list: &[Browser]) -> Vec<Browser> {
    let mut seen = Vec::new();
    for b in list {
        if !seen.contains(b) {
            seen.push(*b);
        }
    }
    seen
}

fn nothing_detected(layout: &Layout) -> String {
    let mut msg =
        String::from("no supported browser found for this user. him looked for these folders:\n");
    for b in browsers::ALL {
        let dirs: Vec<String> = browsers::detection_dirs(b, layout)
            .iter()
            .map(|d| d.display().to_string())
            .collect();
        msg.push_str(&format!(
            "  {:<15} {}\n",
            browsers::display_name(b),
            dirs.join(" or ")
        ));
    }
    msg.push_str(
        "Start the browser once so it creates its folder, or name it: \
         `him install --browser chromium` (chrome, chromium, edge, brave, vivaldi, opera, firefox).",
    );
    msg
}

pub fn install(args: &InstallArgs) -> Result<ExitCode, BoxError> {
    let ctx = Context::from_env()?;
    // Refuse a bad id before anything is written.
    manifest::extension_ids(&args.extension_ids)?;
    let chosen = if args.browsers.is_empty() {
        browsers::ALL
            .into_iter()
            .filter(|b| browsers::detected_on_disk(*b, &ctx.layout))
            .collect()
    } else {
        dedup(&args.browsers)
    };
    if chosen.is_empty() {
        return Err(nothing_detected(&ctx.layout).into());
    }
    if let Some(why) = looks_temporary(&ctx.exe, &std::env::temp_dir()) {
        eprintln!(
            "him: warning: this binary ({}) is in {why}; the manifests will point at it and \
             break when it goes.\n  To fix that, {INSTALL_FOR_GOOD}.",
            ctx.exe.display()
        );
    }

    let mut failed = false;
    for browser in &chosen {
        let family = browsers::family(*browser);
        let text = manifest::render(&manifest::build(family, &ctx.exe, &args.extension_ids)?);
        let path = browsers::manifest_path(*browser, &ctx.layout);
        match write_if_changed(&path, &text) {
            Ok(true) => writeln!(out(), "wrote {}", path.display())?,
            Ok(false) => writeln!(out(), "unchanged {}", path.display())?,
            Err(err) => {
                eprintln!("him: cannot write {}: {err}", path.display());
                failed = true;
            }
        }
        if *browser == Browser::Opera {
            // Opera's extension docs name Google Chrome's locations; some Opera builds read
            // those rather than Opera's own folder.
            eprintln!(
                "him: note: if Opera still says \"Specified native messaging host not found.\", \
                 also run `{} install --browser chrome`: some Opera builds read Google Chrome's folder",
                him_command(&ctx.exe)
            );
        }
        if family == browsers::Family::Firefox && !args.extension_ids.is_empty() {
            eprintln!(
                "him: note: --extension-id applies to Chromium browsers; Firefox allows the add-on {}",
                crate::GECKO_ID
            );
        }
    }

    let (updated, wrote_ok) = setup::write_extension_builds(&ctx.extension_root, &chosen)?;
    failed |= !wrote_ok;
    let firefox_setup = if chosen.contains(&Browser::Firefox) {
        let setup = setup::firefox_for_good(&ctx.layout, args)?;
        failed |= setup.failed;
        Some(setup)
    } else {
        None
    };

    for s in browsers::sandboxed_on_disk(Path::new("/"), &ctx.layout.home) {
        eprintln!(
            "him: warning: {} {} ({}) cannot start native-messaging hosts; the side panel will \
             not reach him there.",
            s.kind.name(),
            browsers::display_name(s.browser),
            s.evidence.display()
        );
    }
    eprint!(
        "{}",
        guide::next_steps(
            &chosen,
            &ctx.extension_root,
            &him_command(&ctx.exe),
            updated,
            firefox_setup.as_ref()
        )
    );
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// Writes `text` to `path` unless it already holds exactly that; creates the folder. The
/// new file is written beside the old one and renamed over it, so a browser starting at
/// that moment reads either the old manifest or the new one, never half of one.
fn write_if_changed(path: &Path, text: &str) -> io::Result<bool> {
    if std::fs::read(path).is_ok_and(|old| old == text.as_bytes()) {
        return Ok(false);
    }
    let dir = path
        .parent()
        .ok_or_else(|| io::Error::other("manifest path has no folder"))?;
    std::fs::create_dir_all(dir)?;
    let tmp = dir.join(format!(
        ".{}.json.{}.tmp",
        crate::HOST_NAME,
        std::process::id()
    ));
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })?;
    Ok(true)
}

pub fn uninstall(args: &UninstallArgs) -> Result<ExitCode, BoxError> {
    let ctx = Context::from_env()?;
    let chosen = if args.browsers.is_empty() {
        browsers::ALL.to_vec()
    } else {
        dedup(&args.browsers)
    };
    let mut removed = 0;
    let mut failed = false;
    for browser in chosen.iter().copied() {
        let path = browsers::manifest_path(browser, &ctx.layout);
        match std::fs::read_to_string(&path) {
            Err(err) if err.kind() == io::ErrorKind::NotFound => {}
            Ok(text) if manifest::is_ours(&text) => match std::fs::remove_file(&path) {
                Ok(()) => {
                    writeln!(out(), "removed {}", path.display())?;
                    removed += 1;
                }
                Err(err) => {
                    eprintln!("him: cannot remove {}: {err}", path.display());
                    failed = true;
                }
            },
            Ok(_) => eprintln!(
                "him: left {} alone: it does not hold a him manifest (\"name\" is not \"{}\")",
                path.display(),
                crate::HOST_NAME
            ),
            Err(err) => {
                eprintln!("him: cannot read {}: {err}", path.display());
                failed = true;
            }
        }
    }
    if removed == 0 && !failed {
        eprintln!("him: no him manifest found; nothing to remove");
    }
    failed |= !setup::remove_extension_builds(&ctx.extension_root, &chosen)?;
    if chosen.contains(&Browser::Firefox) {
        failed |= !setup::remove_from_firefox_profiles(&ctx.layout)?;
    }
    // What `him remote` set up: the ssh_config blocks, and the gateway's start.
    match crate::remote::uninstall() {
        Ok(Some(config)) => writeln!(
            out(),
            "removed the him remote blocks from {}",
            config.display()
        )?,
        Ok(None) => {}
        Err(err) => {
            eprintln!("him: {err}");
            failed = true;
        }
    }
    // What `him remote --write` set up on this machine as the remote one: the rc line.
    match crate::remote::ssh_rc::uninstall() {
        Ok(Some(rc)) => writeln!(out(), "removed the him block from {}", rc.display())?,
        Ok(None) => {}
        Err(err) => {
            eprintln!("him: {err}");
            failed = true;
        }
    }
    match crate::host::gateway::disable() {
        Ok(Some(marker)) => writeln!(out(), "removed {}", marker.display())?,
        Ok(None) => {}
        Err(err) => {
            eprintln!("him: cannot remove the gateway marker: {err}");
            failed = true;
        }
    }
    failed |= !matrix_session(&ctx.exe, args.matrix)?;
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// The local Matrix session (`<state>/matrix/`): removed with `--matrix` by `him-matrix
/// logout` (which also logs the bot's device out on the homeserver; the Matrix code lives in
/// that binary only), else kept and said so. Whether all went well.
fn matrix_session(exe: &Path, remove: bool) -> Result<bool, BoxError> {
    let Some(dir) = crate::agent::matrix::state_dir().filter(|dir| dir.exists()) else {
        return Ok(true);
    };
    if !remove {
        writeln!(
            out(),
            "kept the Matrix session in {} (the bot stays logged in): `him uninstall --matrix` \
             or `him matrix logout` removes it",
            dir.display()
        )?;
        return Ok(true);
    }
    let matrix = exe.with_file_name("him-matrix");
    match std::process::Command::new(&matrix)
        .arg("logout")
        .stdin(std::process::Stdio::null())
        .status()
    {
        Ok(status) => Ok(status.success()),
        Err(err) => {
            eprintln!(
                "him: cannot run {} to remove the Matrix session: {err}; remove {} by hand \
                 (the bot's device then stays in its account's device list)",
                matrix.display(),
                dir.display()
            );
            Ok(false)
        }
    }
}

pub fn doctor(args: &DoctorArgs) -> Result<ExitCode, BoxError> {
    let http = crate::mcp::http::parse_addr(
        args.http
            .as_deref()
            .unwrap_or(crate::mcp::http::DEFAULT_ADDR),
    )
    .map_err(|err| format!("--http: {err}"))?;
    doctor::run(http)
}

pub fn manifest(args: &ManifestArgs) -> Result<ExitCode, BoxError> {
    let host = match &args.path {
        // An existing file is resolved as the browser will resolve it; a future one must
        // already be absolute.
        Some(p) => p.canonicalize().unwrap_or_else(|_| p.clone()),
        None => current_exe()?,
    };
    let family = browsers::family(args.browser);
    let m = manifest::build(family, &host, &args.extension_ids)?;
    out().write_all(manifest::render(&m).as_bytes())?;
    Ok(ExitCode::SUCCESS)
}

pub fn config(args: &ConfigArgs) -> Result<ExitCode, BoxError> {
    let exe = current_exe()?;
    let mut snippet = if args.hooks {
        clients::hook_settings(args.client, &exe)
            .ok_or_else(|| "--hooks: only claude-code and codex have permission hooks".to_owned())?
    } else {
        clients::snippet(args.client, &exe, Os::current())
    };
    if snippet.body.contains(clients::PATH_TOKEN_PLACEHOLDER) {
        // The URL is only useful with the real secret in it; made now if there is none yet.
        let token = crate::mcp::http::path_token()?;
        snippet.body = snippet
            .body
            .replace(clients::PATH_TOKEN_PLACEHOLDER, token.secret());
    }
    out().write_all(snippet.body.as_bytes())?;
    let mut err = io::stderr().lock();
    writeln!(err, "\n# {} — {}", snippet.title, snippet.place)?;
    for line in &snippet.notes {
        writeln!(err, "# {line}")?;
    }
    if let Some(why) = looks_temporary(&exe, &std::env::temp_dir()) {
        writeln!(
            err,
            "# warning: this binary is in {why}, and the snippet points at it. To fix that, \
             {INSTALL_FOR_GOOD}, and `~/.cargo/bin/him config ...`."
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cargo_build_products_look_temporary() {
        let t = Path::new("/nonexistent-temp");
        assert!(looks_temporary(Path::new("/src/him/target/debug/him"), t).is_some());
        assert!(looks_temporary(Path::new("/src/him/target/release/him"), t).is_some());
        assert!(
            looks_temporary(
                Path::new("/src/target/x86_64-unknown-linux-gnu/release/him"),
                t
            )
            .is_some()
        );
        assert!(looks_temporary(Path::new("/tmp/him"), t).is_some());
        assert!(looks_temporary(Path::new("/scratch/x/him"), Path::new("/scratch")).is_some());
    }

    #[test]
    fn installed_binaries_do_not_look_temporary() {
        let t = Path::new("/tmp");
        assert_eq!(
            looks_temporary(Path::new("/home/u/.cargo/bin/him"), t),
            None
        );
        assert_eq!(looks_temporary(Path::new("/usr/local/bin/him"), t), None);
        assert_eq!(looks_temporary(Path::new("/opt/target/him"), t), None);
    }

    #[test]
    fn the_nothing_detected_message_lists_every_browser_and_how_to_name_one() {
        let layout = Layout::new(Os::Linux, "/home/u".into(), None);
        let msg = nothing_detected(&layout);
        for b in browsers::ALL {
            assert!(msg.contains(browsers::display_name(b)), "{msg}");
        }
        assert!(msg.contains("/home/u/.config/chromium"));
        assert!(msg.contains("--browser chromium"));
    }
}
