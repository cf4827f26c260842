//! `samsa consume TOPIC`: fetches records from every partition (from each leader) and prints
//! them with a kcat-style template, or as one JSON object per line with `--format json`.
//!
//! With `-g GROUP` it starts from the group's committed offsets (partitions without one start
//! at `--from`) and commits what it printed after every fetch, as a consumer outside any
//! generation (no JoinGroup): Kafka accepts such commits while the group has no members.
//!
//! It stops after `-n COUNT` records, or with `-e` once it reached the end of every partition;
//! otherwise it follows the topic until interrupted.
//!
//! With `--share-group G` it consumes as a share group member instead ([`super::share_consume`]).

use std::collections::BTreeMap;
use std::io::Write;

use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::{BrokerId, FetchRequest, TopicName};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use samsa_storage::batch;

use super::client::{check, Client, Node, EARLIEST, LATEST};
use super::global::Global;
use super::output::{parse_datetime_ms, Format};
use super::records::{self, Record};

/// Most bytes asked for per fetch and per partition.
const FETCH_BYTES_MAX: i32 = 16 * 1024 * 1024;
const PARTITION_FETCH_BYTES_MAX: i32 = 1024 * 1024;
/// How long a fetch waits at the broker for new data.
const FETCH_WAIT_MS: i32 = 500;

#[derive(Debug, clap::Args)]
pub struct ConsumeArgs {
    pub topic: String,
    /// Start from this group's committed offsets, and commit what is printed.
    #[arg(short = 'g', long)]
    pub group: Option<String>,
    /// beginning, end, an offset, or an ISO 8601 time (for partitions without a committed
    /// offset when -g is given).
    #[arg(long, default_value = "beginning", allow_hyphen_values = true)]
    pub from: String,
    /// Stop after COUNT records.
    #[arg(short = 'n', long)]
    pub count: Option<u64>,
    /// Stop at the end of every partition.
    #[arg(short = 'e', long = "exit")]
    pub exit_at_end: bool,
    /// Only this partition (repeatable).
    #[arg(short = 'p', long = "partition")]
    pub partitions: Vec<i32>,
    /// Template as kcat's -f: %t topic, %p partition, %o offset, %T timestamp (ms),
    /// %k key, %v (or %s) value, %K/%S key/value length, %h headers, %%, \n \t \r \\.
    #[arg(short = 'f', long = "template", default_value = "%v\\n")]
    pub template: String,
    /// Consume as a member of this share group (KIP-932) instead: records are acquired, not
    /// read by offset, and acknowledged as --ack says.
    #[arg(long, conflicts_with_all = ["group", "from", "partitions"])]
    pub share_group: Option<String>,
    /// With --share-group: accept (done), release (deliver again) or reject (archive; to the
    /// group's dead-letter topic if it has one) every record printed.
    #[arg(long, value_enum, default_value = "accept", requires = "share_group")]
    pub ack: super::share_consume::Ack,
}

/// Where a partition starts (`--from`).
enum From {
    Beginning,
    End,
    Offset(i64),
    Time(i64),
}

fn parse_from(s: &str) -> anyhow::Result<From> {
    Ok(match s {
        "beginning" | "earliest" => From::Beginning,
        "end" | "latest" => From::End,
        _ => {
            if let Ok(o) = s.parse::<i64>() {
                if o < 0 {
                    anyhow::bail!("--from offset {o} is negative");
                }
                From::Offset(o)
            } else if let Some(ms) = parse_datetime_ms(s) {
                From::Time(ms)
            } else {
                anyhow::bail!("--from '{s}' is not beginning, end, an offset or an ISO 8601 time")
            }
        }
    })
}

/// One piece of a parsed template.
#[derive(Debug, PartialEq)]
enum Piece {
    Text(Vec<u8>),
    Topic,
    Partition,
    Offset,
    Timestamp,
    Key,
    KeyLen,
    Value,
    ValueLen,
    Headers,
}

