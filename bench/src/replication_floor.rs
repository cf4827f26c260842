//! The kernel's floor under replication: what moving the same bytes costs the CPU with
//! nothing of a broker around it, at replication factor 1 and 3, measured in one process on
//! the machine and data directory of the broker runs.
//!
//! - RF=1: a "leader" thread reads what a producer thread streams over loopback and appends
//!   it to segment files in the data directory.
//! - RF=3: the same leader, which after each append also sends the range it appended to two
//!   "follower" threads with `sendfile` from its file (as Samsa serves a follower's fetch), and
//!   the followers, each reading its socket and appending to segment files of its own.
//!
//! Segments roll every 64 MiB and each replica keeps four (as the replication bench's
//! `retention.bytes`), so unlinking old segments is in both. The CPU counted is the leader's
//! and followers' threads (user + system, `RUSAGE_THREAD`), not the producer's, which is how
//! the broker bench counts broker CPU: on loopback the kernel runs the receiving side's
//! TCP processing in the sender's context, so the producer pays for the leader's receive
//! processing and the leader for its followers'. No record framing, no CRC, no request: what
//! the ratio of the two is, a broker's RF=3 / RF=1 CPU ratio cannot go under on this machine.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use crate::limits::WRITE_BYTES;

/// Segment size and segments kept per replica.
const SEGMENT_BYTES: u64 = 64 << 20;
const SEGMENTS_KEPT: usize = 4;

/// CPU seconds per GiB moved: (RF=1, RF=3), each the best of three passes after an
/// unmeasured one of each (so that both write into page cache earlier passes freed).
pub fn floor(dir: &Path, total_bytes: u64) -> std::io::Result<(f64, f64)> {
    let gib = total_bytes as f64 / (1u64 << 30) as f64;
    pass(dir, total_bytes, 0)?;
    pass(dir, total_bytes, 2)?;
    let (mut rf1, mut rf3) = (f64::MAX, f64::MAX);
    for _ in 0..3 {
        rf1 = rf1.min(pass(dir, total_bytes, 0)?);
        rf3 = rf3.min(pass(dir, total_bytes, 2)?);
    }
    Ok((rf1 / gib, rf3 / gib))
}

/// A replica's log: segment files under its own directory, rolled and deleted as above.
struct Segments {
    dir: PathBuf,
    files: Vec<(PathBuf, File)>,
    at: u64,
}

impl Segments {
    fn new(dir: PathBuf) -> std::io::Result<Segments> {
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)?;
        Ok(Segments {
            dir,
            files: Vec::new(),
            at: 0,
        })
    }

    /// Appends `data`; returns the file and offset it went to (for sendfile).
    fn append(&mut self, data: &[u8]) -> std::io::Result<(&File, u64)> {
        if self.files.is_empty() || self.at >= SEGMENT_BYTES {
            let path = self.dir.join(format!("{:020}.log", self.files.len()));
            let f = OpenOptions::new()
                .create(true)
                .read(true)
                .write(true)
                .truncate(true)
                .open(&path)?;
            self.files.push((path, f));
            self.at = 0;
            if self.files.len() > SEGMENTS_KEPT {
                let (old, _) = &self.files[self.files.len() - SEGMENTS_KEPT - 1];
                // Unlinked once: a later roll finds the name gone.
                let _ = std::fs::remove_file(old);
            }
        }
        let (_, f) = self.files.last().expect("a segment is open");
        f.write_all_at(data, self.at)?;
        let offset = self.at;
        self.at += data.len() as u64;
        Ok((f, offset))
    }
}

impl Drop for Segments {
    fn drop(&mut self) {
        self.files.clear();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Reads a socket to its end, appending everything to `log`: (CPU seconds, bytes).
fn follow(mut sock: TcpStream, mut log: Segments) -> std::io::Result<(f64, u64)> {
    let cpu0 = crate::limits::thread_cpu_s();
    let mut buf = vec![0u8; WRITE_BYTES];
    let mut got = 0u64;
    loop {
        let n = sock.read(&mut buf)?;
        if n == 0 {
            break;
        }
        log.append(&buf[..n])?;
        got += n as u64;
    }
    Ok((crate::limits::thread_cpu_s() - cpu0, got))
}

/// Sends `len` bytes of `f` from `offset` to `sock` with sendfile.
fn send_range(sock: &TcpStream, f: &File, offset: u64, len: usize) -> std::io::Result<()> {
    let mut off = offset as libc::off_t;
    let mut left = len;
    while left > 0 {
        // SAFETY: both descriptors are open for the call; `off` is a valid pointer.
        let n = unsafe { libc::sendfile(sock.as_raw_fd(), f.as_raw_fd(), &mut off, left) };
        if n < 0 {
            return Err(std::io::Error::last_os_error());
        }
        if n == 0 {
            return Err(std::io::Error::other("sendfile sent nothing"));
        }
        left -= n as usize;
    }
    Ok(())
}

/// One pass with `followers` followers: the CPU seconds of the leader and the followers.
fn pass(dir: &Path, total_bytes: u64, followers: usize) -> std::io::Result<f64> {
    let root = dir.join(".samsa-bench-replication-floor");
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    let mut threads = Vec::new();
    let mut to_followers = Vec::new();
    for i in 0..followers {
        let l = TcpListener::bind("127.0.0.1:0")?;
        let a = l.local_addr()?;
        let log = Segments::new(root.join(format!("follower-{i}")))?;
        threads.push(std::thread::spawn(
            move || -> std::io::Result<(f64, u64)> {
                let (sock, _) = l.accept()?;
                follow(sock, log)
            },
        ));
        to_followers.push(TcpStream::connect(a)?);
    }
    let producer = std::thread::spawn(move || -> std::io::Result<()> {
        let mut s = TcpStream::connect(addr)?;
        let buf = vec![0x5au8; WRITE_BYTES];
        let mut sent = 0u64;
        while sent < total_bytes {
            let n = (total_bytes - sent).min(WRITE_BYTES as u64) as usize;
            s.write_all(&buf[..n])?;
            sent += n as u64;
        }
        Ok(())
    });
    let (mut sock, _) = listener.accept()?;
    let mut log = Segments::new(root.join("leader"))?;
    let cpu0 = crate::limits::thread_cpu_s();
    let mut buf = vec![0u8; WRITE_BYTES];
    let mut moved = 0u64;
    loop {
        let n = sock.read(&mut buf)?;
        if n == 0 {
            break;
        }
        let (f, offset) = log.append(&buf[..n])?;
        for s in &to_followers {
            send_range(s, f, offset, n)?;
        }
        moved += n as u64;
    }
    let mut cpu = crate::limits::thread_cpu_s() - cpu0;
    drop(to_followers);
    producer.join().expect("producer thread")?;
    for t in threads {
        let (c, got) = t.join().expect("follower thread")?;
        cpu += c;
        moved = moved.min(got);
    }
    drop(log);
    let _ = std::fs::remove_dir_all(&root);
    if moved != total_bytes {
        return Err(std::io::Error::other(format!(
            "moved {moved} of {total_bytes} bytes"
        )));
    }
    Ok(cpu)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn followers_receive_everything_the_leader_appends() {
        let dir = tempfile::tempdir().unwrap();
        let rf1 = pass(dir.path(), 8 << 20, 0).unwrap();
        let rf3 = pass(dir.path(), 8 << 20, 2).unwrap();
        assert!(rf1 > 0.0 && rf3 > 0.0);
        assert!(!dir.path().join(".samsa-bench-replication-floor").exists());
    }
}
