//! A topology configured against the cluster's topics, as Kafka 4.4's streams group
//! coordinator does it (`InternalTopicManager.configureTopics` and the classes it drives:
//! `RepartitionTopics`, `CopartitionedTopicsEnforcer`, `ChangelogTopics`), and the topic
//! partitions a member's tasks cover (`EndpointToPartitionsManager`).
//!
//! [`configure`] is a pure function of the topology and the topics. In Kafka's order:
//!
//! 1. every source topic must exist, else `MISSING_SOURCE_TOPICS`;
//! 2. a repartition topic without an explicit partition count gets the largest partition count
//!    among the source topics (external or repartition) of the subtopology that writes it,
//!    iterated to a fixed point through the subtopologies (a topology whose counts do not
//!    resolve is invalid: `STREAMS_INVALID_TOPOLOGY`);
//! 3. each copartition group is enforced: its external topics must agree
//!    (`INCORRECTLY_PARTITIONED_TOPICS` otherwise) and its repartition topics take their count;
//!    a group of repartition topics only takes the largest of them, or the count fixed by the
//!    topology;
//! 4. a changelog topic gets the largest partition count of its subtopology's source topics;
//! 5. a subtopology has as many tasks as its largest source topic has partitions;
//! 6. an internal topic that exists with another partition count is
//!    `INCORRECTLY_PARTITIONED_TOPICS`; the internal topics that do not exist are to be created,
//!    and until they are the status is `MISSING_INTERNAL_TOPICS`.
//!
//! Kafka walks Java hash maps on the way (the subtopologies by id among others); where that
//! order shows (which error comes first, which topics a detail names, a derived count in a few
//! corner cases), [`java_order`] reproduces it.
//!
//! Source topic regular expressions: Kafka 4.4 refuses them before any of this
//! (StreamsGroupHeartbeat answers `INVALID_REQUEST` with [`REGEX_UNSUPPORTED`]), so its
//! configuration never sees one. Here they are resolved against the topics (a full match, as
//! Java's `Matcher.matches`, Kafka's own internal topics and this topology's internal topics
//! excluded), the topics they match join the subtopology's source topics, and a regex that
//! matches nothing is `MISSING_SOURCE_TOPICS`; a handler that follows Kafka 4.4 refuses them
//! first and never exercises that.

mod java_order;
#[cfg(test)]
mod kafka_vectors;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use crate::{Status, StatusDetail, TaskSet, TopicInfo, TopicView, Topology};

/// What Kafka 4.4 answers (`INVALID_REQUEST`) to a StreamsGroupHeartbeat whose topology has a
/// source topic regular expression.
pub const REGEX_UNSUPPORTED: &str = "Regular expressions for source topics are not supported yet.";

/// An internal topic (repartition or changelog) with its partition count decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfiguredInternalTopic {
    pub name: String,
    pub partitions: i32,
    /// As the topology gives it; 0 for the broker's default.
    pub replication_factor: i16,
    pub configs: BTreeMap<String, String>,
}

/// A subtopology with its partition counts decided (Kafka's `ConfiguredSubtopology`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ConfiguredSubtopology {
    /// The largest partition count among its source and repartition source topics.
    pub number_of_tasks: i32,
    /// Its external source topics, the topics its regular expressions match included.
    pub source_topics: BTreeSet<String>,
    pub repartition_source_topics: BTreeMap<String, ConfiguredInternalTopic>,
    pub repartition_sink_topics: BTreeSet<String>,
    pub state_changelog_topics: BTreeMap<String, ConfiguredInternalTopic>,
}

/// A topology configured against the topics (Kafka's `ConfiguredTopology`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfiguredTopology {
    /// The epoch of the topology it was configured from.
    pub epoch: i32,
    /// The subtopologies by id; `None` when the configuration failed (missing source topics,
    /// incorrectly partitioned topics). Present, with `error` set, while internal topics are
    /// missing.
    pub subtopologies: Option<BTreeMap<String, ConfiguredSubtopology>>,
    /// The internal topics that do not exist yet, sorted by name: partitions decided,
    /// replication factor as the topology gives it (0 for the broker's default; Kafka asks
    /// CreateTopics for -1 then), configs.
    pub internal_topics_to_create: Vec<TopicInfo>,
    /// The status a member is told while the topology is not ready.
    pub error: Option<StatusDetail>,
}