fn parse_template(s: &str) -> anyhow::Result<Vec<Piece>> {
    let mut out = Vec::new();
    let mut text = Vec::new();
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        let piece = match c {
            '%' => match chars.next() {
                Some('t') => Piece::Topic,
                Some('p') => Piece::Partition,
                Some('o') => Piece::Offset,
                Some('T') => Piece::Timestamp,
                Some('k') => Piece::Key,
                Some('K') => Piece::KeyLen,
                Some('v' | 's') => Piece::Value,
                Some('S') => Piece::ValueLen,
                Some('h') => Piece::Headers,
                Some('%') => {
                    text.push(b'%');
                    continue;
                }
                other => anyhow::bail!(
                    "unknown template field %{} (known: %t %p %o %T %k %K %v %s %S %h %%)",
                    other.map(String::from).unwrap_or_default()
                ),
            },
            '\\' => {
                let e = match chars.next() {
                    Some('n') => b'\n',
                    Some('t') => b'\t',
                    Some('r') => b'\r',
                    Some('\\') | None => b'\\',
                    Some(other) => {
                        text.push(b'\\');
                        let mut b = [0; 4];
                        text.extend_from_slice(other.encode_utf8(&mut b).as_bytes());
                        continue;
                    }
                };
                text.push(e);
                continue;
            }
            c => {
                let mut b = [0; 4];
                text.extend_from_slice(c.encode_utf8(&mut b).as_bytes());
                continue;
            }
        };
        if !text.is_empty() {
            out.push(Piece::Text(std::mem::take(&mut text)));
        }
        out.push(piece);
    }
    if !text.is_empty() {
        out.push(Piece::Text(text));
    }
    Ok(out)
}

fn render(pieces: &[Piece], topic: &str, partition: i32, r: &Record, out: &mut Vec<u8>) {
    for p in pieces {
        match p {
            Piece::Text(t) => out.extend_from_slice(t),
            Piece::Topic => out.extend_from_slice(topic.as_bytes()),
            Piece::Partition => out.extend_from_slice(partition.to_string().as_bytes()),
            Piece::Offset => out.extend_from_slice(r.offset.to_string().as_bytes()),
            Piece::Timestamp => out.extend_from_slice(r.timestamp.to_string().as_bytes()),
            Piece::Key => out.extend_from_slice(r.key.as_deref().unwrap_or_default()),
            Piece::KeyLen => out.extend_from_slice(
                r.key
                    .as_ref()
                    .map_or(-1, |k| k.len() as i64)
                    .to_string()
                    .as_bytes(),
            ),
            Piece::Value => out.extend_from_slice(r.value.as_deref().unwrap_or_default()),
            Piece::ValueLen => out.extend_from_slice(
                r.value
                    .as_ref()
                    .map_or(-1, |v| v.len() as i64)
                    .to_string()
                    .as_bytes(),
            ),
            Piece::Headers => {
                for (i, (k, v)) in r.headers.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    out.extend_from_slice(k.as_bytes());
                    out.push(b'=');
                    out.extend_from_slice(v.as_deref().unwrap_or_default());
                }
            }
        }
    }
}

