//! `him install` writes the extension built into him to the person's own folder, per
//! browser family, and `him uninstall` removes it; `him extension` writes the same builds;
//! `him try` with no browser says so. Real binary, throw-away HOME (tests/integration/support/install.rs);
//! the folder run by real Chromium is tests/e2e/install.test.mjs.
#![cfg(all(unix, not(target_os = "macos")))]
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};

use crate::support;
use crate::support::install::Env;

fn root(env: &Env) -> PathBuf {
    env.home.join(".local/share/him/extension")
}

fn repo_extension() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("extension")
}

/// Every file under `dir`, by path inside it, sorted.
fn tree(dir: &Path) -> Vec<String> {
    fn walk(base: &Path, dir: &Path, out: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(base, &path, out);
            } else {
                out.push(path.strip_prefix(base).unwrap().display().to_string());
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

#[test]
fn chromium_gets_the_chromium_build_and_firefox_its_own_folder_and_xpi() {
    let env = Env::new();
    let run = env.him(&["install", "--browser", "chromium", "--browser", "firefox"]);
    assert!(run.ok(), "{}", run.stderr);
    let root = root(&env);
    for line in [
        format!("wrote {}", root.join("chromium").display()),
        format!("wrote {}", root.join("firefox").display()),
        format!("wrote {}", root.join("him@him.dev.xpi").display()),
    ] {
        assert!(
            run.stdout.lines().any(|l| l == line),
            "{line}\n{}",
            run.stdout
        );
    }
    let chromium = root.join("chromium");
    assert_eq!(
        std::fs::read(chromium.join("manifest.json")).unwrap(),
        std::fs::read(repo_extension().join("manifest.json")).unwrap()
    );
    assert_eq!(
        std::fs::read(root.join("firefox/manifest.json")).unwrap(),
        std::fs::read(repo_extension().join("manifest.firefox.json")).unwrap()
    );
    // Each folder is marked as him's (what him may rewrite and remove); the .xpi has no mark.
    let mut files = tree(&chromium);
    let marker = files.iter().position(|f| f == ".him-extension");
    assert!(marker.is_some(), "{files:?}");
    files.retain(|f| f != ".him-extension");
    assert!(files.contains(&"panel/panel.html".to_owned()), "{files:?}");
    assert!(
        !files
            .iter()
            .any(|f| f.ends_with(".py") || f == "README.md" || f == "manifest.firefox.json")
    );
    let mut firefox_files = tree(&root.join("firefox"));
    firefox_files.retain(|f| f != ".him-extension");
    assert_eq!(
        files, firefox_files,
        "the builds differ only in manifest.json's contents"
    );

    // The .xpi holds the Firefox folder's files, byte for byte (Python's zipfile reads it).
    let listing = std::process::Command::new("python3")
        .args([
            "-c",
            "import sys,zipfile,hashlib; z=zipfile.ZipFile(sys.argv[1]); assert z.testzip() is None; \
             [print(n, hashlib.sha256(z.read(n)).hexdigest()) for n in sorted(z.namelist())]",
        ])
        .arg(root.join("him@him.dev.xpi"))
        .output()
        .unwrap();
    assert!(
        listing.status.success(),
        "{}",
        String::from_utf8_lossy(&listing.stderr)
    );
    let listing = String::from_utf8(listing.stdout).unwrap();
    assert_eq!(listing.lines().count(), files.len());
    let firefox = root.join("firefox");
    let sha = |p: &Path| {
        let out = std::process::Command::new("sha256sum")
            .arg(p)
            .output()
            .unwrap();
        String::from_utf8(out.stdout)
            .unwrap()
            .split(' ')
            .next()
            .unwrap()
            .to_owned()
    };
    for line in listing.lines() {
        let (name, digest) = line.split_once(' ').unwrap();
        assert_eq!(digest, sha(&firefox.join(name)), "{name}");
    }
}

#[test]
fn the_folder_follows_an_absolute_xdg_data_home() {
    let env = Env::new();
    let data = env.home.parent().unwrap().join("data");
    let run: support::install::Run = env
        .command(&["install", "--browser", "edge"])
        .env("XDG_DATA_HOME", &data)
        .output()
        .unwrap()
        .into();
    assert!(run.ok(), "{}", run.stderr);
    assert!(data.join("him/extension/chromium/manifest.json").is_file());
    assert!(
        !data.join("him/extension/firefox").exists(),
        "no Firefox build for Edge alone"
    );
    assert!(
        run.stderr
            .contains("Microsoft Edge: open edge://extensions"),
        "{}",
        run.stderr
    );
}

#[test]
fn installing_again_repairs_the_copy_and_removes_stale_files_then_changes_nothing() {
    let env = Env::new();
    assert!(env.him(&["install", "--browser", "chromium"]).ok());
    let dir = root(&env).join("chromium");
    std::fs::write(dir.join("background.js"), "// an older worker").unwrap();
    std::fs::create_dir(dir.join("old")).unwrap();
    std::fs::write(dir.join("old/gone.js"), "").unwrap();

    let run = env.him(&["install", "--browser", "chromium"]);
    assert!(run.ok(), "{}", run.stderr);
    assert!(
        run.stdout.contains(&format!("wrote {}\n", dir.display())),
        "{}",
        run.stdout
    );
    assert!(run.stderr.contains("updated in place"), "{}", run.stderr);
    assert_eq!(
        std::fs::read(dir.join("background.js")).unwrap(),
        std::fs::read(repo_extension().join("background.js")).unwrap()
    );
    assert!(!dir.join("old").exists());

    let run = env.him(&["install", "--browser", "chromium"]);
    assert!(
        run.stdout
            .contains(&format!("unchanged {}\n", dir.display())),
        "{}",
        run.stdout
    );
    assert!(!run.stderr.contains("updated in place"), "{}", run.stderr);
}

#[test]
fn uninstall_removes_the_builds_only_their_browsers_load() {
    let env = Env::new();
    assert!(
        env.him(&["install", "--browser", "chrome", "--browser", "firefox"])
            .ok()
    );
    let root = root(&env);
    // Chrome is not every Chromium browser: uninstalling Chrome alone leaves the folder
    // another Chromium browser may load; Firefox's build goes with Firefox.
    let run = env.him(&["uninstall", "--browser", "chrome", "--browser", "firefox"]);
    assert!(run.ok(), "{}", run.stderr);
    assert!(root.join("chromium").is_dir());
    assert!(!root.join("firefox").exists());
    assert!(!root.join("him@him.dev.xpi").exists());

    let run = env.him(&["uninstall"]);
    assert!(run.ok(), "{}", run.stderr);
    assert!(
        run.stdout
            .contains(&format!("removed {}\n", root.join("chromium").display()))
    );
    assert!(
        !env.home.join(".local/share/him").exists(),
        "him's empty folders are gone too"
    );
    assert!(
        env.home.join(".local/share").is_dir(),
        "the data home itself stays"
    );
}

#[test]
fn him_extension_writes_what_install_writes() {
    let env = Env::new();
    assert!(
        env.him(&["install", "--browser", "chromium", "--browser", "firefox"])
            .ok()
    );
    let out = env.home.parent().unwrap().join("out");
    for (build, installed) in [("chromium", "chromium"), ("firefox", "firefox")] {
        let dir = out.join(build);
        let run = env.him(&["extension", build, dir.to_str().unwrap()]);
        assert!(run.ok(), "{}", run.stderr);
        let theirs = root(&env).join(installed);
        assert_eq!(tree(&dir), tree(&theirs));
        for f in tree(&dir) {
            assert_eq!(
                std::fs::read(dir.join(&f)).unwrap(),
                std::fs::read(theirs.join(&f)).unwrap(),
                "{f}"
            );
        }
    }
    let xpi = out.join("him.xpi");
    assert!(env.him(&["extension", "xpi", xpi.to_str().unwrap()]).ok());
    assert_eq!(
        std::fs::read(&xpi).unwrap(),
        std::fs::read(root(&env).join("him@him.dev.xpi")).unwrap()
    );
}

#[test]
fn him_try_with_no_browser_connected_says_so_and_how_to_find_out_why() {
    let env = Env::new();
    std::fs::create_dir(&env.runtime).unwrap();
    let run = env.him(&["try"]);
    assert_eq!(run.code, 1);
    assert_eq!(run.stdout, "", "no result: nothing was asked");
    assert!(
        run.stderr
            .contains("no browser with the him extension is connected"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("`him doctor`"), "{}", run.stderr);
}

/// `packaging/build-dist` packages the binary under test: the store zip, the .xpi and a
/// .deb whose contents are checked with `dpkg-deb -c`; then, extracted with `dpkg-deb -x` and
/// laid over `/usr` and `/etc` in a mount namespace of its own (never installed on this
/// machine), `him doctor` run by a fresh user finds the system-wide manifests starting
/// `/usr/bin/him`, and the extension is in `/usr/share/him`.
#[test]
fn the_debian_package_holds_him_the_extension_and_the_manifests_and_its_doctor_finds_them() {
    let Some(user) = support::fresh_user::fresh_user() else {
        return;
    };
    let dist = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("packaging/build-dist"),
    )
    .args(["--quick", "--bin", env!("CARGO_BIN_EXE_him"), "--out"])
    .arg(dist.path())
    .output()
    .unwrap();
    assert!(
        out.status.success(),
        "build-dist failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let version = env!("CARGO_PKG_VERSION");
    let listed: Vec<String> = std::fs::read_dir(dist.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let deb = listed
        .iter()
        .find(|name| name.starts_with(&format!("him_{version}_")) && name.ends_with(".deb"))
        .unwrap_or_else(|| panic!("no .deb among {listed:?}"));
    for name in [
        format!("him-chromium-{version}.zip"),
        format!("him-firefox-{version}.xpi"),
    ] {
        assert!(listed.contains(&name), "{name} missing from {listed:?}");
    }
    // The store's zip has no "key": the store gives the id.
    let store = std::process::Command::new("python3")
        .args(["-c", "import json,sys,zipfile; m=json.loads(zipfile.ZipFile(sys.argv[1]).read('manifest.json')); print('key' in m, m['manifest_version'])"])
        .arg(dist.path().join(format!("him-chromium-{version}.zip")))
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&store.stdout).trim(), "False 3");

    let deb = dist.path().join(deb);
    let contents = std::process::Command::new("dpkg-deb")
        .arg("-c")
        .arg(&deb)
        .output()
        .unwrap();
    let contents = String::from_utf8_lossy(&contents.stdout);
    for path in [
        "./usr/bin/him",
        "./usr/share/him/extension/chromium/manifest.json",
        "./usr/share/him/extension/chromium/panel/panel.html",
        "./usr/share/him/extension/firefox/manifest.json",
        "./usr/share/him/him@him.dev.xpi",
        "./etc/chromium/native-messaging-hosts/dev.him.host.json",
        "./etc/opt/chrome/native-messaging-hosts/dev.him.host.json",
        "./usr/lib/mozilla/native-messaging-hosts/dev.him.host.json",
    ] {
        assert!(
            contents.lines().any(|l| l.ends_with(path)),
            "{path} is not in the package:\n{contents}"
        );
    }
    assert!(
        contents
            .lines()
            .any(|l| l.starts_with("-rwxr-xr-x root/root") && l.ends_with("./usr/bin/him")),
        "him is root's and executable:\n{contents}"
    );

    let root = tempfile::tempdir().unwrap();
    std::fs::set_permissions(
        root.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let extracted = std::process::Command::new("dpkg-deb")
        .arg("-x")
        .arg(&deb)
        .arg(root.path())
        .status()
        .unwrap();
    assert!(extracted.success());
    let root = root.path().display().to_string();
    let script = format!(
        "set -e; mount --make-rprivate /; \
         mount -t overlay overlay -o lowerdir={root}/usr:/usr /usr; \
         mount -t overlay overlay -o lowerdir={root}/etc:/etc /etc; \
         test -f /usr/share/him/extension/chromium/manifest.json; \
         exec setpriv --reuid={uid} --regid={gid} --clear-groups env -i HOME={home} \
         USER={name} PATH=/usr/bin:/bin /usr/bin/him doctor",
        uid = user.uid,
        gid = user.gid,
        home = user.home.display(),
        name = user.name,
    );
    let doctor = std::process::Command::new("unshare")
        .args(["-m", "sh", "-c", &script])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&doctor.stdout);
    let err = String::from_utf8_lossy(&doctor.stderr);
    for manifest in [
        "Chromium: /etc/chromium/native-messaging-hosts/dev.him.host.json",
        "Google Chrome: /etc/opt/chrome/native-messaging-hosts/dev.him.host.json",
        "Firefox: /usr/lib/mozilla/native-messaging-hosts/dev.him.host.json",
    ] {
        assert!(
            said.lines()
                .any(|l| l.contains("✓") && l.contains(manifest)),
            "the doctor does not pass {manifest}:\n{said}\n{err}"
        );
    }
    assert!(!said.contains("not this binary"), "{said}");
    // Nothing of the package reached this machine's own folders.
    assert!(
        !Path::new("/usr/share/him").exists()
            && !Path::new("/etc/chromium/native-messaging-hosts/dev.him.host.json").exists()
    );
}
