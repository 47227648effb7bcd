//! `him install` writes the extension built into him to the person's own folder, per
//! browser family, and `him uninstall` removes it; `him extension` writes the same builds;
//! `him try` with no browser says so. Real binary, throw-away HOME (tests/support/install.rs);
//! the folder run by real Chromium is tests/e2e/install.test.mjs.
#![cfg(all(unix, not(target_os = "macos")))]
#![allow(clippy::unwrap_used)]

mod support;

use std::path::{Path, PathBuf};

use support::install::Env;

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
    let files = tree(&chromium);
    assert!(files.contains(&"panel/panel.html".to_owned()), "{files:?}");
    assert!(
        !files
            .iter()
            .any(|f| f.ends_with(".py") || f == "README.md" || f == "manifest.firefox.json")
    );
    assert_eq!(
        files,
        tree(&root.join("firefox")),
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
