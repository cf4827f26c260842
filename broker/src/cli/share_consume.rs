//! `samsa consume TOPIC --share-group G`: consumes as a member of share group G (KIP-932):
//! joins with ShareGroupHeartbeat, acquires records with ShareFetch from each partition's
//! leader, prints them, and acknowledges each as `--ack` says (accept, release: deliver again,
//! reject: archive, and dead-letter where the group has a dead-letter topic), on the next fetch.
//! At the end (`-n`, or `-e` once a fetch acquires nothing) it sends the last acknowledgements
//! as it closes its share sessions, and leaves the group.

use std::collections::BTreeMap;
use std::io::Write;
use std::time::{Duration, Instant};

use kafka_protocol::messages::share_acknowledge_request::{
    AcknowledgePartition, AcknowledgeTopic, AcknowledgementBatch as AckBatch,
};
use kafka_protocol::messages::share_fetch_request::{
    AcknowledgementBatch, FetchPartition, FetchTopic,
};
use kafka_protocol::messages::{
    GroupId, ShareAcknowledgeRequest, ShareFetchRequest, ShareGroupHeartbeatRequest, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use samsa_storage::batch;

use super::client::{check, Client, Node};
use super::global::Global;
use super::records;

/// `--ack`: how every record printed is acknowledged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Ack {
    Accept,
    Release,
    Reject,
}

impl Ack {
    fn wire(self) -> i8 {
        match self {
            Ack::Accept => 1,
            Ack::Release => 2,
            Ack::Reject => 3,
        }
    }
}

const GAP: i8 = 0;
const FETCH_WAIT_MS: i32 = 500;
const FETCH_BYTES_MAX: i32 = 16 * 1024 * 1024;
const MAX_RECORDS: i32 = 500;

/// Acknowledgements waiting to be sent, per partition: (offset, type) in offset order.
type Pending = BTreeMap<i32, Vec<(i64, i8)>>;

/// Runs of consecutive offsets of one type, as acknowledgement batches.
fn batches(acks: &[(i64, i8)]) -> Vec<(i64, i64, i8)> {
    let mut out: Vec<(i64, i64, i8)> = Vec::new();
    for (o, t) in acks {
        match out.last_mut() {
            Some((_, last, ty)) if *last + 1 == *o && ty == t => *last = *o,
            _ => out.push((*o, *o, *t)),
        }
    }
    out
}

struct Member {
    group: String,
    id: String,
    epoch: i32,
    interval: Duration,
    last_heartbeat: Instant,
}

impl Member {
    fn heartbeat(
        &mut self,
        client: &mut Client,
        coordinator: Node,
        epoch: i32,
        topics: Option<Vec<String>>,
    ) -> anyhow::Result<()> {
        let (_, resp) = client.call(coordinator, |_| {
            let mut req = ShareGroupHeartbeatRequest::default();
            req.group_id = GroupId(StrBytes::from_string(self.group.clone()));
            req.member_id = StrBytes::from_string(self.id.clone());
            req.member_epoch = epoch;
            req.subscribed_topic_names = topics.map(|t| {
                t.into_iter()
                    .map(|n| TopicName(StrBytes::from_string(n)))
                    .collect()
            });
            req
        })?;
        check(
            resp.error_code,
            &format!("share group '{}'", self.group),
            resp.error_message.as_ref(),
        )?;
        self.epoch = resp.member_epoch;
        if resp.heartbeat_interval_ms > 0 {
            self.interval = Duration::from_millis(resp.heartbeat_interval_ms as u64);
        }
        self.last_heartbeat = Instant::now();
        Ok(())
    }
}