impl ConfiguredTopology {
    /// Ready to be assigned: nothing is missing or misshapen.
    pub fn is_ready(&self) -> bool {
        self.error.is_none()
    }

    pub fn subtopology(&self, id: &str) -> Option<&ConfiguredSubtopology> {
        self.subtopologies.as_ref()?.get(id)
    }

    /// Subtopology id -> number of tasks; empty when the configuration failed.
    pub fn tasks(&self) -> BTreeMap<String, i32> {
        self.subtopologies
            .iter()
            .flatten()
            .map(|(id, s)| (id.clone(), s.number_of_tasks))
            .collect()
    }

    /// Whether the subtopology keeps state: it has changelog topics (Kafka's
    /// `TopologyMetadata.isStateful`). False for an unknown subtopology.
    pub fn is_stateful(&self, subtopology: &str) -> bool {
        self.subtopology(subtopology)
            .is_some_and(|s| !s.state_changelog_topics.is_empty())
    }
}

/// What makes Kafka's configuration throw rather than answer with a status: the whole
/// StreamsGroupHeartbeat then fails with [`InvalidTopology::error_code`] and this message,
/// and nothing of it is kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidTopology {
    pub kind: InvalidTopologyKind,
    pub message: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InvalidTopologyKind {
    /// `StreamsInvalidTopologyException`: repartition counts that do not resolve, a
    /// subtopology without source topics, a bad regular expression.
    InvalidTopology,
    /// `InvalidTopicException`: an internal topic name Kafka does not accept.
    InvalidTopic,
    /// Kafka's `IllegalStateException` and the like: a malformed topology (an index out of
    /// range, a duplicate id, a partition count below one).
    Internal,
}

impl InvalidTopology {
    /// The heartbeat's error code: `STREAMS_INVALID_TOPOLOGY` (130), `INVALID_TOPIC_EXCEPTION`
    /// (17) or `UNKNOWN_SERVER_ERROR` (-1).
    pub fn error_code(&self) -> i16 {
        match self.kind {
            InvalidTopologyKind::InvalidTopology => 130,
            InvalidTopologyKind::InvalidTopic => 17,
            InvalidTopologyKind::Internal => -1,
        }
    }

    /// The heartbeat's error message: this one, except for [`InvalidTopologyKind::Internal`],
    /// where Kafka's coordinator answers `UNKNOWN_SERVER_ERROR` with a null message (it logs
    /// the exception's text instead).
    pub fn heartbeat_message(&self) -> Option<&str> {
        match self.kind {
            InvalidTopologyKind::Internal => None,
            _ => Some(&self.message),
        }
    }

    fn invalid(message: impl Into<String>) -> Failure {
        Failure::Invalid(InvalidTopology {
            kind: InvalidTopologyKind::InvalidTopology,
            message: message.into(),
        })
    }

    fn internal(message: impl Into<String>) -> Failure {
        Failure::Invalid(InvalidTopology {
            kind: InvalidTopologyKind::Internal,
            message: message.into(),
        })
    }
}

impl std::fmt::Display for InvalidTopology {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for InvalidTopology {}

/// Why a configuration stops: a status for the member (Kafka's `TopicConfigurationException`)
/// or an invalid topology.
enum Failure {
    Status(StatusDetail),
    Invalid(InvalidTopology),
}

fn status(status: Status, detail: impl Into<String>) -> Failure {
    Failure::Status(StatusDetail {
        status,
        detail: detail.into(),
    })
}

/// A subtopology as the configuration reads it: its regexes resolved.
struct Sub<'a> {
    id: &'a str,
    /// Named source topics, then the topics its regexes match (not named already).
    sources: Vec<String>,
    repartition_sources: &'a [TopicInfo],
    sinks: &'a [String],
    changelogs: &'a [TopicInfo],
    /// Each copartition group's topics, in the order Kafka's `HashSet` iterates them.
    copartition_groups: Vec<Vec<String>>,
}

