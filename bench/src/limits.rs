//! The machine's ceilings, measured with the simplest code that reaches them, so that a broker
//! figure can be read as a fraction of what the hardware gives on the same run.
//!
//! - Loopback TCP: one process writes 1 MiB buffers as fast as it can, another reads and
//!   discards; the reader's byte count over its own clock is the bandwidth. Then 100-byte
//!   round trips between the two: the floor under any request/response latency.
//! - The data directory's filesystem: sequential 1 MiB writes into a new file, measured three
//!   ways: into the page cache (what a broker with default flushing waits for; also into a
//!   file with its blocks reserved first, as the broker writes its active segment), with one
//!   fdatasync at the end (the device's streaming rate), and with fdatasync after every
//!   write (what a durable broker gets when each group commit carries 1 MiB). The latency of
//!   a small append plus fdatasync is the floor of a durable acks=all produce.

use std::fs::OpenOptions;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::time::{Duration, Instant};

/// Size of each write in the bandwidth probes.
pub const WRITE_BYTES: usize = 1 << 20;
/// Size of each write in the append-shaped probe: about a 1 MB produce request's batch.
pub const APPEND_BYTES: usize = 1_000_000;

/// Reads and discards everything one client sends; returns (bytes, seconds from the first
/// byte to end of stream).
pub fn loopback_read(listener: &TcpListener) -> std::io::Result<(u64, f64)> {
    let (mut stream, _) = listener.accept()?;
    let mut buf = vec![0u8; WRITE_BYTES];
    let mut total = 0u64;
    let mut start = None;
    loop {
        let n = stream.read(&mut buf)?;
        if n == 0 {
            break;
        }
        start.get_or_insert_with(Instant::now);
        total += n as u64;
    }
    let secs = start.map_or(0.0, |s| s.elapsed().as_secs_f64());
    Ok((total, secs))
}

/// Writes 1 MiB buffers to `addr` for `duration`, then closes.
pub fn loopback_write(addr: &str, duration: Duration) -> std::io::Result<u64> {
    let mut stream = TcpStream::connect(addr)?;
    let buf = vec![0x5au8; WRITE_BYTES];
    let start = Instant::now();
    let mut total = 0u64;
    while start.elapsed() < duration {
        stream.write_all(&buf)?;
        total += buf.len() as u64;
    }
    Ok(total)
}

/// Echoes fixed-size messages back on the next connection until the client closes it.
pub fn loopback_echo(listener: &TcpListener, message_bytes: usize) -> std::io::Result<()> {
    let (mut stream, _) = listener.accept()?;
    stream.set_nodelay(true)?;
    let mut buf = vec![0u8; message_bytes];
    loop {
        match stream.read_exact(&mut buf) {
            Ok(()) => stream.write_all(&buf)?,
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(()),
            Err(e) => return Err(e),
        }
    }
}

/// Round trips of `message_bytes` to an echo server: (p50, p99) in milliseconds. The floor
/// under any request/response latency between two processes on this machine.
pub fn loopback_rtt(addr: &str, message_bytes: usize, trips: usize) -> std::io::Result<(f64, f64)> {
    let mut stream = TcpStream::connect(addr)?;
    stream.set_nodelay(true)?;
    let mut buf = vec![0x11u8; message_bytes];
    let mut rtt: Vec<f64> = Vec::with_capacity(trips);
    for _ in 0..trips.max(1) {
        let start = Instant::now();
        stream.write_all(&buf)?;
        stream.read_exact(&mut buf)?;
        rtt.push(start.elapsed().as_secs_f64() * 1e3);
    }
    Ok((percentile(&mut rtt, 0.50), percentile(&mut rtt, 0.99)))
}

/// The `p` quantile of `values` (sorted in place).
fn percentile(values: &mut [f64], p: f64) -> f64 {
    values.sort_by(|a, b| a.total_cmp(b));
    values[((values.len() as f64 * p) as usize).min(values.len() - 1)]
}

/// The block size O_DIRECT writes are aligned to (address, length and file position).
const DIRECT_BLOCK: usize = 4096;

/// A block-aligned window of `len` bytes, each `fill`, in `backing` (grown to hold it): the
/// memory O_DIRECT writes need.
fn direct_window(backing: &mut Vec<u8>, len: usize, fill: u8) -> &mut [u8] {
    backing.clear();
    backing.resize(len + DIRECT_BLOCK, fill);
    let skip = backing.as_ptr().align_offset(DIRECT_BLOCK);
    &mut backing[skip..skip + len]
}

