//! The layering guard (issue 40): `scripts/layers.py --check` reads `broker/src` and fails
//! when a file below the handlers names `Broker` or depends on a file above it (the handlers,
//! the publisher, the metrics scrape, the network layer, start-up), when an import circle
//! spans two top-level modules, or when a file grows past 1,500 lines. The layers are drawn
//! in the crate docs (`lib.rs`); `scripts/layers.py --why A B` shows which lines make a
//! dependency.

use std::process::Command;

#[test]
fn the_crate_keeps_its_layers() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let out = Command::new("python3")
        .arg(root.join("scripts/layers.py"))
        .arg("--check")
        .current_dir(&root)
        .output()
        .expect("python3 runs scripts/layers.py");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the layering guard failed:\n{said}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(said.contains("layering: ok"), "unexpected output:\n{said}");
}