/// Kafka's internal topics, which a pattern subscription does not see (`Topic.isInternal`).
const KAFKA_INTERNAL_TOPICS: [&str; 3] = [
    "__consumer_offsets",
    "__transaction_state",
    "__share_group_state",
];

/// Configures `topology` against `topics`, as Kafka 4.4's `InternalTopicManager` does. `Ok`
/// carries the configured topology, ready or with the status the members are told; `Err` is a
/// topology Kafka rejects outright (its heartbeat fails).
pub fn configure(
    topology: &Topology,
    topics: &dyn TopicView,
) -> Result<ConfiguredTopology, InvalidTopology> {
    if topology.epoch < 0 {
        return Err(InvalidTopology {
            kind: InvalidTopologyKind::Internal,
            message: "Topology epoch must be non-negative.".into(),
        });
    }
    let failed = |detail| ConfiguredTopology {
        epoch: topology.epoch,
        subtopologies: None,
        internal_topics_to_create: Vec::new(),
        error: Some(detail),
    };
    match configure_inner(topology, topics) {
        Ok(configured) => Ok(configured),
        Err(Failure::Status(detail)) => Ok(failed(detail)),
        Err(Failure::Invalid(invalid)) => Err(invalid),
    }
}

/// The topics whose metadata the configuration depends on (Kafka's
/// `StreamsTopology.requiredTopics`, over which the group's metadata hash is computed): source,
/// repartition source and changelog topics, and the topics the source regexes match now.
pub fn required_topics(topology: &Topology, topics: &dyn TopicView) -> BTreeSet<String> {
    let internal = internal_topic_names(topology);
    let names = topics.names();
    let mut required = BTreeSet::new();
    for s in &topology.subtopologies {
        required.extend(s.source_topics.iter().cloned());
        required.extend(s.repartition_source_topics.iter().map(|t| t.name.clone()));
        required.extend(s.state_changelog_topics.iter().map(|t| t.name.clone()));
        for pattern in &s.source_topic_regex {
            if let Ok(re) = full_match(pattern) {
                required.extend(matching(&re, &names, &internal));
            }
        }
    }
    required
}

fn internal_topic_names(topology: &Topology) -> HashSet<&str> {
    topology
        .subtopologies
        .iter()
        .flat_map(|s| {
            s.repartition_source_topics
                .iter()
                .chain(&s.state_changelog_topics)
                .map(|t| t.name.as_str())
                .chain(s.repartition_sink_topics.iter().map(String::as_str))
        })
        .collect()
}

fn full_match(pattern: &str) -> Result<regex::Regex, regex::Error> {
    regex::Regex::new(&format!("^(?:{pattern})$"))
}

/// The topics `re` matches, sorted, Kafka's and the topology's internal topics left out.
fn matching(re: &regex::Regex, names: &[String], internal: &HashSet<&str>) -> Vec<String> {
    let mut matched: Vec<String> = names
        .iter()
        .filter(|n| {
            !internal.contains(n.as_str())
                && !KAFKA_INTERNAL_TOPICS.contains(&n.as_str())
                && re.is_match(n)
        })
        .cloned()
        .collect();
    matched.sort();
    matched.dedup();
    matched
}

/// Java's `List.get` out of range.
fn index<T>(items: &[T], i: i16) -> Result<&T, Failure> {
    usize::try_from(i)
        .ok()
        .and_then(|u| items.get(u))
        .ok_or_else(|| {
            InvalidTopology::internal(format!(
                "Index {i} out of bounds for length {}",
                items.len()
            ))
        })
}

