//! `samsa produce TOPIC`: records from stdin, one per line, in v2 batches (optionally
//! compressed) sent to each partition's leader.
//!
//! Keyed records go to `murmur2(key) % partitions`, the partition Kafka's Java producer picks,
//! so a key lands where the rest of the system expects it; unkeyed records fill one partition's
//! batch of [`STICKY_BATCH_BYTES`] at a time, then move to the next (KIP-480's sticky
//! partitioner). Lines typed on a terminal
//! are sent one by one; piped input is batched. Progress shows on a terminal only.
//!
//! Limits: a line above [`LINE_BYTES_MAX`], a batch above [`BATCH_BYTES_MAX`] (it is sent
//! before it grows further) and a request above [`REQUEST_BYTES_MAX`] of pending records.

use std::collections::BTreeMap;
use std::io::{BufRead, IsTerminal};

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{ProduceRequest, TopicName};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records::{
    Compression, Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
};
use kafka_protocol::ResponseError;
use serde_json::json;

use super::client::{check, Client, Node};
use super::global::{key_value, Global};
use super::output::{emit, Progress};

/// Longest input line (one record value, key included).
pub const LINE_BYTES_MAX: usize = 16 * 1024 * 1024;
/// A partition's batch is sent once its records reach this size (below Kafka's default
/// max.message.bytes of 1 MiB, so a batch of small records is never refused for its size).
pub const BATCH_BYTES_MAX: usize = 512 * 1024;
/// Unkeyed records fill one partition's batch up to this size before moving to the next, as
/// Kafka's sticky partitioner does with its default `batch.size` (KIP-480).
pub const STICKY_BATCH_BYTES: usize = 16 * 1024;
/// Upper bound of a record's encoding besides key, value and headers (varints and attributes).
const RECORD_OVERHEAD_BYTES: usize = 32;
/// Pending records across partitions before a produce request goes out.
pub const REQUEST_BYTES_MAX: usize = 4 * 1024 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Codec {
    None,
    Gzip,
    Snappy,
    Lz4,
    Zstd,
}

#[derive(Debug, clap::Args)]
pub struct ProduceArgs {
    pub topic: String,
    /// The key of every record.
    #[arg(short = 'k', long, conflicts_with = "key_separator")]
    pub key: Option<String>,
    /// Split each line at the first SEP into key and value (`user1:hello` with `:`).
    #[arg(long)]
    pub key_separator: Option<String>,
    /// A header of every record, name=value (repeatable).
    #[arg(short = 'H', long = "header", value_parser = key_value)]
    pub headers: Vec<(String, String)>,
    /// Batch compression.
    #[arg(long, value_enum, default_value_t = Codec::None)]
    pub compression: Codec,
    /// 0 (no response), 1 (leader) or all (every in-sync replica).
    #[arg(long, default_value = "all", value_parser = parse_acks)]
    pub acks: i16,
    /// Write every record to this partition instead of choosing one.
    #[arg(short = 'p', long)]
    pub partition: Option<i32>,
}

fn parse_acks(s: &str) -> Result<i16, String> {
    match s {
        "all" | "-1" => Ok(-1),
        "0" => Ok(0),
        "1" => Ok(1),
        _ => Err(format!("acks must be 0, 1 or all, not '{s}'")),
    }
}

/// Kafka's murmur2 (`Utils.murmur2`), which its default partitioner hashes keys with.
pub fn murmur2(data: &[u8]) -> i32 {
    const SEED: u32 = 0x9747_b28c;
    const M: u32 = 0x5bd1_e995;
    let mut h: u32 = SEED ^ data.len() as u32;
    let mut chunks = data.chunks_exact(4);
    for c in &mut chunks {
        let mut k = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        k = k.wrapping_mul(M);
        k ^= k >> 24;
        k = k.wrapping_mul(M);
        h = h.wrapping_mul(M);
        h ^= k;
    }
    let rest = chunks.remainder();
    if rest.len() >= 3 {
        h ^= (rest[2] as u32) << 16;
    }
    if rest.len() >= 2 {
        h ^= (rest[1] as u32) << 8;
    }
    if !rest.is_empty() {
        h ^= rest[0] as u32;
        h = h.wrapping_mul(M);
    }
    h ^= h >> 13;
    h = h.wrapping_mul(M);
    h ^= h >> 15;
    h as i32
}

