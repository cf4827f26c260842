//! `samsa-bench-limits`: the machine's ceilings (see `samsa_bench::limits`), one parseable
//! line each:
//!
//!   samsa-bench-limits loopback [--seconds S]
//!   samsa-bench-limits disk --dir DIR [--mib N] [--syncs N] [--pace-mb-per-s R]
//!   samsa-bench-limits replication --dir DIR [--mib N]   (see `samsa_bench::replication_floor`)
//!
//! `loopback` runs the reader (and then an echo server for round trips) in a child process (itself, with the hidden `loopback-reader`
//! command), so the figure is between two processes, as between a client and a broker.

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::Context;
use samsa_bench::limits;

/// Round trips measured for the loopback latency floor, and their size.
const RTT_TRIPS: usize = 5_000;
const RTT_MESSAGE_BYTES: usize = 100;

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let flag = |name: &str| -> Option<String> {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1).cloned())
    };
    match args.first().map(String::as_str) {
        Some("loopback") => {
            let seconds: f64 = flag("--seconds").map_or(Ok(2.0), |s| s.parse())?;
            let exe = std::env::current_exe()?;
            let mut child = Command::new(exe)
                .arg("loopback-reader")
                .stdout(Stdio::piped())
                .spawn()
                .context("start the reader process")?;
            let mut lines = BufReader::new(child.stdout.take().context("reader stdout")?).lines();
            let addr = lines.next().context("reader said nothing")??;
            limits::loopback_write(&addr, Duration::from_secs_f64(seconds))?;
            let result = lines.next().context("reader gave no result")??;
            let (rtt_p50, rtt_p99) = limits::loopback_rtt(&addr, RTT_MESSAGE_BYTES, RTT_TRIPS)?;
            child.wait()?;
            let mut parts = result.split_whitespace();
            let bytes: f64 = parts.next().context("bytes")?.parse()?;
            let secs: f64 = parts.next().context("seconds")?.parse()?;
            let mb_per_s = bytes / 1e6 / secs.max(1e-9);
            println!(
                "LIMIT test=loopback_tcp MB_per_s={mb_per_s:.0} Gbit_per_s={:.1}",
                mb_per_s * 8.0 / 1000.0
            );
            println!("LIMIT test=loopback_rtt_100B p50_ms={rtt_p50:.3} p99_ms={rtt_p99:.3}");
        }
        Some("loopback-reader") => {
            let listener = TcpListener::bind("127.0.0.1:0")?;
            println!("{}", listener.local_addr()?);
            let (bytes, secs) = limits::loopback_read(&listener)?;
            println!("{bytes} {secs}");
            limits::loopback_echo(&listener, RTT_MESSAGE_BYTES)?;
        }
        Some("disk") => {
            let dir = PathBuf::from(flag("--dir").context("disk needs --dir")?);
            let mib: u64 = flag("--mib").map_or(Ok(512), |s| s.parse())?;
            let syncs: usize = flag("--syncs").map_or(Ok(200), |s| s.parse())?;
            let pace: f64 = flag("--pace-mb-per-s").map_or(Ok(0.0), |s| s.parse())?;
            let f = limits::disk(&dir, mib << 20, syncs)?;
            println!(
                "LIMIT test=disk_write_buffered MB_per_s={:.0} cpu_s_per_GiB={:.3}",
                f.buffered_mb_per_s, f.buffered_cpu_s_per_gib
            );
            println!(
                "LIMIT test=disk_write_buffered_preallocated MB_per_s={:.0} cpu_s_per_GiB={:.3}",
                f.preallocated.0, f.preallocated.1
            );
            println!(
                "LIMIT test=disk_write_buffered_appends MB_per_s={:.0} cpu_s_per_GiB={:.3}",
                f.appends.0, f.appends.1
            );
            for how in limits::SocketToFile::ALL {
                let (mb_per_s, cpu) = match limits::socket_to_file(&dir, mib << 20, how, pace) {
                    Ok(figures) => figures,
                    // A file system that refuses O_DIRECT (tmpfs before Linux 6.6, say).
                    Err(e)
                        if how == limits::SocketToFile::Direct
                            && e.kind() == std::io::ErrorKind::InvalidInput =>
                    {
                        continue
                    }
                    Err(e) => return Err(e.into()),
                };
                println!(
                    "LIMIT test=socket_to_file_{} MB_per_s={mb_per_s:.0} cpu_s_per_GiB={cpu:.3}",
                    how.name()
                );
            }
            if let Some((mb_per_s, cpu)) = f.direct {
                println!(
                    "LIMIT test=disk_write_direct MB_per_s={mb_per_s:.0} cpu_s_per_GiB={cpu:.3}"
                );
            }
            println!("LIMIT test=disk_write_flushed MB_per_s={:.0}", f.flushed_mb_per_s);
            println!(
                "LIMIT test=disk_write_fdatasync_each_MiB MB_per_s={:.0}",
                f.fdatasync_each_mb_per_s
            );
            println!(
                "LIMIT test=fdatasync_4KiB p50_ms={:.3} p99_ms={:.3}",
                f.fdatasync_p50_ms, f.fdatasync_p99_ms
            );
        }
        Some("replication") => {
            let dir = PathBuf::from(flag("--dir").context("replication needs --dir")?);
            let mib: u64 = flag("--mib").map_or(Ok(1024), |s| s.parse())?;
            let (rf1, rf3) = samsa_bench::replication_floor::floor(&dir, mib << 20)?;
            println!(
                "LIMIT test=replication_floor rf1_cpu_s_per_GiB={rf1:.3} rf3_cpu_s_per_GiB={rf3:.3} ratio={:.2}",
                rf3 / rf1
            );
        }
        _ => anyhow::bail!("usage: samsa-bench-limits loopback [--seconds S] | disk --dir DIR [--mib N] [--syncs N] | replication --dir DIR [--mib N]"),
    }
    Ok(())
}
