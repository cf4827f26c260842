//! The power-loss shim from the command line.
//!
//! `power_loss apply ROOT [JOURNAL]`: after the process that ran under the shim is gone, rolls
//! ROOT back to what a power cut leaves (JOURNAL defaults to `ROOT.powerloss`).
//!
//! `power_loss env ROOT`: prints the environment that puts a program under the shim
//! (`env $(power_loss env /data) samsa ...`), building the shim if needed.
//!
//! `power_loss run ROOT STEP...`: does file operations in ROOT with std's `File`, as the broker
//! does, then prints `done` and waits to be killed (the shim's self-test runs it under the
//! shim). Steps, names relative to ROOT (`.` is ROOT itself):
//! `write:NAME:TEXT` (append, creating), `pwrite:NAME:OFFSET:TEXT`, `truncate:NAME:LEN`,
//! `fsync:NAME`, `fdatasync:NAME`, `syncdir:DIR`, `mkdir:DIR`, `rename:FROM:TO`,
//! `unlink:NAME`, `replace:NAME:TEXT` (a checkpoint: write NAME.tmp, fsync, rename, fsync the
//! directory), `exit` (end at once instead of waiting).

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use compat_tests::power_loss;

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("apply") if args.len() >= 2 => {
            let root = PathBuf::from(&args[1]);
            let journal = args
                .get(2)
                .map(PathBuf::from)
                .unwrap_or_else(|| power_loss::journal_dir(&root));
            let lost = power_loss::apply(&root, &journal)?;
            println!("{lost:?}");
        }
        Some("env") if args.len() == 2 => {
            let root = PathBuf::from(&args[1]);
            for (k, v) in power_loss::env(&root, &power_loss::journal_dir(&root)) {
                println!("{k}={v}");
            }
        }
        Some("run") if args.len() >= 2 => {
            let root = PathBuf::from(&args[1]);
            for step in &args[2..] {
                if step == "exit" {
                    return Ok(());
                }
                run_step(&root, step)?;
            }
            println!("done");
            std::io::stdout().flush()?;
            loop {
                std::thread::park();
            }
        }
        _ => anyhow::bail!(
            "usage: power_loss apply ROOT [JOURNAL] | power_loss env ROOT | power_loss run ROOT STEP..."
        ),
    }
    Ok(())
}

fn run_step(root: &Path, step: &str) -> anyhow::Result<()> {
    let parts: Vec<&str> = step.splitn(4, ':').collect();
    let at = |name: &str| root.join(name);
    match parts.as_slice() {
        ["write", name, text] => OpenOptions::new()
            .create(true)
            .append(true)
            .open(at(name))?
            .write_all(text.as_bytes())?,
        ["pwrite", name, offset, text] => OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(at(name))?
            .write_all_at(text.as_bytes(), offset.parse()?)?,
        ["truncate", name, len] => OpenOptions::new()
            .write(true)
            .open(at(name))?
            .set_len(len.parse()?)?,
        ["fsync", name] => File::open(at(name))?.sync_all()?,
        ["fdatasync", name] => File::open(at(name))?.sync_data()?,
        ["syncdir", dir] => File::open(at(dir))?.sync_all()?,
        ["mkdir", dir] => fs::create_dir(at(dir))?,
        ["rename", from, to] => fs::rename(at(from), at(to))?,
        ["unlink", name] => fs::remove_file(at(name))?,
        ["replace", name, text] => {
            let target = at(name);
            let tmp = at(&format!("{name}.tmp"));
            let mut f = File::create(&tmp)?;
            f.write_all(text.as_bytes())?;
            f.sync_all()?;
            fs::rename(&tmp, &target)?;
            File::open(target.parent().unwrap_or(root))?.sync_all()?;
        }
        _ => anyhow::bail!("unknown step {step}"),
    }
    Ok(())
}
