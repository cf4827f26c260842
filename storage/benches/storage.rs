//! Storage benchmarks (criterion). Run: `cargo bench -p samsa-storage`.
//!
//! - `append_16k/log_append` vs `append_16k/plain_pwrite`: appending 16 KiB batches through
//!   `Log::append` (validation, offset assignment, indexing, tail cache) against writing the
//!   same bytes with sequential `pwrite`s to a file on the same filesystem. The ratio of the
//!   two throughputs is the storage overhead. Each sample starts from an empty log/file so the
//!   disk footprint stays bounded.
//! - `read_1m/{tail_cache,page_cache,cold}`: 1 MiB reads from the tail cache, from a segment in
//!   the page cache, and from a segment evicted with `posix_fadvise(DONTNEED)` before each read.
//! - `crc32c/{log,crc_fast,instruction_loop}/N`: the log's CRC-32C (`samsa_storage::batch::crc32c`,
//!   which picks its implementation per CPU) against `crc-fast` alone and the `crc32c` crate's
//!   `crc32` instruction loop, from a 61-byte batch header to a 1 MiB batch.
//! - `durable_16k/appenders_{1,4,16}`: durable-mode appends (append, then wait for the shared
//!   group commit) from 1, 4 and 16 threads into one log behind a mutex, as the broker drives it.

use std::fs::{File, OpenOptions};
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use parking_lot::Mutex;
use samsa_storage::test_support::BatchBuilder;
use samsa_storage::{GroupCommit, Log, LogConfig, LogDir, TopicPartition};

const BATCH_BYTES: usize = 16 * 1024;
const CHUNK: u64 = 512;

fn batch_16k() -> Bytes {
    // 16 records of ~1000 bytes: a 16 KiB batch as a producer with linger would send it.
    let b = BatchBuilder::new().records(16, 1010).build();
    assert!(
        (BATCH_BYTES - 512..=BATCH_BYTES + 512).contains(&b.len()),
        "{}",
        b.len()
    );
    b
}

fn bench_dir() -> tempfile::TempDir {
    // On the same filesystem as the target directory (not a tmpfs /tmp).
    let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/bench-tmp");
    std::fs::create_dir_all(&base).unwrap();
    tempfile::tempdir_in(base).unwrap()
}

fn open_log(dir: &Path, config: LogConfig) -> (LogDir, Log) {
    let (d, _) = LogDir::open(dir, |_| LogConfig::default()).unwrap();
    let log = d
        .create_log(&TopicPartition::new("bench", 0), config)
        .unwrap();
    (d, log)
}

/// Times `f` over `iters` unique copies of `template`, made in chunks outside the timing (the
/// log rewrites headers in place, and only a unique buffer avoids a copy).
fn timed_over_unique_buffers(template: &Bytes, iters: u64, mut f: impl FnMut(Bytes)) -> Duration {
    let mut elapsed = Duration::ZERO;
    let mut left = iters;
    while left > 0 {
        let n = left.min(CHUNK);
        let inputs: Vec<Bytes> = (0..n).map(|_| Bytes::from(template.to_vec())).collect();
        let start = Instant::now();
        for input in inputs {
            f(input);
        }
        elapsed += start.elapsed();
        left -= n;
    }
    elapsed
}

/// The append/plain ratio measured with the two writers interleaved chunk by chunk, so that
/// noise from other work on a shared machine hits both alike. Printed, not asserted.
fn interleaved_append_ratio(template: &Bytes) {
    let dir = bench_dir();
    let (_d, mut log) = open_log(dir.path(), LogConfig::default());
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(dir.path().join("plain.log"))
        .unwrap();
    let mut pos = 0u64;
    let (mut t_log, mut t_plain) = (Duration::ZERO, Duration::ZERO);
    // 64 rounds of 512 batches each way: 512 MiB per writer.
    for _ in 0..64 {
        t_log += timed_over_unique_buffers(template, CHUNK, |input| {
            log.append(input, 0, 1).unwrap();
        });
        t_plain += timed_over_unique_buffers(template, CHUNK, |input| {
            file.write_all_at(&input, pos).unwrap();
            pos += input.len() as u64;
        });
    }
    println!(
        "append_16k interleaved: log_append {:.0} MiB/s, plain_pwrite {:.0} MiB/s, ratio {:.3}",
        (64 * CHUNK * template.len() as u64) as f64 / t_log.as_secs_f64() / (1 << 20) as f64,
        (64 * CHUNK * template.len() as u64) as f64 / t_plain.as_secs_f64() / (1 << 20) as f64,
        t_plain.as_secs_f64() / t_log.as_secs_f64()
    );
}

fn append(c: &mut Criterion) {
    let template = batch_16k();
    interleaved_append_ratio(&template);
    let mut g = c.benchmark_group("append_16k");
    g.throughput(Throughput::Bytes(template.len() as u64));
    g.sample_size(10)
        .measurement_time(Duration::from_secs(4))
        .warm_up_time(Duration::from_secs(1));
    // The part of an append that a plain write does not do: validating the batch (CRC-32C).
    g.bench_function("validate_only", |b| {
        b.iter(|| {
            samsa_storage::batch::RecordBatch::parse(&template)
                .unwrap()
                .validate(usize::MAX)
                .unwrap()
        })
    });
    g.bench_function("log_append", |b| {
        b.iter_custom(|iters| {
            let dir = bench_dir();
            let (_d, mut log) = open_log(dir.path(), LogConfig::default());
            timed_over_unique_buffers(&template, iters, |input| {
                log.append(input, 0, 1).unwrap();
            })
        })
    });
    g.bench_function("log_append_shared_buffer", |b| {
        // The buffer is shared (as a slice of a request frame would be): append copies it once.
        b.iter_custom(|iters| {
            let dir = bench_dir();
            let (_d, mut log) = open_log(dir.path(), LogConfig::default());
            let start = Instant::now();
            for _ in 0..iters {
                log.append(template.clone(), 0, 1).unwrap();
            }
            start.elapsed()
        })
    });
    g.bench_function("plain_pwrite", |b| {
        b.iter_custom(|iters| {
            let dir = bench_dir();
            let file = OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(true)
                .open(dir.path().join("plain.log"))
                .unwrap();
            let mut pos = 0u64;
            timed_over_unique_buffers(&template, iters, |input| {
                file.write_all_at(&input, pos).unwrap();
                pos += input.len() as u64;
            })
        })
    });
    g.finish();
}