/// Reserves the first `len` bytes' blocks of `f` without changing its length (`fallocate`
/// with KEEP_SIZE), as the broker reserves ahead of its active segment.
fn reserve_blocks(f: &std::fs::File, len: u64) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    // SAFETY: fallocate on an open descriptor touches no memory of ours.
    if unsafe {
        libc::fallocate(
            f.as_raw_fd(),
            libc::FALLOC_FL_KEEP_SIZE,
            0,
            len as libc::off_t,
        )
    } != 0
    {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// CPU time of the calling thread (user + system), seconds.
pub fn thread_cpu_s() -> f64 {
    // SAFETY: getrusage fills the zeroed struct it is given.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut u) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(u.ru_utime) + tv(u.ru_stime)
}

/// Sequential-write figures for one directory.
#[derive(Debug, Clone, Copy)]
pub struct DiskFigures {
    /// MB/s of writes into the page cache (no sync).
    pub buffered_mb_per_s: f64,
    /// CPU seconds the writing thread spent per GiB of those writes (the page-cache copy).
    pub buffered_cpu_s_per_gib: f64,
    /// The same buffered writes into a file whose blocks were reserved first (`fallocate`
    /// with KEEP_SIZE, as the broker reserves ahead of its active segment): MB/s and CPU
    /// seconds per GiB.
    pub preallocated: (f64, f64),
    /// The same into reserved blocks, in writes of [`APPEND_BYTES`]: the shape of a broker's
    /// appends, whose offsets are rarely page aligned. ext4 sizes each new page-cache folio
    /// by the bytes left in the write and the alignment of its index, so unaligned writes
    /// build runs of small folios at each end. MB/s and CPU seconds per GiB.
    pub appends: (f64, f64),
    /// The same writes with O_DIRECT from an aligned buffer: MB/s and CPU seconds per GiB
    /// (`None` where the file system refuses O_DIRECT).
    pub direct: Option<(f64, f64)>,
    /// MB/s including one fdatasync at the end.
    pub flushed_mb_per_s: f64,
    /// MB/s with fdatasync after every 1 MiB write.
    pub fdatasync_each_mb_per_s: f64,
    /// 4 KiB append + fdatasync latency percentiles, milliseconds.
    pub fdatasync_p50_ms: f64,
    pub fdatasync_p99_ms: f64,
}

/// Measures `dir` with `total_bytes` per bandwidth probe and `syncs` small synced appends.
/// The probe files are removed afterwards.
pub fn disk(dir: &Path, total_bytes: u64, syncs: usize) -> std::io::Result<DiskFigures> {
    let mb = |bytes: u64, d: Duration| bytes as f64 / 1e6 / d.as_secs_f64().max(1e-9);
    let buf = vec![0xa5u8; WRITE_BYTES];
    let writes = total_bytes.div_ceil(WRITE_BYTES as u64).max(1);
    let path = dir.join(".samsa-bench-limits.tmp");

    let run_with = |direct: bool,
                    preallocate: bool,
                    write_bytes: usize,
                    sync_each: bool,
                    sync_end: bool|
     -> std::io::Result<(Duration, f64)> {
        use std::os::unix::fs::OpenOptionsExt;
        let mut f = OpenOptions::new()
            .create(true)
            .write(true)
            .truncate(true)
            .custom_flags(if direct { libc::O_DIRECT } else { 0 })
            .open(&path)?;
        let mut backing = Vec::new();
        let data: &[u8] = if direct {
            direct_window(&mut backing, WRITE_BYTES, 0xa5)
        } else {
            &buf[..write_bytes]
        };
        let cpu0 = thread_cpu_s();
        let start = Instant::now();
        if preallocate {
            reserve_blocks(&f, writes * write_bytes as u64)?;
        }
        let mut result = Ok(());
        for _ in 0..writes {
            result = f.write_all(data);
            if result.is_err() {
                break;
            }
            if sync_each {
                f.sync_data()?;
            }
        }
        if result.is_ok() && sync_end {
            f.sync_data()?;
        }
        let took = start.elapsed();
        let cpu = thread_cpu_s() - cpu0;
        drop(f);
        std::fs::remove_file(&path)?;
        result.map(|_| (took, cpu))
    };
    let run = |sync_each: bool, sync_end: bool| -> std::io::Result<Duration> {
        run_with(false, false, WRITE_BYTES, sync_each, sync_end).map(|(d, _)| d)
    };
    let bytes = writes * WRITE_BYTES as u64;
    // Unmeasured warm-up: the first pass after other work pays for reclaiming page cache
    // (seen here: 200 MB/s, then 2 GB/s for the same writes), which no broker pays steadily.
    run(false, false)?;
    // The page-cache probes run three times each, interleaved, and keep the best pass: on a VM
    // whose free memory the hypervisor takes back, a pass that lands on such memory costs
    // several times more (seen: 0.68 against 0.15 CPU-s/GiB), which is the machine's noise,
    // not its limit.
    let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
    let append_total = writes * APPEND_BYTES as u64;
    let mut best = [(Duration::MAX, f64::MAX); 3];
    for _ in 0..3 {
        for (i, (prealloc, size)) in [
            (false, WRITE_BYTES),
            (true, WRITE_BYTES),
            (true, APPEND_BYTES),
        ]
        .into_iter()
        .enumerate()
        {
            let (d, cpu) = run_with(false, prealloc, size, false, false)?;
            best[i] = (best[i].0.min(d), best[i].1.min(cpu));
        }
    }
    let [(buffered, buffered_cpu), (pre_d, pre_cpu), (app_d, app_cpu)] = best;
    let preallocated = (mb(bytes, pre_d), pre_cpu / gib(bytes));
    let appends = (mb(append_total, app_d), app_cpu / gib(append_total));
    let gib = gib(bytes);
    let direct = run_with(true, false, WRITE_BYTES, false, false)
        .ok()
        .map(|(d, cpu)| (mb(bytes, d), cpu / gib));
    // A refused O_DIRECT may leave the probe file behind.
    let _ = std::fs::remove_file(&path);
    let flushed = run(false, true)?;
    let each = run(true, false)?;

    let small = vec![0x3cu8; 4096];
    let mut f = OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(true)
        .open(&path)?;
    let mut lat: Vec<f64> = Vec::with_capacity(syncs);
    for _ in 0..syncs.max(1) {
        let start = Instant::now();
        f.write_all(&small)?;
        f.sync_data()?;
        lat.push(start.elapsed().as_secs_f64() * 1e3);
    }
    drop(f);
    std::fs::remove_file(&path)?;
    Ok(DiskFigures {
        buffered_mb_per_s: mb(bytes, buffered),
        buffered_cpu_s_per_gib: buffered_cpu / gib,
        preallocated,
        appends,
        direct,
        flushed_mb_per_s: mb(bytes, flushed),
        fdatasync_each_mb_per_s: mb(bytes, each),
        fdatasync_p50_ms: percentile(&mut lat, 0.50),
        fdatasync_p99_ms: percentile(&mut lat, 0.99),
    })
}

/// How a probe moves bytes from a socket into a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SocketToFile {
    /// `read` into a reused 1 MiB buffer and nothing else: the receive alone, the floor under
    /// every way of storing what arrives.
    Discard,
    /// `read` into a reused 1 MiB buffer, then `pwrite` it: what the broker does (two copies).
    Copy,
    /// `splice` from the socket into a pipe, then from the pipe into the file: the socket's
    /// pages move into the pipe by reference, leaving one copy, into the page cache.
    Splice,
    /// `read` straight into a shared mapping of the file, each 1 MiB window made writable
    /// first with `MADV_POPULATE_WRITE`: one copy, into page-cache pages, but every page is
    /// faulted in (and zeroed) before the copy overwrites it.
    Mmap,
    /// `read` into a 4 KiB-aligned buffer at the phase of the file position, then an
    /// O_DIRECT write of the blocks that cover it; the partial last block is carried to the
    /// buffer's start and written again with the next read. One copy, and no page cache.
    Direct,
}

