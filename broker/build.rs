//! Records the git commit the `samsa` binary is built from, for `samsa --version` and the
//! start-up line: `GIT_COMMIT_OF_SAMSA` in the environment when set (a build from a tarball can
//! say what it is), else `git rev-parse --short=12 HEAD` with `-dirty` when tracked files differ
//! from it, else `unknown` (no git, or the sources are not a repository of their own).
//! The name does not start with `SAMSA_`: `cargo test` gives a build script's `rustc-env`
//! variables to the test processes too, and a `samsa` they start reads `SAMSA_*` as settings.
//!
//! The script runs again when HEAD moves (a commit, a checkout) and when any source of the
//! binary changes, the only times the answer can change; those edits rebuild the broker anyway.

use std::path::{Path, PathBuf};
use std::process::Command;

fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    Some(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    println!("cargo:rerun-if-env-changed=GIT_COMMIT_OF_SAMSA");
    println!("cargo:rerun-if-changed=build.rs");
    // The workspace's crates the binary is built from: a change there may make the tree dirty.
    let workspace = manifest.parent().unwrap_or(&manifest).to_path_buf();
    for dir in [
        "broker/src",
        "protocol/src",
        "storage/src",
        "cluster/src",
        "streams-group/src",
    ] {
        let p = workspace.join(dir);
        if p.exists() {
            println!("cargo:rerun-if-changed={}", p.display());
        }
    }
    let commit = match std::env::var("GIT_COMMIT_OF_SAMSA") {
        Ok(c) if !c.trim().is_empty() => c.trim().to_string(),
        _ => from_git(&manifest).unwrap_or_else(|| "unknown".to_string()),
    };
    println!("cargo:rustc-env=GIT_COMMIT_OF_SAMSA={commit}");
}

fn from_git(dir: &Path) -> Option<String> {
    // Only this workspace's own repository: sources unpacked inside another one are not it.
    let top = PathBuf::from(git(dir, &["rev-parse", "--show-toplevel"])?);
    let workspace = dir.parent()?;
    if top.canonicalize().ok()? != workspace.canonicalize().ok()? {
        return None;
    }
    let head = git(dir, &["rev-parse", "--short=12", "HEAD"])?;
    // HEAD itself, and the branch it names (a commit moves the branch, not HEAD's file).
    for path in ["HEAD", "packed-refs"] {
        if let Some(p) = git(
            dir,
            &["rev-parse", "--path-format=absolute", "--git-path", path],
        ) {
            watch(&p);
        }
    }
    if let Some(branch) = git(dir, &["symbolic-ref", "-q", "HEAD"]) {
        if let Some(p) = git(
            dir,
            &["rev-parse", "--path-format=absolute", "--git-path", &branch],
        ) {
            watch(&p);
        }
    }
    // Tracked files that differ from HEAD (untracked ones are not part of the build).
    let dirty = git(
        dir,
        &[
            "status",
            "--porcelain",
            "--untracked-files=no",
            "--ignore-submodules",
        ],
    )
    .is_some_and(|s| !s.is_empty());
    Some(if dirty { format!("{head}-dirty") } else { head })
}

/// Reruns the script when `path` changes; a path that does not exist is not watched (cargo
/// would run the script at every build).
fn watch(path: &str) {
    if Path::new(path).exists() {
        println!("cargo:rerun-if-changed={path}");
    }
}