/// The subtopologies in the order Kafka's `StreamsTopology` map iterates them, regexes
/// resolved and copartition groups read; a bad index or regex fails here, before anything else
/// (Kafka reads the copartition groups before it checks the source topics).
fn read_subtopologies<'a>(
    topology: &'a Topology,
    topics: &dyn TopicView,
) -> Result<(Vec<Sub<'a>>, Vec<String>), Failure> {
    let mut seen = HashSet::new();
    for s in &topology.subtopologies {
        if !seen.insert(s.id.as_str()) {
            return Err(InvalidTopology::internal(format!("Duplicate key {}", s.id)));
        }
    }
    let by_id: HashMap<&str, &crate::Subtopology> = topology
        .subtopologies
        .iter()
        .map(|s| (s.id.as_str(), s))
        .collect();
    let order = java_order::hash_order(topology.subtopologies.iter().map(|s| &s.id));
    let internal = internal_topic_names(topology);
    let names = if topology
        .subtopologies
        .iter()
        .any(|s| !s.source_topic_regex.is_empty())
    {
        topics.names()
    } else {
        Vec::new()
    };
    let mut unmatched = Vec::new();
    let mut subs = Vec::with_capacity(order.len());
    for id in &order {
        let s = by_id[id.as_str()];
        let mut resolved = Vec::with_capacity(s.source_topic_regex.len());
        for pattern in &s.source_topic_regex {
            let re = full_match(pattern).map_err(|e| {
                InvalidTopology::invalid(format!(
                    "Invalid source topic regex {pattern} in subtopology {}: {e}",
                    s.id
                ))
            })?;
            let matched = matching(&re, &names, &internal);
            if matched.is_empty() {
                unmatched.push(pattern.clone());
            }
            resolved.push(matched);
        }
        let mut sources = s.source_topics.clone();
        for topic in resolved.iter().flatten() {
            if !sources.contains(topic) {
                sources.push(topic.clone());
            }
        }
        let mut copartition_groups = Vec::with_capacity(s.copartition_groups.len());
        for group in &s.copartition_groups {
            let mut members = Vec::new();
            for &i in &group.source_topics {
                members.push(index(&s.source_topics, i)?.clone());
            }
            for &i in &group.source_topic_regex {
                members.extend(index(&resolved, i)?.iter().cloned());
            }
            for &i in &group.repartition_source_topics {
                members.push(index(&s.repartition_source_topics, i)?.name.clone());
            }
            copartition_groups.push(java_order::hash_order(members));
        }
        subs.push(Sub {
            id: &s.id,
            sources,
            repartition_sources: &s.repartition_source_topics,
            sinks: &s.repartition_sink_topics,
            changelogs: &s.state_changelog_topics,
            copartition_groups,
        });
    }
    Ok((subs, unmatched))
}

/// Kafka's `summarizeTopics`: up to three names, then how many more.
fn summarize<S: AsRef<str>>(topics: &[S]) -> String {
    if topics.is_empty() {
        return "<none>".into();
    }
    let shown: Vec<&str> = topics.iter().take(3).map(AsRef::as_ref).collect();
    let mut out = shown.join(", ");
    if topics.len() > 3 {
        out.push_str(&format!(" and {} additional topics", topics.len() - 3));
    }
    out
}

/// Java's `TreeMap<String, Integer>.toString()`.
fn tree_map_string(entries: &[(&str, i32)]) -> String {
    let sorted: BTreeMap<&str, i32> = entries.iter().copied().collect();
    let inner: Vec<String> = sorted.iter().map(|(k, v)| format!("{k}={v}")).collect();
    format!("{{{}}}", inner.join(", "))
}

/// The partition counts known so far: the topics' own first, then the counts decided for
/// internal topics that do not exist (Kafka's `getPartitionCount`).
struct Counts<'a> {
    topics: &'a dyn TopicView,
    decided: HashMap<String, i32>,
}

impl Counts<'_> {
    fn get(&self, topic: &str) -> Option<i32> {
        self.topics
            .partitions(topic)
            .or_else(|| self.decided.get(topic).copied())
    }
}

fn configure_inner(
    topology: &Topology,
    topics: &dyn TopicView,
) -> Result<ConfiguredTopology, Failure> {
    let (subs, unmatched) = read_subtopologies(topology, topics)?;
    check_source_topics(topology, topics, &unmatched)?;

    let mut counts = Counts {
        topics,
        decided: HashMap::new(),
    };
    let repartition = repartition_counts(&subs, &counts)?;
    counts.decided.extend(repartition);
    enforce_copartitioning(&subs, &mut counts)?;
    let changelogs = changelog_counts(&subs, &counts)?;
    counts.decided.extend(changelogs);

    let mut configured = BTreeMap::new();
    for sub in &subs {
        configured.insert(sub.id.to_string(), configure_subtopology(sub, &counts)?);
    }

    let to_create = missing_internal_topics(&configured, &subs, topology, topics)?;
    let error = (!to_create.is_empty()).then(|| {
        let names: Vec<&String> = to_create.iter().map(|(name, _)| name).collect();
        StatusDetail {
            status: Status::MissingInternalTopics,
            detail: format!("Internal topics are missing: {}", summarize(&names)),
        }
    });
    let mut internal_topics_to_create: Vec<TopicInfo> =
        to_create.into_iter().map(|(_, t)| t).collect();
    internal_topics_to_create.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(ConfiguredTopology {
        epoch: topology.epoch,
        subtopologies: Some(configured),
        internal_topics_to_create,
        error,
    })
}

