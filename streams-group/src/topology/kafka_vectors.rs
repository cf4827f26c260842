//! Differential vectors: random topologies configured by Kafka 4.4's own
//! `InternalTopicManager.configureTopics` (its jars run on a JVM), each with Kafka's answer, and
//! [`configure`] must give the same: the status and its detail, the subtopologies' task and
//! internal topic partition counts, the internal topics to create; or, where Kafka throws, the
//! same kind of failure (and the same message for `StreamsInvalidTopologyException` and
//! `InvalidTopicException`).
//!
//! `kafka_vectors.txt`, two lines a case (700 cases, chosen among some 40,000 that all agree):
//!
//! ```text
//! case <topic>=<partitions>,... || <subtopology> || <subtopology> ...
//! => <answer> || <answer> ...
//! ```
//!
//! The topics are those that exist (`-` for none); a subtopology, in the order of the
//! topology's list, is `<id>;src=<names>;rsrc=<name>:<partitions>,...;sink=<names>;
//! cl=<name>:<partitions>,...;grp=<src indexes>/<rsrc indexes> ...` (a partition count of 0 is
//! to be derived, `-` is no index). Kafka's answers: `error <STATUS> <detail>`, then
//! `subtopology <id> tasks <n> rsrc <name>=<n>... cl <name>=<n>...` for each configured
//! subtopology and `create <name>=<n>...`; or `invalid StreamsInvalidTopology <message>`,
//! `invalid InvalidTopic <message>`, `invalid Internal` (Kafka threw something else).
//!
//! `KAFKA_TOPOLOGY_VECTORS=<file>` runs the test over another file of the same form.

use super::*;
use crate::{CopartitionGroup, Subtopology};

struct Topics(BTreeMap<String, i32>);

impl TopicView for Topics {
    fn partitions(&self, name: &str) -> Option<i32> {
        self.0.get(name).copied()
    }

    fn names(&self) -> Vec<String> {
        self.0.keys().cloned().collect()
    }
}

fn indexes(s: &str) -> Vec<i16> {
    if s == "-" {
        Vec::new()
    } else {
        s.split(',').map(|i| i.parse().unwrap()).collect()
    }
}

fn info(name: &str, partitions: &str) -> TopicInfo {
    TopicInfo {
        name: name.into(),
        partitions: partitions.parse().unwrap(),
        ..TopicInfo::default()
    }
}

/// Our answer, in the vectors' form.
fn answer(topology: &Topology, topics: &Topics) -> Vec<String> {
    let mut out = Vec::new();
    match configure(topology, topics) {
        Err(e) => match e.kind {
            InvalidTopologyKind::InvalidTopology => {
                out.push(format!("invalid StreamsInvalidTopology {}", e.message))
            }
            InvalidTopologyKind::InvalidTopic => {
                out.push(format!("invalid InvalidTopic {}", e.message))
            }
            InvalidTopologyKind::Internal => out.push("invalid Internal".into()),
        },
        Ok(c) => {
            if let Some(e) = &c.error {
                let status = match e.status {
                    Status::MissingSourceTopics => "MISSING_SOURCE_TOPICS",
                    Status::IncorrectlyPartitionedTopics => "INCORRECTLY_PARTITIONED_TOPICS",
                    Status::MissingInternalTopics => "MISSING_INTERNAL_TOPICS",
                    other => panic!("unexpected status {other:?}"),
                };
                out.push(format!("error {status} {}", e.detail));
            }
            for (id, s) in c.subtopologies.iter().flatten() {
                let mut line = format!("subtopology {id} tasks {} rsrc", s.number_of_tasks);
                for (name, t) in &s.repartition_source_topics {
                    line.push_str(&format!(" {name}={}", t.partitions));
                }
                line.push_str(" cl");
                for (name, t) in &s.state_changelog_topics {
                    line.push_str(&format!(" {name}={}", t.partitions));
                }
                out.push(line);
            }
            let mut line = "create".to_string();
            for t in &c.internal_topics_to_create {
                line.push_str(&format!(" {}={}", t.name, t.partitions));
            }
            out.push(line);
        }
    }
    out
}

fn list(s: &str) -> Vec<&str> {
    s.split(',').filter(|x| !x.is_empty()).collect()
}

fn infos(s: &str) -> Vec<TopicInfo> {
    list(s)
        .into_iter()
        .map(|t| {
            let (name, partitions) = t.split_once(':').unwrap();
            info(name, partitions)
        })
        .collect()
}

/// A case line, read.
fn read_case(line: &str) -> (Topology, Topics) {
    let mut parts = line.strip_prefix("case ").unwrap().split(" || ");
    let mut topics = BTreeMap::new();
    for t in list(parts.next().unwrap())
        .into_iter()
        .filter(|t| *t != "-")
    {
        let (name, partitions) = t.split_once('=').unwrap();
        topics.insert(name.to_string(), partitions.parse().unwrap());
    }
    let mut subtopologies = Vec::new();
    for spec in parts {
        let mut fields = spec.split(';');
        let mut s = Subtopology {
            id: fields.next().unwrap().into(),
            ..Subtopology::default()
        };
        for field in fields {
            let (key, value) = field.split_once('=').unwrap();
            match key {
                "src" => s.source_topics = list(value).into_iter().map(String::from).collect(),
                "rsrc" => s.repartition_source_topics = infos(value),
                "sink" => {
                    s.repartition_sink_topics = list(value).into_iter().map(String::from).collect()
                }
                "cl" => s.state_changelog_topics = infos(value),
                "grp" => {
                    for g in value.split(' ').filter(|g| !g.is_empty()) {
                        let (src, rsrc) = g.split_once('/').unwrap();
                        s.copartition_groups.push(CopartitionGroup {
                            source_topics: indexes(src),
                            source_topic_regex: Vec::new(),
                            repartition_source_topics: indexes(rsrc),
                        });
                    }
                }
                other => panic!("unknown field {other}"),
            }
        }
        subtopologies.push(s);
    }
    let topology = Topology {
        epoch: 3,
        subtopologies,
    };
    (topology, Topics(topics))
}

/// Runs every case of `text`: how many, and the mismatches, described.
fn run(text: &str) -> (usize, Vec<String>) {
    let mut cases = 0;
    let mut mismatches = Vec::new();
    let mut lines = text.lines();
    while let Some(case) = lines.next() {
        let expected = lines.next().expect("Kafka's answer");
        cases += 1;
        let (topology, topics) = read_case(case);
        let ours = format!("=> {}", answer(&topology, &topics).join(" || "));
        if ours != expected {
            mismatches.push(format!("{case}\nKafka: {expected}\nours:  {ours}"));
        }
    }
    (cases, mismatches)
}

#[test]
fn configure_answers_as_kafka_4_4_does() {
    let text = match std::env::var("KAFKA_TOPOLOGY_VECTORS") {
        Ok(path) => std::fs::read_to_string(path).unwrap(),
        Err(_) => include_str!("kafka_vectors.txt").to_string(),
    };
    let (cases, mismatches) = run(&text);
    assert!(cases > 0);
    assert!(
        mismatches.is_empty(),
        "{} of {cases} cases differ from Kafka; the first:\n{}",
        mismatches.len(),
        mismatches[0]
    );
}