impl SocketToFile {
    pub const ALL: [SocketToFile; 5] = [
        SocketToFile::Discard,
        SocketToFile::Copy,
        SocketToFile::Splice,
        SocketToFile::Mmap,
        SocketToFile::Direct,
    ];

    pub fn name(self) -> &'static str {
        match self {
            SocketToFile::Discard => "discard",
            SocketToFile::Copy => "copy",
            SocketToFile::Splice => "splice",
            SocketToFile::Mmap => "mmap",
            SocketToFile::Direct => "direct",
        }
    }
}

/// Byte `i` of the stream the probe's sender writes (a pattern the tests check the file for).
fn stream_byte(i: u64) -> u8 {
    (i % 251) as u8
}

/// Moves `total_bytes` that a sender thread streams over loopback into a new file in `dir`
/// whose blocks are reserved first, as the broker's active segment is; returns (MB/s, CPU
/// seconds per GiB of the receiving thread). The receiving thread's CPU includes what the
/// kernel runs on its behalf, such as the sender's transmits that its reads release, as a
/// broker's does. `pace_mb_per_s` holds the sender to that rate (as a producer slower than
/// the broker is; 0: as fast as it can, where the receiver is the bottleneck). Best of
/// three passes after an unmeasured one, as for the disk probes.
pub fn socket_to_file(
    dir: &Path,
    total_bytes: u64,
    how: SocketToFile,
    pace_mb_per_s: f64,
) -> std::io::Result<(f64, f64)> {
    let pass = || pass_socket_to_file(dir, total_bytes, how, pace_mb_per_s, false);
    pass()?;
    let mut best = (Duration::MAX, f64::MAX);
    for _ in 0..3 {
        let (d, cpu) = pass()?;
        best = (best.0.min(d), best.1.min(cpu));
    }
    Ok((
        total_bytes as f64 / 1e6 / best.0.as_secs_f64().max(1e-9),
        best.1 / (total_bytes as f64 / (1u64 << 30) as f64),
    ))
}