pub fn run(
    global: &Global,
    topic: &str,
    group: &str,
    ack: Ack,
    count: Option<u64>,
    exit_at_end: bool,
    mut print: impl FnMut(i32, &records::Record, &mut Vec<u8>),
) -> anyhow::Result<()> {
    let mut client = global.connect()?;
    let partitions = client.partitions(topic)?;
    let meta = client.metadata(Some(&[topic.to_string()]))?;
    let topic_id = meta
        .topics
        .first()
        .map(|t| t.topic_id)
        .ok_or_else(|| anyhow::anyhow!("no metadata for topic '{topic}'"))?;
    let coordinator = client.group_coordinator(group)?;
    let mut member = Member {
        group: group.to_string(),
        id: uuid::Uuid::new_v4().simple().to_string(),
        epoch: 0,
        interval: Duration::from_secs(5),
        last_heartbeat: Instant::now(),
    };
    member.heartbeat(&mut client, coordinator, 0, Some(vec![topic.to_string()]))?;
    // Share sessions per leader: (node, next epoch).
    let mut sessions: BTreeMap<String, (Node, i32)> = BTreeMap::new();
    let mut pending: BTreeMap<String, Pending> = BTreeMap::new();
    let mut printed = 0u64;
    let stdout = std::io::stdout();
    let mut buf = Vec::with_capacity(64 * 1024);
    let result = (|| -> anyhow::Result<()> {
        loop {
            if count.is_some_and(|n| printed >= n) {
                return Ok(());
            }
            if member.last_heartbeat.elapsed() >= member.interval {
                let epoch = member.epoch;
                member.heartbeat(&mut client, coordinator, epoch, None)?;
            }
            let mut by_leader: BTreeMap<String, (Node, Vec<i32>)> = BTreeMap::new();
            for p in &partitions {
                let node = client.leader(topic, *p);
                by_leader
                    .entry(format!("{node:?}"))
                    .or_insert_with(|| (node, Vec::new()))
                    .1
                    .push(*p);
            }
            let mut acquired_any = false;
            for (key, (node, ps)) in by_leader {
                let epoch = sessions.get(&key).map_or(0, |s| s.1);
                let acks = if epoch == 0 {
                    Pending::new()
                } else {
                    pending.remove(&key).unwrap_or_default()
                };
                let (_, resp) = client.call(node, |_| {
                    let mut t = FetchTopic::default();
                    t.topic_id = topic_id;
                    t.partitions = ps
                        .iter()
                        .map(|p| {
                            let mut fp = FetchPartition::default();
                            fp.partition_index = *p;
                            fp.acknowledgement_batches = acks
                                .get(p)
                                .map(|a| batches(a))
                                .unwrap_or_default()
                                .into_iter()
                                .map(|(first, last, ty)| {
                                    let mut b = AcknowledgementBatch::default();
                                    b.first_offset = first;
                                    b.last_offset = last;
                                    b.acknowledge_types = vec![ty];
                                    b
                                })
                                .collect();
                            fp
                        })
                        .collect();
                    let mut req = ShareFetchRequest::default();
                    req.group_id = Some(GroupId(StrBytes::from_string(group.to_string())));
                    req.member_id = Some(StrBytes::from_string(member.id.clone()));
                    req.share_session_epoch = epoch;
                    req.max_wait_ms = FETCH_WAIT_MS;
                    req.min_bytes = 1;
                    req.max_bytes = FETCH_BYTES_MAX;
                    req.max_records = MAX_RECORDS;
                    req.batch_size = MAX_RECORDS;
                    req.topics = vec![t];
                    req
                })?;
                check(
                    resp.error_code,
                    &format!("share fetch from '{topic}'"),
                    resp.error_message.as_ref(),
                )?;
                sessions.insert(
                    key.clone(),
                    (node, if epoch == i32::MAX { 1 } else { epoch + 1 }),
                );
                let mine = pending.entry(key.clone()).or_default();
                for t in resp.responses {
                    for pd in t.partitions {
                        let p = pd.partition_index;
                        if pd.acknowledge_error_code != 0 {
                            eprintln!(
                                "samsa: acknowledgements of {topic}-{p} refused: {}",
                                pd.acknowledge_error_message
                                    .as_ref()
                                    .map(|m| m.to_string())
                                    .unwrap_or_else(|| format!(
                                        "error {}",
                                        pd.acknowledge_error_code
                                    ))
                            );
                        }
                        check(
                            pd.error_code,
                            &format!("partition {topic}-{p}"),
                            pd.error_message.as_ref(),
                        )?;
                        let Some(data) = pd.records else { continue };
                        let ranges: Vec<(i64, i64)> = pd
                            .acquired_records
                            .iter()
                            .map(|a| (a.first_offset, a.last_offset))
                            .collect();
                        let acquired = |o: i64| ranges.iter().any(|(f, l)| (*f..=*l).contains(&o));
                        let mut seen = std::collections::BTreeSet::new();
                        for b in batch::batches(&data) {
                            let Ok(b) = b else { break };
                            if b.header().is_control() {
                                continue;
                            }
                            let recs = records::decode(&b).map_err(|e| {
                                anyhow::anyhow!(
                                    "batch at offset {} of {topic}-{p}: {e}",
                                    b.header().base_offset
                                )
                            })?;
                            for r in recs.iter().filter(|r| acquired(r.offset)) {
                                seen.insert(r.offset);
                                if count.is_some_and(|n| printed >= n) {
                                    // Not printed: given back for another member.
                                    mine.entry(p)
                                        .or_default()
                                        .push((r.offset, Ack::Release.wire()));
                                    continue;
                                }
                                print(p, r, &mut buf);
                                printed += 1;
                                mine.entry(p).or_default().push((r.offset, ack.wire()));
                            }
                        }
                        // Offsets acquired without a record (compacted, control) are gaps.
                        for (f, l) in &ranges {
                            for o in *f..=*l {
                                if !seen.contains(&o) {
                                    mine.entry(p).or_default().push((o, GAP));
                                }
                            }
                        }
                        if let Some(v) = mine.get_mut(&p) {
                            v.sort_unstable();
                            v.dedup_by_key(|(o, _)| *o);
                        }
                        acquired_any |= !ranges.is_empty();
                    }
                }
            }
            if !buf.is_empty() {
                let mut out = stdout.lock();
                if out.write_all(&buf).and_then(|()| out.flush()).is_err() {
                    return Ok(());
                }
                buf.clear();
            }
            if exit_at_end && !acquired_any {
                return Ok(());
            }
        }
    })();
    // Close: the last acknowledgements with each session's close, then leave the group.
    for (key, (node, _)) in &sessions {
        let acks = pending.remove(key).unwrap_or_default();
        let closed = client.call(*node, |_| {
            let mut req = ShareAcknowledgeRequest::default();
            req.group_id = Some(GroupId(StrBytes::from_string(group.to_string())));
            req.member_id = Some(StrBytes::from_string(member.id.clone()));
            req.share_session_epoch = -1;
            let mut t = AcknowledgeTopic::default();
            t.topic_id = topic_id;
            t.partitions = acks
                .iter()
                .map(|(p, a)| {
                    let mut ap = AcknowledgePartition::default();
                    ap.partition_index = *p;
                    ap.acknowledgement_batches = batches(a)
                        .into_iter()
                        .map(|(first, last, ty)| {
                            let mut b = AckBatch::default();
                            b.first_offset = first;
                            b.last_offset = last;
                            b.acknowledge_types = vec![ty];
                            b
                        })
                        .collect();
                    ap
                })
                .collect();
            req.topics = vec![t];
            req
        });
        match closed {
            Ok((_, resp)) if resp.error_code != 0 => eprintln!(
                "samsa: closing the share session refused: error {}",
                resp.error_code
            ),
            Ok((_, resp)) => {
                for t in resp.responses {
                    for p in t.partitions.iter().filter(|p| p.error_code != 0) {
                        eprintln!(
                            "samsa: acknowledgements of {topic}-{} refused: error {}",
                            p.partition_index, p.error_code
                        );
                    }
                }
            }
            Err(e) => eprintln!("samsa: closing the share session failed: {e}"),
        }
    }
    if let Err(e) = member.heartbeat(&mut client, coordinator, -1, None) {
        eprintln!("samsa: leaving share group '{group}' failed: {e}");
    }
    result
}
