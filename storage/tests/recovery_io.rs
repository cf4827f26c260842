//! Recovery reads only the unflushed tail: measured with the kernel's count of bytes this
//! process read (`rchar` in /proc/self/io), so this file holds a single test.
//!
//! The partition is 64 MiB in one segment by default (as with Kafka's default
//! segment.bytes=1 GiB, everything is in the active segment); `SAMSA_RECOVERY_MIB=1024` runs
//! it at 1 GiB.

use std::fs;

use bytes::Bytes;
use samsa_storage::test_support::{open_log, BatchBuilder};
use samsa_storage::{LogConfig, LogDir, TopicPartition};

fn bytes_read_by_this_process() -> u64 {
    let io = fs::read_to_string("/proc/self/io").unwrap();
    io.lines()
        .find_map(|l| l.strip_prefix("rchar: "))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

#[test]
fn recovery_of_a_large_partition_reads_only_the_unflushed_tail() {
    let mib: usize = std::env::var("SAMSA_RECOVERY_MIB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(64);
    let dir = tempfile::tempdir().unwrap();
    let tp = TopicPartition::new("big", 0);
    let template = BatchBuilder::new().records(16, 1010).build();
    let batches = mib * 1024 * 1024 / template.len();
    let tail_batches = 8;
    {
        let (d, mut log) = open_log(
            dir.path(),
            &tp,
            LogConfig {
                tail_cache_bytes: 0,
                ..LogConfig::default()
            },
        );
        for _ in 0..batches {
            log.append(Bytes::from(template.to_vec()), 0, 1).unwrap();
        }
        log.flush_now().unwrap();
        d.write_checkpoints(&[(tp.clone(), log.checkpoint())])
            .unwrap();
        for _ in 0..tail_batches {
            log.append(Bytes::from(template.to_vec()), 0, 1).unwrap();
        }
        // Crash: no close, no clean-shutdown marker.
    }
    let segment_bytes = fs::metadata(dir.path().join("big-0/00000000000000000000.log"))
        .unwrap()
        .len();
    let index_bytes = fs::metadata(dir.path().join("big-0/00000000000000000000.index"))
        .unwrap()
        .len();
    eprintln!("index of {index_bytes} bytes");
    let before = bytes_read_by_this_process();
    let (_d, logs) = LogDir::open(dir.path(), |_| LogConfig::default()).unwrap();
    let read = bytes_read_by_this_process() - before;
    assert_eq!(
        logs[0].1.log_end_offset(),
        ((batches + tail_batches) * 16) as i64
    );
    // The unflushed tail, the index files (8 + 12 bytes per 16 KiB batch here) and the
    // checkpoints; nothing like the segment itself.
    let tail = (tail_batches + 1) * template.len();
    let indexes = batches * 20;
    let budget = (tail + indexes + (1 << 20)) as u64;
    eprintln!("recovery read {read} bytes of a {segment_bytes}-byte segment");
    assert!(
        read <= budget,
        "recovery read {read} bytes of a {segment_bytes}-byte segment (budget {budget})"
    );
    assert!(segment_bytes > 8 * budget);
}