/// One pass of [`socket_to_file`]: (time, receiving thread's CPU seconds). With `verify`
/// the file is checked against the stream before it is removed.
fn pass_socket_to_file(
    dir: &Path,
    total_bytes: u64,
    how: SocketToFile,
    pace_mb_per_s: f64,
    verify: bool,
) -> std::io::Result<(Duration, f64)> {
    let path = dir.join(".samsa-bench-limits-socket.tmp");
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    let sender = std::thread::spawn(move || -> std::io::Result<()> {
        let mut s = TcpStream::connect(addr)?;
        // The pattern repeats every 251 bytes; a buffer of whole periods plus one chunk lets
        // each write start at any phase.
        let pattern: Vec<u8> = (0..(WRITE_BYTES + 251) as u64).map(stream_byte).collect();
        let start = Instant::now();
        let mut sent: u64 = 0;
        while sent < total_bytes {
            if pace_mb_per_s > 0.0 {
                let due = Duration::from_secs_f64(sent as f64 / (pace_mb_per_s * 1e6));
                if let Some(wait) = due.checked_sub(start.elapsed()) {
                    std::thread::sleep(wait);
                }
            }
            let n = (total_bytes - sent).min(WRITE_BYTES as u64) as usize;
            let phase = (sent % 251) as usize;
            s.write_all(&pattern[phase..phase + n])?;
            sent += n as u64;
        }
        Ok(())
    });
    let (mut sock, _) = listener.accept()?;
    let f = OpenOptions::new()
        .create(true)
        .read(true)
        .write(true)
        .truncate(true)
        .open(&path)?;
    reserve_blocks(&f, total_bytes)?;
    let cpu0 = thread_cpu_s();
    let start = Instant::now();
    let received = match how {
        SocketToFile::Discard => receive_discard(&mut sock),
        SocketToFile::Copy => receive_copy(&mut sock, &f),
        SocketToFile::Splice => receive_splice(&mut sock, &f),
        SocketToFile::Mmap => receive_mmap(&mut sock, &f, total_bytes),
        SocketToFile::Direct => receive_direct(&mut sock, &path),
    };
    let took = start.elapsed();
    let cpu = thread_cpu_s() - cpu0;
    // A receiver that failed leaves the sender blocked on a full socket: closing it ends the
    // sender too (with an error of its own, which the receiver's explains).
    drop(sock);
    let sent = sender.join().expect("sender thread");
    let checked = match received.and_then(|n| sent.map(|_| n)) {
        Ok(n) if n != total_bytes => Err(std::io::Error::other(format!(
            "{}: moved {n} of {total_bytes} bytes",
            how.name()
        ))),
        Ok(_) if verify && how != SocketToFile::Discard => verify_stream(&path, total_bytes),
        other => other.map(|_| ()),
    };
    drop(f);
    std::fs::remove_file(&path)?;
    checked.map(|_| (took, cpu))
}