/// Kafka's `throwOnMissingSourceTopics`, and the regexes that match nothing.
fn check_source_topics(
    topology: &Topology,
    topics: &dyn TopicView,
    unmatched: &[String],
) -> Result<(), Failure> {
    let missing: BTreeSet<&String> = topology
        .subtopologies
        .iter()
        .flat_map(|s| &s.source_topics)
        .filter(|t| topics.partitions(t).is_none())
        .collect();
    let mut details = Vec::new();
    if !missing.is_empty() {
        let missing: Vec<&String> = missing.into_iter().collect();
        details.push(format!(
            "Source topics {} are missing.",
            summarize(&missing)
        ));
    }
    if !unmatched.is_empty() {
        let unmatched: Vec<&String> = unmatched
            .iter()
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        details.push(format!(
            "Source topic regexes {} match no topics.",
            summarize(&unmatched)
        ));
    }
    if details.is_empty() {
        Ok(())
    } else {
        Err(status(Status::MissingSourceTopics, details.join(" ")))
    }
}

/// Kafka's `RepartitionTopics.setup`: the partition count of every repartition topic, explicit
/// or derived from the sources of the subtopology that writes it, to a fixed point.
fn repartition_counts(subs: &[Sub], counts: &Counts) -> Result<HashMap<String, i32>, Failure> {
    let mut decided: HashMap<String, i32> = HashMap::new();
    for sub in subs {
        for t in sub.repartition_sources {
            if t.partitions != 0 {
                decided.insert(t.name.clone(), t.partitions);
            }
        }
    }
    loop {
        let mut needed = false;
        let mut progress = false;
        for sub in subs {
            for sink in sub.sinks {
                if decided.contains_key(sink) {
                    continue;
                }
                match derived_count(sub, &decided, counts) {
                    Some(n) => {
                        decided.insert(sink.clone(), n);
                        progress = true;
                    }
                    None => needed = true,
                }
            }
        }
        if needed && !progress {
            return Err(InvalidTopology::invalid(
                "Failed to compute number of partitions for all repartition topics. There may be \
                 loops in the topology that cannot be resolved.",
            ));
        }
        if !needed {
            break;
        }
    }
    let never_written = subs
        .iter()
        .flat_map(|s| s.repartition_sources)
        .any(|t| !decided.contains_key(&t.name));
    if never_written {
        return Err(InvalidTopology::invalid(
            "Failed to compute number of partitions for all repartition topics, because a \
             repartition source topic is never used as a sink topic.",
        ));
    }
    Ok(decided)
}

/// The largest count known among a subtopology's repartition sources and external sources.
fn derived_count(sub: &Sub, decided: &HashMap<String, i32>, counts: &Counts) -> Option<i32> {
    let repartition = sub
        .repartition_sources
        .iter()
        .filter_map(|t| decided.get(&t.name).copied());
    let external = sub.sources.iter().filter_map(|t| counts.get(t));
    repartition.chain(external).max()
}

/// Kafka's `enforceCopartitioning`: every copartition group of every subtopology, the counts
/// it decides for repartition topics applied before the next group reads them.
fn enforce_copartitioning(subs: &[Sub], counts: &mut Counts) -> Result<(), Failure> {
    let all_repartition = || subs.iter().flat_map(|s| s.repartition_sources);
    let fixed: HashSet<&str> = all_repartition()
        .filter(|t| t.partitions != 0)
        .map(|t| t.name.as_str())
        .collect();
    let flexible: HashSet<&str> = all_repartition()
        .filter(|t| t.partitions == 0)
        .map(|t| t.name.as_str())
        .collect();
    for sub in subs {
        for group in &sub.copartition_groups {
            let enforced = enforce(group, &fixed, &flexible, counts)?;
            counts.decided.extend(enforced);
        }
    }
    Ok(())
}

