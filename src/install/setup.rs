//! What `him install` and `him uninstall` do with the extension: its builds in him's own
//! folder (extension.rs), and the Firefox add-on in the profiles that keep it (firefox.rs),
//! with the person's consent.

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use super::browsers::{self, Layout};
use super::{extension, firefox, guide, out};
use crate::BoxError;
use crate::cli::{Browser, ExtensionArgs, ExtensionBuild, InstallArgs};

/// Installs the Firefox add-on for good in the profiles whose Firefox takes unsigned add-ons,
/// once the person agreed (or agreed at an earlier install, whose block is still there).
pub(super) fn firefox_for_good(
    layout: &Layout,
    args: &InstallArgs,
) -> Result<guide::FirefoxSetup, BoxError> {
    let mut setup = guide::FirefoxSetup::default();
    let (takes, others): (Vec<_>, Vec<_>) = firefox::profiles(layout)
        .into_iter()
        .partition(|p| p.channel.takes_unsigned());
    setup.release = others;
    if takes.is_empty() || args.no_firefox_unsigned {
        setup.declined = args.no_firefox_unsigned && !takes.is_empty();
        return Ok(setup);
    }
    let agreed_before = takes.iter().all(|p| firefox::has_block(&p.path));
    let agreed = agreed_before || args.yes || ask_unsigned(&takes)?;
    if !agreed {
        setup.declined = true;
        return Ok(setup);
    }
    for profile in takes {
        match firefox::install(&profile.path) {
            Ok(changed) => {
                let verb = if changed { "wrote" } else { "unchanged" };
                writeln!(
                    out(),
                    "{verb} {}",
                    firefox::xpi_path(&profile.path).display()
                )?;
                setup.installed.push(profile);
            }
            Err(err) => {
                eprintln!(
                    "him: cannot install the add-on in Firefox profile {}: {err}",
                    profile.path.display()
                );
                setup.failed = true;
            }
        }
    }
    Ok(setup)
}

/// Asks on the terminal whether to turn signature checks off; no terminal means no.
fn ask_unsigned(profiles: &[firefox::Profile]) -> Result<bool, BoxError> {
    use std::io::IsTerminal;
    if !(io::stdin().is_terminal() && io::stderr().is_terminal()) {
        return Ok(false);
    }
    let names: Vec<String> = profiles
        .iter()
        .map(|p| format!("{} ({})", p.name, p.path.display()))
        .collect();
    eprint!(
        "Firefox keeps an add-on across restarts only when it is signed by Mozilla, unless \
         signature checks are off.\nTurn them off in Firefox profile {}, to install him there \
         for good? This lets every add-on of that profile run unsigned; him writes the two \
         settings in its user.js, and `him uninstall` takes them out. [y/N] ",
        names.join(", ")
    );
    let mut answer = String::new();
    io::stdin().read_line(&mut answer)?;
    Ok(matches!(answer.trim(), "y" | "Y" | "yes" | "Yes"))
}

/// The builds the chosen browsers load.
fn builds_for(chosen: &[Browser]) -> Vec<extension::Build> {
    let mut builds = Vec::new();
    if chosen
        .iter()
        .any(|b| browsers::family(*b) == browsers::Family::Chromium)
    {
        builds.push(extension::Build::Chromium);
    }
    if chosen.contains(&Browser::Firefox) {
        builds.push(extension::Build::Firefox);
    }
    builds
}

/// Writes the extension's builds for the chosen browsers under `root`, saying on stdout what
/// changed. Returns whether an earlier copy was updated, and whether everything was written.
pub(super) fn write_extension_builds(
    root: &Path,
    chosen: &[Browser],
) -> Result<(bool, bool), BoxError> {
    let mut updated = false;
    let mut ok = true;
    for build in builds_for(chosen) {
        let dir = root.join(build.folder_name());
        let existed = dir.is_dir();
        match extension::write_folder(&dir, build) {
            Ok(done) => {
                updated |= existed && done.changed();
                let verb = if done.changed() { "wrote" } else { "unchanged" };
                writeln!(out(), "{verb} {}", dir.display())?;
            }
            Err(err) => {
                eprintln!(
                    "him: cannot write the extension to {}: {err}",
                    dir.display()
                );
                ok = false;
            }
        }
        if build == extension::Build::Firefox {
            let xpi = root.join(extension::xpi_name());
            match extension::write_if_changed(&xpi, &extension::xpi()) {
                Ok(true) => writeln!(out(), "wrote {}", xpi.display())?,
                Ok(false) => writeln!(out(), "unchanged {}", xpi.display())?,
                Err(err) => {
                    eprintln!("him: cannot write {}: {err}", xpi.display());
                    ok = false;
                }
            }
        }
    }
    Ok((updated, ok))
}