/// Checks that the file at `path` holds exactly the first `len` bytes of the probe's stream.
fn verify_stream(path: &Path, len: u64) -> std::io::Result<()> {
    let got = std::fs::read(path)?;
    let bad = (got.len() as u64 != len)
        .then_some(got.len() as u64)
        .or_else(|| {
            got.iter()
                .enumerate()
                .find(|(i, b)| **b != stream_byte(*i as u64))
                .map(|(i, _)| i as u64)
        });
    match bad {
        None => Ok(()),
        Some(at) => Err(std::io::Error::other(format!(
            "file of {} bytes differs from the stream at byte {at}",
            got.len()
        ))),
    }
}

fn receive_discard(sock: &mut TcpStream) -> std::io::Result<u64> {
    let mut buf = vec![0u8; WRITE_BYTES];
    let mut at = 0;
    loop {
        match sock.read(&mut buf)? {
            0 => return Ok(at),
            n => at += n as u64,
        }
    }
}

fn receive_copy(sock: &mut TcpStream, f: &std::fs::File) -> std::io::Result<u64> {
    use std::os::unix::fs::FileExt;
    let mut buf = vec![0u8; WRITE_BYTES];
    let mut at = 0;
    loop {
        let n = sock.read(&mut buf)?;
        if n == 0 {
            return Ok(at);
        }
        f.write_all_at(&buf[..n], at)?;
        at += n as u64;
    }
}

fn receive_splice(sock: &mut TcpStream, f: &std::fs::File) -> std::io::Result<u64> {
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    let mut fds = [0; 2];
    // SAFETY: pipe2 writes two descriptors into the array it is given.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: the descriptors were just created and are owned here.
    let (rp, wp) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    // A 1 MiB pipe where the system allows it (pipe-max-size); the default 64 KiB otherwise.
    // SAFETY: fcntl on an owned descriptor.
    unsafe { libc::fcntl(wp.as_raw_fd(), libc::F_SETPIPE_SZ, WRITE_BYTES as i32) };
    let mut at: u64 = 0;
    loop {
        // SAFETY: splice between descriptors owned here; null offsets use the socket's and
        // pipe's own positions.
        let n = unsafe {
            libc::splice(
                sock.as_raw_fd(),
                std::ptr::null_mut(),
                wp.as_raw_fd(),
                std::ptr::null_mut(),
                WRITE_BYTES,
                libc::SPLICE_F_MOVE,
            )
        };
        if n < 0 {
            return Err(std::io::Error::last_os_error());
        }
        if n == 0 {
            return Ok(at);
        }
        let mut left = n as usize;
        while left > 0 {
            let mut off = at as libc::loff_t;
            // SAFETY: as above; `off` is the file position to write at.
            let m = unsafe {
                libc::splice(
                    rp.as_raw_fd(),
                    std::ptr::null_mut(),
                    f.as_raw_fd(),
                    &mut off,
                    left,
                    libc::SPLICE_F_MOVE,
                )
            };
            if m <= 0 {
                return Err(std::io::Error::last_os_error());
            }
            left -= m as usize;
            at += m as u64;
        }
    }
}

/// `madvise` advice (Linux 5.14): populate (prefault) page tables writable.
const MADV_POPULATE_WRITE: libc::c_int = 23;

fn receive_mmap(sock: &mut TcpStream, f: &std::fs::File, total: u64) -> std::io::Result<u64> {
    use std::os::fd::AsRawFd;
    // A mapping may only be written within the file's length.
    f.set_len(total)?;
    if total == 0 {
        return Ok(0);
    }
    // SAFETY: a shared mapping of the whole file, which is open for reading and writing and
    // stays so until after the munmap below.
    let base = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            total as usize,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            f.as_raw_fd(),
            0,
        )
    };
    if base == libc::MAP_FAILED {
        return Err(std::io::Error::last_os_error());
    }
    let base = base as *mut u8;
    let mut at: u64 = 0;
    let mut populated: u64 = 0;
    let result = loop {
        if at >= total {
            break Ok(at);
        }
        if populated <= at {
            let len = (WRITE_BYTES as u64).min(total - populated) as usize;
            // SAFETY: the window lies within the mapping.
            let r = unsafe {
                libc::madvise(
                    base.add(populated as usize) as *mut libc::c_void,
                    len,
                    MADV_POPULATE_WRITE,
                )
            };
            if r != 0 {
                break Err(std::io::Error::last_os_error());
            }
            populated += len as u64;
        }
        let want = (populated - at) as usize;
        // SAFETY: [at, at + want) lies within the mapping, and nothing else refers to it.
        let window = unsafe { std::slice::from_raw_parts_mut(base.add(at as usize), want) };
        match sock.read(window) {
            Ok(0) => break Ok(at),
            Ok(n) => at += n as u64,
            Err(e) => break Err(e),
        }
    };
    // SAFETY: unmapping exactly what was mapped above; no slice into it outlives this.
    unsafe { libc::munmap(base as *mut libc::c_void, total as usize) };
    result
}