/// Kafka's `CopartitionedTopicsEnforcer.enforce` for one group (its topics in Java's set
/// order): the count its repartition topics take.
fn enforce(
    group: &[String],
    fixed: &HashSet<&str>,
    flexible: &HashSet<&str>,
    counts: &Counts,
) -> Result<Vec<(String, i32)>, Failure> {
    if group.is_empty() {
        return Ok(Vec::new());
    }
    let count_of = |topic: &str| {
        counts.get(topic).ok_or_else(|| {
            InvalidTopology::internal(format!(
                "Number of partitions is not set for topic: {topic}"
            ))
        })
    };
    let is_repartition = |t: &str| fixed.contains(t) || flexible.contains(t);
    let mut repartition: HashMap<String, i32> = HashMap::new();
    for t in group.iter().filter(|t| is_repartition(t)) {
        repartition.insert(t.clone(), count_of(t)?);
    }
    let repartition_order = java_order::hash_order(group.iter().filter(|t| is_repartition(t)));
    let mut external: Vec<(String, i32)> = Vec::new();
    for t in group.iter().filter(|t| !is_repartition(t)) {
        external.push((t.clone(), count_of(t)?));
    }

    let not_same = |entries: &[(&str, i32)]| {
        status(
            Status::IncorrectlyPartitionedTopics,
            format!(
                "Following topics do not have the same number of partitions: [{}]",
                tree_map_string(entries)
            ),
        )
    };
    let target = if external.is_empty() {
        if !fixed.is_empty() {
            // Kafka compares every repartition topic with a fixed count in the topology, not
            // only this group's, and takes their common count.
            let mut fixed_counts = Vec::with_capacity(fixed.len());
            for t in java_order::hash_order(fixed.iter()) {
                fixed_counts.push(count_of(&t)?);
            }
            let first = fixed_counts[0];
            if fixed_counts.iter().any(|&c| c != first) {
                let entries: Vec<(&str, i32)> =
                    repartition.iter().map(|(t, c)| (t.as_str(), *c)).collect();
                return Err(not_same(&entries));
            }
            first
        } else {
            let max = repartition.values().copied().fold(0, i32::max);
            if max == 0 {
                return Err(InvalidTopology::invalid(format!(
                    "All topics in the copartition group had undefined partition number: [{}]",
                    repartition_order.join(", ")
                )));
            }
            max
        }
    } else {
        let first = external[0].1;
        if external.iter().any(|(_, c)| *c != first) {
            let entries: Vec<(&str, i32)> =
                external.iter().map(|(t, c)| (t.as_str(), *c)).collect();
            return Err(not_same(&entries));
        }
        first
    };

    let mut enforced = Vec::with_capacity(repartition.len());
    for t in repartition_order {
        let current = repartition[&t];
        if fixed.contains(t.as_str()) && current != target {
            return Err(status(
                Status::IncorrectlyPartitionedTopics,
                format!(
                    "Number of partitions [{current}] of repartition topic [{t}] doesn't match \
                     number of partitions [{target}] of the source topic."
                ),
            ));
        }
        enforced.push((t, target));
    }
    Ok(enforced)
}

/// Kafka's `ChangelogTopics.setup`: each changelog topic takes the largest partition count
/// among its subtopology's source and repartition source topics.
fn changelog_counts(subs: &[Sub], counts: &Counts) -> Result<HashMap<String, i32>, Failure> {
    let mut changelogs = HashMap::new();
    for sub in subs {
        let mut max: Option<i32> = None;
        let inputs = sub
            .sources
            .iter()
            .map(String::as_str)
            .chain(sub.repartition_sources.iter().map(|t| t.name.as_str()));
        for topic in inputs {
            let n = counts.get(topic).ok_or_else(|| {
                InvalidTopology::internal(format!("No partition count for source topic {topic}"))
            })?;
            max = Some(max.map_or(n, |m| m.max(n)));
        }
        let Some(max) = max else {
            return Err(InvalidTopology::invalid(format!(
                "No source topics found for subtopology {}",
                sub.id
            )));
        };
        for t in sub.changelogs {
            changelogs.insert(t.name.clone(), max);
        }
    }
    Ok(changelogs)
}