/// Records waiting to be sent, per partition.
#[derive(Default)]
struct Pending {
    by_partition: BTreeMap<i32, Vec<Record>>,
    bytes_by_partition: BTreeMap<i32, usize>,
    bytes: usize,
}

/// What was produced, per partition: records and the offset of the last one.
#[derive(Default)]
struct Produced {
    records: u64,
    bytes: u64,
    partitions: BTreeMap<i32, (u64, i64)>,
}

/// How long a topic that the broker is still creating may take to get its partitions.
const TOPIC_CREATION_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// The partitions of `topic`, created by this Metadata request when the broker auto-creates
/// topics, as a producer's first Metadata does. A broker answers LEADER_NOT_AVAILABLE (or no
/// partitions) while a new topic's leaders are being elected: wait for them, briefly.
fn topic_partitions(client: &mut Client, topic: &str) -> anyhow::Result<Vec<i32>> {
    let deadline = std::time::Instant::now() + TOPIC_CREATION_WAIT;
    loop {
        let meta = client.metadata_with(Some(&[topic.to_string()]), true)?;
        let t = meta
            .topics
            .first()
            .ok_or_else(|| anyhow::anyhow!("metadata answered nothing for '{topic}'"))?;
        let electing = t.error_code == ResponseError::LeaderNotAvailable.code()
            || (t.error_code == 0 && t.partitions.is_empty());
        if !electing || std::time::Instant::now() >= deadline {
            check(t.error_code, &format!("topic '{topic}'"), None)?;
            let mut partitions: Vec<i32> = t.partitions.iter().map(|p| p.partition_index).collect();
            partitions.sort_unstable();
            if partitions.is_empty() {
                anyhow::bail!("topic '{topic}' has no partitions yet; retry in a moment");
            }
            return Ok(partitions);
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

pub fn run(global: &Global, args: &ProduceArgs) -> anyhow::Result<()> {
    let mut client = global.connect()?;
    let partitions = topic_partitions(&mut client, &args.topic)?;
    if let Some(p) = args.partition {
        if !partitions.contains(&p) {
            anyhow::bail!(
                "topic '{}' has no partition {p} (it has {})",
                args.topic,
                partitions.len()
            );
        }
    }
    let headers: Vec<(StrBytes, Option<Bytes>)> = args
        .headers
        .iter()
        .map(|(k, v)| {
            (
                StrBytes::from_string(k.clone()),
                Some(Bytes::from(v.clone().into_bytes())),
            )
        })
        .collect();
    let headers_bytes: usize = headers
        .iter()
        .map(|(k, v)| k.len() + v.as_ref().map_or(0, |v| v.len()) + 10)
        .sum();
    let interactive = std::io::stdin().is_terminal();
    let mut progress = Progress::new();
    let mut pending = Pending::default();
    let mut produced = Produced::default();
    let mut sticky = 0usize;
    let mut sticky_bytes = 0usize;
    let stdin = std::io::stdin();
    let mut input = stdin.lock();
    let mut line = Vec::new();
    loop {
        line.clear();
        let n = std::io::Read::take(&mut input, LINE_BYTES_MAX as u64 + 1)
            .read_until(b'\n', &mut line)
            .map_err(|e| anyhow::anyhow!("cannot read stdin: {e}"))?;
        if n == 0 {
            break;
        }
        if line.len() > LINE_BYTES_MAX && !line.ends_with(b"\n") {
            anyhow::bail!(
                "an input line exceeds {LINE_BYTES_MAX} bytes; nothing after it was sent"
            );
        }
        if line.ends_with(b"\n") {
            line.pop();
            if line.ends_with(b"\r") {
                line.pop();
            }
        }
        let (key, value) = split_key(args, &line);
        let keyed = key.is_some();
        let partition = match (args.partition, &key) {
            (Some(p), _) => p,
            (None, Some(k)) => partitions[((murmur2(k) & 0x7fff_ffff) as usize) % partitions.len()],
            (None, None) => partitions[sticky % partitions.len()],
        };
        // What the record adds to its batch: key, value, headers and the record's own fields
        // (length, attributes, deltas, lengths: at most RECORD_OVERHEAD_BYTES).
        let size = key.as_ref().map_or(0, |k| k.len())
            + value.len()
            + headers_bytes
            + RECORD_OVERHEAD_BYTES;
        let batch = pending.by_partition.entry(partition).or_default();
        batch.push(record(
            crate::util::now_ms(),
            key.map(Bytes::from),
            Some(Bytes::from(value)),
            headers.iter().cloned(),
        ));
        pending.bytes += size;
        let batch_bytes = {
            let b = pending.bytes_by_partition.entry(partition).or_default();
            *b += size;
            *b
        };
        if !keyed && args.partition.is_none() {
            sticky_bytes += size;
            if sticky_bytes >= STICKY_BATCH_BYTES {
                sticky += 1;
                sticky_bytes = 0;
            }
        }
        if interactive || pending.bytes >= REQUEST_BYTES_MAX || batch_bytes >= BATCH_BYTES_MAX {
            send(&mut client, args, &mut pending, &mut produced, global)?;
            progress.update(|| {
                format!(
                    "produced {} records ({} bytes) to '{}'",
                    produced.records, produced.bytes, args.topic
                )
            });
        }
    }
    send(&mut client, args, &mut pending, &mut produced, global)?;
    progress.finish();
    let value = json!({
        "topic": args.topic,
        "records": produced.records,
        "bytes": produced.bytes,
        "partitions": produced.partitions.iter().map(|(p, (n, last))| json!({
            "partition": p,
            "records": n,
            "last_offset": last,
        })).collect::<Vec<_>>(),
    });
    emit(global.format, &value, || {
        format!(
            "produced {} records ({} bytes) to '{}'\n",
            produced.records, produced.bytes, args.topic
        )
    });
    Ok(())
}

fn split_key(args: &ProduceArgs, line: &[u8]) -> (Option<Vec<u8>>, Vec<u8>) {
    if let Some(sep) = args.key_separator.as_deref().filter(|s| !s.is_empty()) {
        let sep = sep.as_bytes();
        if let Some(i) = line.windows(sep.len()).position(|w| w == sep) {
            return (Some(line[..i].to_vec()), line[i + sep.len()..].to_vec());
        }
        return (None, line.to_vec());
    }
    (
        args.key.as_ref().map(|k| k.as_bytes().to_vec()),
        line.to_vec(),
    )
}

fn codec(c: Codec) -> Compression {
    match c {
        Codec::None => Compression::None,
        Codec::Gzip => Compression::Gzip,
        Codec::Snappy => Compression::Snappy,
        Codec::Lz4 => Compression::Lz4,
        Codec::Zstd => Compression::Zstd,
    }
}

/// A record as a producer without a producer id writes it (no transaction, no sequence);
/// [`encode_batch`] numbers the offsets.
pub fn record(
    timestamp: i64,
    key: Option<Bytes>,
    value: Option<Bytes>,
    headers: impl IntoIterator<Item = (StrBytes, Option<Bytes>)>,
) -> Record {
    Record {
        transactional: false,
        control: false,
        delete_horizon: false,
        partition_leader_epoch: -1,
        producer_id: -1,
        producer_epoch: -1,
        timestamp_type: TimestampType::Creation,
        offset: 0,
        sequence: -1,
        timestamp,
        key,
        value,
        headers: headers.into_iter().collect(),
    }
}

/// Encodes one partition's records as a single v2 batch.
pub fn encode_batch(records: &mut [Record], compression: Compression) -> anyhow::Result<Bytes> {
    // The encoder starts a new batch whenever offset - sequence changes between records; a
    // producer without an id writes base sequence -1, so sequences run offset - 1.
    for (i, r) in records.iter_mut().enumerate() {
        r.offset = i as i64;
        r.sequence = i as i32 - 1;
    }
    let mut buf = BytesMut::new();
    RecordBatchEncoder::encode(
        &mut buf,
        records.iter(),
        &RecordEncodeOptions {
            version: 2,
            compression,
        },
    )
    .map_err(|e| anyhow::anyhow!("cannot encode a record batch: {e}"))?;
    Ok(buf.freeze())
}

/// One partition's records, encoded.
struct EncodedBatch {
    partition: i32,
    records: usize,
    /// Key and value bytes (what the summary reports).
    bytes: u64,
    batch: Bytes,
}

/// Sends everything pending, one request per partition leader, and checks every answer.
fn send(
    client: &mut Client,
    args: &ProduceArgs,
    pending: &mut Pending,
    produced: &mut Produced,
    global: &Global,
) -> anyhow::Result<()> {
    if pending.by_partition.is_empty() {
        return Ok(());
    }
    let mut by_leader: BTreeMap<String, (Node, Vec<EncodedBatch>)> = BTreeMap::new();
    for (partition, mut records) in std::mem::take(&mut pending.by_partition) {
        let bytes: u64 = records
            .iter()
            .map(|r| {
                (r.key.as_ref().map_or(0, |k| k.len()) + r.value.as_ref().map_or(0, |v| v.len()))
                    as u64
            })
            .sum();
        let batch = encode_batch(&mut records, codec(args.compression))?;
        let node = client.leader(&args.topic, partition);
        by_leader
            .entry(format!("{node:?}"))
            .or_insert_with(|| (node, Vec::new()))
            .1
            .push(EncodedBatch {
                partition,
                records: records.len(),
                bytes,
                batch,
            });
    }
    pending.bytes = 0;
    pending.bytes_by_partition.clear();
    let timeout_ms = global.timeout_ms.min(i32::MAX as u64) as i32;
    for (_, (node, batches)) in by_leader {
        let build = |_v: i16| {
            let mut t = TopicProduceData::default();
            t.name = TopicName(StrBytes::from_string(args.topic.clone()));
            t.partition_data = batches
                .iter()
                .map(|b| {
                    let mut pd = PartitionProduceData::default();
                    pd.index = b.partition;
                    pd.records = Some(b.batch.clone());
                    pd
                })
                .collect();
            let mut req = ProduceRequest::default();
            req.acks = args.acks;
            req.timeout_ms = timeout_ms;
            req.topic_data = vec![t];
            req
        };
        let mut last_offsets = BTreeMap::new();
        if args.acks == 0 {
            client.send_only(node, build)?;
        } else {
            let (_, resp) = client.call(node, build)?;
            for t in &resp.responses {
                for p in &t.partition_responses {
                    check(
                        p.error_code,
                        &format!("produce to {}-{}", args.topic, p.index),
                        p.error_message.as_ref(),
                    )?;
                    last_offsets.insert(p.index, p.base_offset);
                }
            }
        }
        for b in &batches {
            produced.records += b.records as u64;
            produced.bytes += b.bytes;
            let entry = produced.partitions.entry(b.partition).or_insert((0, -1));
            entry.0 += b.records as u64;
            entry.1 = match last_offsets.get(&b.partition) {
                Some(base) if *base >= 0 => base + b.records as i64 - 1,
                _ => -1,
            };
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::murmur2;

    #[test]
    fn murmur2_matches_kafkas_partitioner_hash() {
        // Values from Kafka's UtilsTest.testMurmur2.
        assert_eq!(murmur2(b"21"), -973932308);
        assert_eq!(murmur2(b"foobar"), -790332482);
        assert_eq!(murmur2(b"a-little-bit-long-string"), -985981536);
        assert_eq!(murmur2(b"a-little-bit-longer-string"), -1486304829);
    }
}