fn evict(file: &File) {
    // SAFETY: posix_fadvise on a valid descriptor has no memory-safety preconditions.
    unsafe {
        libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED);
    }
}

fn read(c: &mut Criterion) {
    let template = batch_16k();
    let total_batches = 4096; // 64 MiB
    let read_bytes = 1 << 20;
    let mut g = c.benchmark_group("read_1m");
    g.throughput(Throughput::Bytes(read_bytes as u64));
    g.sample_size(20)
        .measurement_time(Duration::from_secs(3))
        .warm_up_time(Duration::from_secs(1));
    for (name, cache_bytes, cold) in [
        ("tail_cache", 128u64 << 20, false),
        ("page_cache", 0, false),
        ("cold", 0, true),
    ] {
        let dir = bench_dir();
        let (_d, mut log) = open_log(
            dir.path(),
            LogConfig {
                tail_cache_bytes: cache_bytes,
                ..LogConfig::default()
            },
        );
        for _ in 0..total_batches {
            log.append(template.clone(), 0, 1).unwrap();
        }
        log.flush_now().unwrap();
        let segment = File::open(dir.path().join("bench-0/00000000000000000000.log")).unwrap();
        let end = log.log_end_offset();
        let mut next = 0i64;
        g.bench_function(name, |b| {
            b.iter(|| {
                if cold {
                    evict(&segment);
                }
                let bytes = log
                    .read(next, read_bytes, i64::MAX, true)
                    .unwrap()
                    .load()
                    .unwrap();
                assert!(bytes.len() >= read_bytes - BATCH_BYTES - 512);
                next = (next + 16 * 64) % (end - 16 * 64);
                bytes
            })
        });
    }
    g.finish();
}

fn durable(c: &mut Criterion) {
    let template = batch_16k();
    let mut g = c.benchmark_group("durable_16k");
    g.throughput(Throughput::Elements(1));
    g.sample_size(10)
        .measurement_time(Duration::from_secs(5))
        .warm_up_time(Duration::from_secs(1));
    for appenders in [1usize, 4, 16] {
        let dir = bench_dir();
        let (_d, log) = open_log(
            dir.path(),
            LogConfig {
                durable: true,
                segment_bytes: 256 << 20,
                ..LogConfig::default()
            },
        );
        let log = Arc::new(Mutex::new(log));
        let gc = GroupCommit::new();
        g.bench_function(format!("appenders_{appenders}"), |b| {
            b.iter_custom(|iters| {
                let per_thread = iters.div_ceil(appenders as u64);
                let start = Instant::now();
                std::thread::scope(|s| {
                    for _ in 0..appenders {
                        let log = log.clone();
                        let gc = gc.clone();
                        let template = template.clone();
                        s.spawn(move || {
                            for _ in 0..per_thread {
                                let wait = {
                                    let mut log = log.lock();
                                    let info = log.append(template.clone(), 0, 1).unwrap();
                                    gc.submit(log.sync_request(info.last_offset + 1))
                                };
                                wait.blocking_recv().unwrap().unwrap();
                            }
                        });
                    }
                });
                // Report per append (the group shares the wall time).
                start
                    .elapsed()
                    .mul_f64(iters as f64 / (per_thread * appenders as u64) as f64)
            })
        });
        // Keep the disk footprint bounded between runs.
        let leo = log.lock().log_end_offset();
        log.lock().truncate_fully_and_start_at(leo).unwrap();
    }
    g.finish();
}

fn crc(c: &mut Criterion) {
    let mut g = c.benchmark_group("crc32c");
    g.sample_size(20)
        .measurement_time(Duration::from_secs(2))
        .warm_up_time(Duration::from_millis(500));
    for size in [61usize, 1000, 16 * 1024, 1 << 20] {
        let bytes: Vec<u8> = (0..size).map(|i| (i * 7 + 3) as u8).collect();
        assert_eq!(
            samsa_storage::batch::crc32c(&bytes),
            crc32c::crc32c(&bytes),
            "both compute CRC-32C"
        );
        g.throughput(Throughput::Bytes(size as u64));
        g.bench_function(format!("log/{size}"), |b| {
            b.iter(|| samsa_storage::batch::crc32c(std::hint::black_box(&bytes)))
        });
        g.bench_function(format!("crc_fast/{size}"), |b| {
            b.iter(|| {
                crc_fast::checksum(
                    crc_fast::CrcAlgorithm::Crc32Iscsi,
                    std::hint::black_box(&bytes),
                )
            })
        });
        g.bench_function(format!("instruction_loop/{size}"), |b| {
            b.iter(|| crc32c::crc32c(std::hint::black_box(&bytes)))
        });
    }
}

criterion_group!(benches, append, read, crc, durable);
criterion_main!(benches);