fn receive_direct(sock: &mut TcpStream, path: &Path) -> std::io::Result<u64> {
    use std::os::unix::fs::{FileExt, OpenOptionsExt};
    let f = OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_DIRECT)
        .open(path)?;
    let mut backing = Vec::new();
    let buf = direct_window(&mut backing, WRITE_BYTES + 2 * DIRECT_BLOCK, 0);
    let mut at: u64 = 0;
    loop {
        // The bytes of the partial block at `at` are at the buffer's start already.
        let phase = (at % DIRECT_BLOCK as u64) as usize;
        let n = sock.read(&mut buf[phase..phase + WRITE_BYTES])?;
        if n == 0 {
            break;
        }
        let end = phase + n;
        let padded = end.div_ceil(DIRECT_BLOCK) * DIRECT_BLOCK;
        buf[end..padded].fill(0);
        f.write_all_at(&buf[..padded], at - phase as u64)?;
        at += n as u64;
        let tail = end % DIRECT_BLOCK;
        buf.copy_within(end - tail..end, 0);
    }
    // The last write was padded to a whole block.
    f.set_len(at)?;
    Ok(at)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_reader_counts_what_the_writer_sent() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let reader = std::thread::spawn(move || loopback_read(&listener).unwrap());
        let sent = loopback_write(&addr, Duration::from_millis(20)).unwrap();
        let (received, secs) = reader.join().unwrap();
        assert_eq!(sent, received);
        assert!(sent > 0 && secs > 0.0);
    }

    #[test]
    fn round_trips_come_back_from_the_echo_server() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let echo = std::thread::spawn(move || loopback_echo(&listener, 100).unwrap());
        let (p50, p99) = loopback_rtt(&addr, 100, 50).unwrap();
        echo.join().unwrap();
        assert!(p50 > 0.0 && p50 <= p99);
    }

    #[test]
    fn socket_to_file_moves_every_byte_every_way_and_leaves_no_file() {
        let dir = tempfile::tempdir().unwrap();
        // Not a multiple of the page, the block or the pattern's period; paced and not.
        let len = 3 * WRITE_BYTES as u64 + 4097;
        for how in SocketToFile::ALL {
            for pace in [0.0, 200.0] {
                match pass_socket_to_file(dir.path(), len, how, pace, true) {
                    Err(e)
                        if how == SocketToFile::Direct
                            && e.kind() == std::io::ErrorKind::InvalidInput =>
                    {
                        eprintln!("this file system refuses O_DIRECT: {e}");
                    }
                    r => drop(r.unwrap_or_else(|e| panic!("{how:?} paced at {pace}: {e}"))),
                }
            }
        }
        let (mb_per_s, cpu) = socket_to_file(dir.path(), len, SocketToFile::Copy, 0.0).unwrap();
        assert!(mb_per_s > 0.0 && cpu >= 0.0);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn a_file_that_differs_from_the_stream_is_caught() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let mut bytes: Vec<u8> = (0..5000).map(stream_byte).collect();
        std::fs::write(&path, &bytes).unwrap();
        verify_stream(&path, 5000).unwrap();
        assert!(verify_stream(&path, 5001).is_err());
        bytes[4321] ^= 1;
        std::fs::write(&path, &bytes).unwrap();
        let err = verify_stream(&path, 5000).unwrap_err();
        assert!(err.to_string().contains("byte 4321"), "{err}");
    }

    #[test]
    fn disk_probe_reports_positive_figures_and_leaves_no_file() {
        let dir = tempfile::tempdir().unwrap();
        let f = disk(dir.path(), 2 * WRITE_BYTES as u64, 5).unwrap();
        assert!(f.buffered_mb_per_s > 0.0 && f.flushed_mb_per_s > 0.0);
        assert!(f.preallocated.0 > 0.0 && f.preallocated.1 >= 0.0);
        assert!(f.appends.0 > 0.0 && f.appends.1 >= 0.0);
        assert!(f.fdatasync_each_mb_per_s > 0.0 && f.fdatasync_p50_ms > 0.0);
        assert!(f.fdatasync_p50_ms <= f.fdatasync_p99_ms);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