pub fn run(global: &Global, args: &ConsumeArgs) -> anyhow::Result<()> {
    let template = parse_template(&args.template)?;
    if let Some(group) = &args.share_group {
        let topic = args.topic.as_str();
        let format = global.format;
        return super::share_consume::run(
            global,
            topic,
            group,
            args.ack,
            args.count,
            args.exit_at_end,
            |p, r, buf| match format {
                Format::Json => {
                    serde_json::to_writer(&mut *buf, &records::to_json(Some(topic), Some(p), r))
                        .expect("a record serializes");
                    buf.push(b'\n');
                }
                Format::Table => render(&template, topic, p, r, buf),
            },
        );
    }
    let from = parse_from(&args.from)?;
    let mut client = global.connect()?;
    let topic = args.topic.as_str();
    let all = client.partitions(topic)?;
    let partitions: Vec<i32> = if args.partitions.is_empty() {
        all
    } else {
        if let Some(bad) = args.partitions.iter().find(|p| !all.contains(p)) {
            anyhow::bail!("topic '{topic}' has no partition {bad}");
        }
        args.partitions.clone()
    };
    let coordinator = match &args.group {
        Some(g) => Some(client.group_coordinator(g)?),
        None => None,
    };
    let committed = match (&args.group, coordinator) {
        (Some(g), Some(c)) => super::group::offset_fetch(
            &mut client,
            c,
            g,
            Some(&[(topic.to_string(), partitions.clone())]),
        )?,
        _ => BTreeMap::new(),
    };
    let mut positions = start_offsets(&mut client, topic, &partitions, &from, &committed)?;
    let mut high_watermarks: BTreeMap<i32, i64> = BTreeMap::new();
    let mut printed = 0u64;
    let stdout = std::io::stdout();
    let mut buf = Vec::with_capacity(64 * 1024);
    loop {
        if args.count.is_some_and(|n| printed >= n) {
            break;
        }
        if args.exit_at_end
            && positions
                .iter()
                .all(|(p, o)| high_watermarks.get(p).is_some_and(|hw| o >= hw))
        {
            break;
        }
        let mut by_leader: BTreeMap<String, (Node, Vec<i32>)> = BTreeMap::new();
        for p in positions.keys() {
            let node = client.leader(topic, *p);
            by_leader
                .entry(format!("{node:?}"))
                .or_insert_with(|| (node, Vec::new()))
                .1
                .push(*p);
        }
        let mut moved: BTreeMap<(String, i32), i64> = BTreeMap::new();
        for (_, (node, ps)) in by_leader {
            let (_, resp) = client.call(node, |_| {
                let from = ps.iter().map(|p| (*p, positions[p]));
                let mut req = fetch_request(topic, from, PARTITION_FETCH_BYTES_MAX);
                req.max_wait_ms = FETCH_WAIT_MS;
                req.min_bytes = 1;
                req.max_bytes = FETCH_BYTES_MAX;
                req
            })?;
            check(resp.error_code, &format!("fetch from '{topic}'"), None)?;
            for t in resp.responses {
                for pd in t.partitions {
                    let p = pd.partition_index;
                    if pd.error_code == ResponseError::OffsetOutOfRange.code() {
                        // Retention removed what we wanted: start over at the log start.
                        let earliest = client.list_offsets(&[(topic.to_string(), p, EARLIEST)])?;
                        let to = earliest.get(&(topic.to_string(), p)).map_or(0, |o| o.0);
                        eprintln!(
                            "samsa: offset {} of {topic}-{p} is out of range; continuing from {to}",
                            positions[&p]
                        );
                        positions.insert(p, to);
                        continue;
                    }
                    check(pd.error_code, &format!("partition {topic}-{p}"), None)?;
                    high_watermarks.insert(p, pd.high_watermark);
                    let Some(data) = pd.records else { continue };
                    let mut position = positions[&p];
                    for b in batch::batches(&data) {
                        // A fetch may end in a partial batch (KIP-74): the rest comes next time.
                        let Ok(b) = b else { break };
                        let h = *b.header();
                        if h.next_offset() <= position {
                            continue;
                        }
                        if let Err(e) = b.validate_integrity() {
                            anyhow::bail!(
                                "batch at offset {} of {topic}-{p} is corrupt: {e}",
                                h.base_offset
                            );
                        }
                        if !h.is_control() {
                            let recs = records::decode(&b).map_err(|e| {
                                anyhow::anyhow!(
                                    "batch at offset {} of {topic}-{p}: {e}",
                                    h.base_offset
                                )
                            })?;
                            let from_offset = position;
                            for r in recs.iter().filter(|r| r.offset >= from_offset) {
                                if args.count.is_some_and(|n| printed >= n) {
                                    break;
                                }
                                match global.format {
                                    Format::Json => {
                                        serde_json::to_writer(
                                            &mut buf,
                                            &records::to_json(Some(topic), Some(p), r),
                                        )?;
                                        buf.push(b'\n');
                                    }
                                    Format::Table => render(&template, topic, p, r, &mut buf),
                                }
                                printed += 1;
                                position = r.offset + 1;
                            }
                        }
                        if args.count.is_some_and(|n| printed >= n) {
                            break;
                        }
                        position = position.max(h.next_offset());
                    }
                    if position != positions[&p] {
                        positions.insert(p, position);
                        moved.insert((topic.to_string(), p), position);
                    }
                }
            }
        }
        if !buf.is_empty() {
            let mut out = stdout.lock();
            if out.write_all(&buf).and_then(|()| out.flush()).is_err() {
                // The reader went away (`| head`): stop quietly.
                return Ok(());
            }
            buf.clear();
        }
        if let (Some(g), Some(c)) = (&args.group, coordinator) {
            super::group::offset_commit(&mut client, c, g, &moved)?;
        }
    }
    Ok(())
}