/// Kafka's `fromPersistedSubtopology`.
fn configure_subtopology(sub: &Sub, counts: &Counts) -> Result<ConfiguredSubtopology, Failure> {
    let mut tasks: Option<i32> = None;
    let inputs = sub
        .sources
        .iter()
        .map(String::as_str)
        .chain(sub.repartition_sources.iter().map(|t| t.name.as_str()));
    for topic in inputs {
        let n = counts.get(topic).ok_or_else(|| {
            InvalidTopology::internal(format!(
                "Number of partitions must be set for topic {topic}"
            ))
        })?;
        tasks = Some(tasks.map_or(n, |m| m.max(n)));
    }
    let tasks = tasks.ok_or_else(|| {
        InvalidTopology::internal("Subtopology does not contain any source topics")
    })?;
    let repartition_source_topics = configure_internal_topics(sub.repartition_sources, counts)?;
    let state_changelog_topics = configure_internal_topics(sub.changelogs, counts)?;
    if tasks <= 0 {
        return Err(InvalidTopology::internal(
            "Number of tasks must be positive",
        ));
    }
    Ok(ConfiguredSubtopology {
        number_of_tasks: tasks,
        source_topics: sub.sources.iter().cloned().collect(),
        repartition_source_topics,
        repartition_sink_topics: sub.sinks.iter().cloned().collect(),
        state_changelog_topics,
    })
}

fn configure_internal_topics(
    infos: &[TopicInfo],
    counts: &Counts,
) -> Result<BTreeMap<String, ConfiguredInternalTopic>, Failure> {
    let mut configured = BTreeMap::new();
    for info in infos {
        let topic = configure_internal_topic(info, counts)?;
        if configured.insert(info.name.clone(), topic).is_some() {
            return Err(InvalidTopology::internal(format!(
                "Duplicate key {}",
                info.name
            )));
        }
    }
    Ok(configured)
}

/// Kafka's `fromPersistedTopicInfo` and `ConfiguredInternalTopic`'s checks: an explicit count
/// stands, else the decided one (not the existing topic's).
fn configure_internal_topic(
    info: &TopicInfo,
    counts: &Counts,
) -> Result<ConfiguredInternalTopic, Failure> {
    let partitions = if info.partitions == 0 {
        *counts.decided.get(&info.name).ok_or_else(|| {
            InvalidTopology::internal(format!(
                "Number of partitions must be set for topic {}",
                info.name
            ))
        })?
    } else {
        info.partitions
    };
    if let Some(reason) = invalid_topic_name(&info.name) {
        return Err(Failure::Invalid(InvalidTopology {
            kind: InvalidTopologyKind::InvalidTopic,
            message: format!("Topic name is invalid: {reason}"),
        }));
    }
    if partitions < 1 {
        return Err(InvalidTopology::internal(
            "Number of partitions must be at least 1.",
        ));
    }
    Ok(ConfiguredInternalTopic {
        name: info.name.clone(),
        partitions,
        replication_factor: info.replication_factor,
        configs: info.configs.clone(),
    })
}

/// Why Kafka's `Topic.validate` rejects a topic name, if it does.
fn invalid_topic_name(name: &str) -> Option<String> {
    if name.is_empty() {
        Some("the empty string is not allowed".into())
    } else if name == "." {
        Some("'.' is not allowed".into())
    } else if name == ".." {
        Some("'..' is not allowed".into())
    } else if name.encode_utf16().count() > 249 {
        Some(format!(
            "the length of '{name}' is longer than the max allowed length 249"
        ))
    } else if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
    {
        Some(format!(
            "'{name}' contains one or more characters other than ASCII alphanumerics, '.', '_' \
             and '-'"
        ))
    } else {
        None
    }
}

