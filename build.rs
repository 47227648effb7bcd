//! Lists `extension/` for `src/install/extension.rs`: one `include_bytes!` per file, so the
//! extension ships inside the binary (`him install` writes it out) while the extension itself
//! stays plain files with no build step. Which file goes to which browser is decided there,
//! not here: every file is listed.

#![allow(clippy::print_stdout)] // cargo reads a build script's instructions from its stdout

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn main() {
    let root = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it"))
        .join("extension");
    // A folder here makes cargo rerun this script when any file under it changes.
    println!("cargo:rerun-if-changed=extension");
    let mut files = Vec::new();
    walk(&root, &root, &mut files);
    files.sort();
    let mut out = String::from(
        "/// Every file under `extension/`: its path there (with `/`) and its bytes.\n\
         pub static FILES: &[(&str, &[u8])] = &[\n",
    );
    for rel in &files {
        let abs = root.join(rel);
        writeln!(
            out,
            "    ({rel:?}, include_bytes!({:?})),",
            abs.display().to_string()
        )
        .expect("write to a String");
    }
    out.push_str("];\n");
    let dest = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets it"))
        .join("extension_files.rs");
    std::fs::write(dest, out).expect("write extension_files.rs");
}

fn walk(root: &Path, dir: &Path, files: &mut Vec<String>) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("read {}: {e}", dir.display()));
    for entry in entries {
        let path = entry.expect("read a folder entry").path();
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        // Editors' and the OS's hidden files are not part of the extension.
        if name.starts_with('.') {
            continue;
        }
        if path.is_dir() {
            walk(root, &path, files);
        } else {
            let rel = path.strip_prefix(root).expect("under the root");
            let parts: Vec<&str> = rel
                .iter()
                .map(|c| c.to_str().expect("UTF-8 file name"))
                .collect();
            files.push(parts.join("/"));
        }
    }
}