/// Takes the add-on and the signature settings out of every Firefox profile that has them.
pub(super) fn remove_from_firefox_profiles(layout: &Layout) -> Result<bool, BoxError> {
    let mut ok = true;
    for profile in firefox::profiles(layout) {
        match firefox::uninstall(&profile.path) {
            Ok(removed) => {
                if removed.xpi {
                    writeln!(
                        out(),
                        "removed {}",
                        firefox::xpi_path(&profile.path).display()
                    )?;
                }
                if removed.prefs {
                    writeln!(
                        out(),
                        "removed him's settings from {} (signature checks are on again)",
                        profile.path.join("user.js").display()
                    )?;
                    if firefox::in_use(&profile.path) {
                        eprintln!(
                            "him: Firefox is running with profile {}: quit it and run `him \
                             uninstall --browser firefox` again, or it writes the settings back \
                             into prefs.js when it quits",
                            profile.name
                        );
                    }
                }
            }
            Err(err) => {
                eprintln!(
                    "him: cannot remove him from Firefox profile {}: {err}",
                    profile.path.display()
                );
                ok = false;
            }
        }
    }
    Ok(ok)
}

/// `him extension BUILD PATH`: one build of the extension, as `him install` writes it.
pub fn write_extension(args: &ExtensionArgs) -> Result<ExitCode, BoxError> {
    let written = match args.build {
        ExtensionBuild::Chromium => extension::write_folder(&args.path, extension::Build::Chromium),
        ExtensionBuild::Firefox => extension::write_folder(&args.path, extension::Build::Firefox),
        ExtensionBuild::Xpi => extension::write_if_changed(&args.path, &extension::xpi())
            .map(|_| extension::Written::default()),
    };
    written.map_err(|err| format!("cannot write {}: {err}", args.path.display()))?;
    writeln!(out(), "wrote {}", args.path.display())?;
    Ok(ExitCode::SUCCESS)
}

/// Removes the extension builds that only the uninstalled browsers load (every build when
/// all browsers go), then him's folders if that left them empty.
pub(super) fn remove_extension_builds(root: &Path, chosen: &[Browser]) -> Result<bool, BoxError> {
    let mut ok = true;
    let all_chromium = browsers::ALL
        .iter()
        .filter(|b| browsers::family(**b) == browsers::Family::Chromium)
        .all(|b| chosen.contains(b));
    let mut gone: Vec<PathBuf> = Vec::new();
    if all_chromium {
        gone.push(root.join(extension::Build::Chromium.folder_name()));
    }
    if chosen.contains(&Browser::Firefox) {
        gone.push(root.join(extension::Build::Firefox.folder_name()));
        gone.push(root.join(extension::xpi_name()));
    }
    for path in gone {
        let is_link = std::fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink());
        let result = if path.is_dir() && !is_link {
            if !extension::is_ours(&path) {
                eprintln!(
                    "him: left {} alone: him did not write it (no {})",
                    path.display(),
                    extension::MARKER
                );
                continue;
            }
            std::fs::remove_dir_all(&path)
        } else {
            std::fs::remove_file(&path)
        };
        match result {
            Ok(()) => writeln!(out(), "removed {}", path.display())?,
            Err(err) if err.kind() == io::ErrorKind::NotFound => {}
            Err(err) => {
                eprintln!("him: cannot remove {}: {err}", path.display());
                ok = false;
            }
        }
    }
    // `<data>/him/extension`, then `<data>/him`, when nothing else is left in them.
    for dir in [Some(root), root.parent()].into_iter().flatten() {
        let _ = std::fs::remove_dir(dir);
    }
    Ok(ok)
}