/// Kafka's `missingInternalTopics`: the internal topics that do not exist, in the order Kafka's
/// map holds them (its detail names the first three); an existing one with another partition
/// count fails.
fn missing_internal_topics(
    configured: &BTreeMap<String, ConfiguredSubtopology>,
    subs: &[Sub],
    topology: &Topology,
    topics: &dyn TopicView,
) -> Result<Vec<(String, TopicInfo)>, Failure> {
    let by_id: HashMap<&str, &crate::Subtopology> = topology
        .subtopologies
        .iter()
        .map(|s| (s.id.as_str(), s))
        .collect();
    let mut inserted: Vec<String> = Vec::new();
    let mut to_create: HashMap<String, TopicInfo> = HashMap::new();
    for (id, sub) in configured {
        let raw = by_id[id.as_str()];
        let lists = [
            (
                &raw.repartition_source_topics,
                &sub.repartition_source_topics,
            ),
            (&raw.state_changelog_topics, &sub.state_changelog_topics),
        ];
        for (infos, decided) in lists {
            for name in java_order::hash_order(infos.iter().map(|t| &t.name)) {
                let t = &decided[&name];
                inserted.push(name.clone());
                to_create.insert(
                    name,
                    TopicInfo {
                        name: t.name.clone(),
                        partitions: t.partitions,
                        replication_factor: t.replication_factor,
                        configs: t.configs.clone(),
                    },
                );
            }
        }
    }
    let required = java_order::hash_order(subs.iter().flat_map(|s| {
        let raw = by_id[s.id];
        raw.source_topics
            .iter()
            .chain(raw.repartition_source_topics.iter().map(|t| &t.name))
            .chain(raw.state_changelog_topics.iter().map(|t| &t.name))
    }));
    for topic in required {
        let Some(found) = topics.partitions(&topic) else {
            continue;
        };
        if let Some(expected) = to_create.remove(&topic) {
            if found != expected.partitions {
                return Err(status(
                    Status::IncorrectlyPartitionedTopics,
                    format!(
                        "Existing topic {topic} has different number of partitions: expected {}, \
                         found {found}",
                        expected.partitions
                    ),
                ));
            }
        }
    }
    Ok(java_order::hash_order(inserted)
        .into_iter()
        .filter_map(|name| to_create.remove(&name).map(|t| (name, t)))
        .collect())
}

/// Topic -> partitions, as StreamsGroupHeartbeat's `EndpointToPartitions` lists them.
pub type TopicPartitions = Vec<(String, Vec<i32>)>;

/// The topic partitions a member's tasks cover, as Kafka's `EndpointToPartitionsManager`
/// reports them for interactive queries: (active, standby) where the standby side is the
/// standby and the warm-up tasks together. For each subtopology of the tasks (by id), each of
/// its source and repartition source topics (by name) lists the tasks' partitions below the
/// topic's current partition count (so a topic with fewer partitions than the subtopology has
/// tasks lists only the partitions it has), and is left out when none is.
///
/// Kafka fails the heartbeat on a subtopology the configured topology lacks or a topic the
/// metadata lacks; those are skipped here.
pub fn endpoint_partitions(
    active: &TaskSet,
    standby: &TaskSet,
    warmup: &TaskSet,
    configured: &ConfiguredTopology,
    topics: &dyn TopicView,
) -> (TopicPartitions, TopicPartitions) {
    let mut standby_and_warmup = standby.clone();
    for (subtopology, partitions) in warmup {
        standby_and_warmup
            .entry(subtopology.clone())
            .or_default()
            .extend(partitions);
    }
    (
        task_partitions(active, configured, topics),
        task_partitions(&standby_and_warmup, configured, topics),
    )
}

fn task_partitions(
    tasks: &TaskSet,
    configured: &ConfiguredTopology,
    topics: &dyn TopicView,
) -> TopicPartitions {
    let mut out = Vec::new();
    for (subtopology, partitions) in tasks {
        let Some(sub) = configured.subtopology(subtopology) else {
            continue;
        };
        let inputs: BTreeSet<&String> = sub
            .source_topics
            .iter()
            .chain(sub.repartition_source_topics.keys())
            .collect();
        for topic in inputs {
            let Some(count) = topics.partitions(topic) else {
                continue;
            };
            let covered: Vec<i32> = partitions.iter().copied().filter(|&p| p < count).collect();
            if !covered.is_empty() {
                out.push((topic.clone(), covered));
            }
        }
    }
    out
}