/// A consumer's Fetch of `topic` from (partition, offset) pairs, `partition_bytes` at most
/// from each; the caller sets the wait and the request's bytes.
pub fn fetch_request(
    topic: &str,
    from: impl Iterator<Item = (i32, i64)>,
    partition_bytes: i32,
) -> FetchRequest {
    let mut t = FetchTopic::default();
    t.topic = TopicName(StrBytes::from_string(topic.to_string()));
    t.partitions = from
        .map(|(partition, offset)| {
            let mut fp = FetchPartition::default();
            fp.partition = partition;
            fp.fetch_offset = offset;
            fp.partition_max_bytes = partition_bytes;
            fp
        })
        .collect();
    let mut req = FetchRequest::default();
    req.replica_id = BrokerId(-1);
    req.topics = vec![t];
    req
}

/// The first offset to fetch per partition: the committed one, else what `--from` says.
fn start_offsets(
    client: &mut Client,
    topic: &str,
    partitions: &[i32],
    from: &From,
    committed: &BTreeMap<(String, i32), i64>,
) -> anyhow::Result<BTreeMap<i32, i64>> {
    let mut out = BTreeMap::new();
    let mut lookup = Vec::new();
    for p in partitions {
        match (committed.get(&(topic.to_string(), *p)), from) {
            (Some(o), _) => {
                out.insert(*p, *o);
            }
            (None, From::Offset(o)) => {
                out.insert(*p, *o);
            }
            (None, From::Beginning) => lookup.push((topic.to_string(), *p, EARLIEST)),
            (None, From::End) => lookup.push((topic.to_string(), *p, LATEST)),
            (None, From::Time(ms)) => lookup.push((topic.to_string(), *p, *ms)),
        }
    }
    if !lookup.is_empty() {
        let found = client.list_offsets(&lookup)?;
        let mut past_end = Vec::new();
        for (t, p, _) in &lookup {
            match found.get(&(t.clone(), *p)) {
                Some((o, _)) if *o >= 0 => {
                    out.insert(*p, *o);
                }
                // No record at or after the time: start at the end.
                _ => past_end.push((t.clone(), *p, LATEST)),
            }
        }
        if !past_end.is_empty() {
            for ((_, p), (o, _)) in client.list_offsets(&past_end)? {
                out.insert(p, o);
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_parse_like_kcat() {
        let pieces = parse_template("%k=%v@%p:%o %%\\n").unwrap();
        assert_eq!(
            pieces,
            vec![
                Piece::Key,
                Piece::Text(b"=".to_vec()),
                Piece::Value,
                Piece::Text(b"@".to_vec()),
                Piece::Partition,
                Piece::Text(b":".to_vec()),
                Piece::Offset,
                Piece::Text(b" %\n".to_vec()),
            ]
        );
        assert!(parse_template("%x").is_err());
    }
}
