//! Cases from Kafka's documented behaviour and from its own tests of the classes this module
//! follows (`InternalTopicManagerTest`, `RepartitionTopicsTest`, `ChangelogTopicsTest`,
//! `CopartitionedTopicsEnforcerTest`, `EndpointToPartitionsManagerTest`), rewritten against
//! [`configure`].

use super::*;
use crate::{CopartitionGroup, Subtopology};

/// The cluster's topics.
#[derive(Default)]
struct Topics(BTreeMap<String, i32>);

impl Topics {
    fn of(list: &[(&str, i32)]) -> Self {
        Topics(list.iter().map(|(n, p)| (n.to_string(), *p)).collect())
    }

    fn with(mut self, name: &str, partitions: i32) -> Self {
        self.0.insert(name.into(), partitions);
        self
    }
}

impl TopicView for Topics {
    fn partitions(&self, name: &str) -> Option<i32> {
        self.0.get(name).copied()
    }

    fn names(&self) -> Vec<String> {
        self.0.keys().cloned().collect()
    }
}

fn info(name: &str, partitions: i32) -> TopicInfo {
    TopicInfo {
        name: name.into(),
        partitions,
        ..TopicInfo::default()
    }
}

fn strings(names: &[&str]) -> Vec<String> {
    names.iter().map(|s| s.to_string()).collect()
}

/// A subtopology: its id, external sources, repartition sources, repartition sinks and
/// changelogs.
fn sub(
    id: &str,
    sources: &[&str],
    repartition_sources: &[TopicInfo],
    sinks: &[&str],
    changelogs: &[TopicInfo],
) -> Subtopology {
    Subtopology {
        id: id.into(),
        source_topics: strings(sources),
        repartition_source_topics: repartition_sources.to_vec(),
        repartition_sink_topics: strings(sinks),
        state_changelog_topics: changelogs.to_vec(),
        ..Subtopology::default()
    }
}

fn group(sources: &[i16], repartition: &[i16]) -> CopartitionGroup {
    CopartitionGroup {
        source_topics: sources.to_vec(),
        source_topic_regex: Vec::new(),
        repartition_source_topics: repartition.to_vec(),
    }
}

fn topology(subtopologies: Vec<Subtopology>) -> Topology {
    Topology {
        epoch: 3,
        subtopologies,
    }
}

fn ok(t: &Topology, topics: &Topics) -> ConfiguredTopology {
    configure(t, topics).expect("a valid topology")
}

fn detail(c: &ConfiguredTopology) -> (Status, &str) {
    let e = c.error.as_ref().expect("a status");
    (e.status, e.detail.as_str())
}

fn partitions_of(c: &ConfiguredTopology, id: &str, topic: &str) -> i32 {
    let s = c.subtopology(id).expect("the subtopology");
    s.repartition_source_topics
        .get(topic)
        .or_else(|| s.state_changelog_topics.get(topic))
        .expect("the internal topic")
        .partitions
}

#[test]
fn a_source_to_sink_topology_is_ready_with_a_task_per_partition() {
    let t = topology(vec![sub("0", &["input"], &[], &[], &[])]);
    let c = ok(&t, &Topics::of(&[("input", 4), ("output", 1)]));
    assert!(c.is_ready());
    assert_eq!(c.epoch, 3);
    assert_eq!(c.tasks(), BTreeMap::from([("0".to_string(), 4)]));
    assert!(!c.is_stateful("0"));
    assert!(c.internal_topics_to_create.is_empty());
    let s = c.subtopology("0").unwrap();
    assert_eq!(s.source_topics, BTreeSet::from(["input".to_string()]));
}

#[test]
fn tasks_follow_the_largest_source_topic() {
    let t = topology(vec![
        sub("0", &["a", "b"], &[], &[], &[]),
        sub("1", &["c"], &[], &[], &[]),
    ]);
    let c = ok(&t, &Topics::of(&[("a", 2), ("b", 7), ("c", 1)]));
    assert_eq!(
        c.tasks(),
        BTreeMap::from([("0".to_string(), 7), ("1".to_string(), 1)])
    );
}

#[test]
fn a_missing_changelog_is_to_be_created_with_the_source_partition_count() {
    let mut changelog = info("app-store-changelog", 0);
    changelog.replication_factor = 3;
    changelog
        .configs
        .insert("cleanup.policy".into(), "compact".into());
    let t = topology(vec![sub("0", &["input"], &[], &[], &[changelog])]);
    let c = ok(&t, &Topics::of(&[("input", 4)]));
    assert!(!c.is_ready());
    assert_eq!(
        detail(&c),
        (
            Status::MissingInternalTopics,
            "Internal topics are missing: app-store-changelog"
        )
    );
    // The subtopologies are known while internal topics are missing.
    assert_eq!(c.tasks(), BTreeMap::from([("0".to_string(), 4)]));
    assert!(c.is_stateful("0"));
    assert_eq!(c.internal_topics_to_create.len(), 1);
    let create = &c.internal_topics_to_create[0];
    assert_eq!(create.name, "app-store-changelog");
    assert_eq!(create.partitions, 4);
    assert_eq!(create.replication_factor, 3);
    assert_eq!(create.configs["cleanup.policy"], "compact");
}

#[test]
fn the_changelog_once_created_makes_the_topology_ready() {
    let t = topology(vec![sub(
        "0",
        &["input"],
        &[],
        &[],
        &[info("app-store-changelog", 0)],
    )]);
    let c = ok(&t, &Topics::of(&[("input", 4), ("app-store-changelog", 4)]));
    assert!(c.is_ready(), "{:?}", c.error);
    assert!(c.internal_topics_to_create.is_empty());
    assert_eq!(partitions_of(&c, "0", "app-store-changelog"), 4);
}

#[test]
fn an_existing_changelog_with_another_count_is_incorrectly_partitioned() {
    let t = topology(vec![sub(
        "0",
        &["input"],
        &[],
        &[],
        &[info("app-store-changelog", 0)],
    )]);
    let c = ok(&t, &Topics::of(&[("input", 4), ("app-store-changelog", 3)]));
    assert_eq!(
        detail(&c),
        (
            Status::IncorrectlyPartitionedTopics,
            "Existing topic app-store-changelog has different number of partitions: expected 4, \
             found 3"
        )
    );
    assert!(c.subtopologies.is_none());
    assert!(c.tasks().is_empty());
    assert!(!c.is_stateful("0"));
    assert!(c.internal_topics_to_create.is_empty());
}

#[test]
fn an_existing_repartition_topic_with_another_count_is_incorrectly_partitioned() {
    let t = topology(vec![
        sub("0", &["input"], &[], &["app-repartition"], &[]),
        sub("1", &[], &[info("app-repartition", 0)], &[], &[]),
    ]);
    let c = ok(&t, &Topics::of(&[("input", 4), ("app-repartition", 8)]));
    assert_eq!(
        detail(&c),
        (
            Status::IncorrectlyPartitionedTopics,
            "Existing topic app-repartition has different number of partitions: expected 4, \
             found 8"
        )
    );
}

#[test]
fn repartition_counts_derive_through_two_levels() {
    // 0 reads input (3) and writes r1; 1 reads r1 and other (5) and writes r2; 2 reads r2 and
    // keeps a store.
    let t = topology(vec![
        sub("0", &["input"], &[], &["app-r1"], &[]),
        sub("1", &["other"], &[info("app-r1", 0)], &["app-r2"], &[]),
        sub(
            "2",
            &[],
            &[info("app-r2", 0)],
            &[],
            &[info("app-store-changelog", 0)],
        ),
    ]);
    let c = ok(&t, &Topics::of(&[("input", 3), ("other", 5)]));
    assert_eq!(partitions_of(&c, "1", "app-r1"), 3);
    assert_eq!(partitions_of(&c, "2", "app-r2"), 5);
    assert_eq!(partitions_of(&c, "2", "app-store-changelog"), 5);
    assert_eq!(
        c.tasks(),
        BTreeMap::from([
            ("0".to_string(), 3),
            ("1".to_string(), 5),
            ("2".to_string(), 5)
        ])
    );
    let names: Vec<&str> = c
        .internal_topics_to_create
        .iter()
        .map(|t| t.name.as_str())
        .collect();
    assert_eq!(names, ["app-r1", "app-r2", "app-store-changelog"]);
    assert_eq!(detail(&c).0, Status::MissingInternalTopics);
}

#[test]
fn repartition_counts_derive_from_a_chain_listed_backwards() {
    // The fixed point does not depend on the subtopologies being listed upstream first.
    let t = topology(vec![
        sub("2", &[], &[info("app-r2", 0)], &[], &[]),
        sub("1", &[], &[info("app-r1", 0)], &["app-r2"], &[]),
        sub("0", &["input"], &[], &["app-r1"], &[]),
    ]);
    let c = ok(&t, &Topics::of(&[("input", 6)]));
    assert_eq!(partitions_of(&c, "1", "app-r1"), 6);
    assert_eq!(partitions_of(&c, "2", "app-r2"), 6);
    assert_eq!(c.tasks()["2"], 6);
}

#[test]
fn an_explicit_repartition_count_is_kept() {
    let t = topology(vec![
        sub("0", &["input"], &[], &["app-r"], &[]),
        sub("1", &[], &[info("app-r", 7)], &[], &[info("app-c", 0)]),
    ]);
    let c = ok(&t, &Topics::of(&[("input", 3)]));
    assert_eq!(partitions_of(&c, "1", "app-r"), 7);
    assert_eq!(partitions_of(&c, "1", "app-c"), 7);
    assert_eq!(c.tasks()["1"], 7);
}

#[test]
fn a_missing_source_topic_is_named() {
    let t = topology(vec![sub("0", &["input"], &[], &[], &[])]);
    let c = ok(&t, &Topics::default());
    assert_eq!(
        detail(&c),
        (
            Status::MissingSourceTopics,
            "Source topics input are missing."
        )
    );
    assert!(c.subtopologies.is_none());
    assert!(c.tasks().is_empty());
}

#[test]
fn missing_source_topics_are_sorted_and_summarized_after_three() {
    let t = topology(vec![
        sub("0", &["d", "b"], &[], &[], &[]),
        sub("1", &["c", "a", "present"], &[], &[], &[]),
    ]);
    let c = ok(&t, &Topics::of(&[("present", 1)]));
    assert_eq!(
        detail(&c),
        (
            Status::MissingSourceTopics,
            "Source topics a, b, c and 1 additional topics are missing."
        )
    );
}

#[test]
fn missing_source_topics_come_before_anything_else() {
    // A loop in the repartition topics is not looked at while a source topic is missing.
    let t = topology(vec![
        sub("0", &["input"], &[info("app-r1", 0)], &["app-r2"], &[]),
        sub("1", &[], &[info("app-r2", 0)], &["app-r1"], &[]),
    ]);
    let c = ok(&t, &Topics::default());
    assert_eq!(detail(&c).0, Status::MissingSourceTopics);
}

#[test]
fn copartitioned_sources_with_different_counts_are_incorrectly_partitioned() {
    let mut s = sub("0", &["source-1", "source-2"], &[], &[], &[]);
    s.copartition_groups = vec![group(&[0, 1], &[])];
    let c = ok(
        &topology(vec![s]),
        &Topics::of(&[("source-1", 2), ("source-2", 1)]),
    );
    assert_eq!(
        detail(&c),
        (
            Status::IncorrectlyPartitionedTopics,
            "Following topics do not have the same number of partitions: \
             [{source-1=2, source-2=1}]"
        )
    );
    assert!(c.subtopologies.is_none());
}

#[test]
fn copartitioned_sources_that_agree_are_fine() {
    let mut s = sub("0", &["source-1", "source-2"], &[], &[], &[]);
    s.copartition_groups = vec![group(&[0, 1], &[])];
    let c = ok(
        &topology(vec![s]),
        &Topics::of(&[("source-1", 2), ("source-2", 2)]),
    );
    assert!(c.is_ready());
}

/// 0 reads `x` (2) and writes `app-r`; 1 joins `t` (6) with `app-r`, copartitioned.
fn join_topology(repartition_count: i32) -> Topology {
    let mut join = sub("1", &["t"], &[info("app-r", repartition_count)], &[], &[]);
    join.copartition_groups = vec![group(&[0], &[0])];
    topology(vec![sub("0", &["x"], &[], &["app-r"], &[]), join])
}

#[test]
fn a_copartitioned_repartition_topic_takes_the_source_count() {
    let c = ok(&join_topology(0), &Topics::of(&[("x", 2), ("t", 6)]));
    // Derived from x it would have 2; the group gives it t's 6.
    assert_eq!(partitions_of(&c, "1", "app-r"), 6);
    assert_eq!(c.tasks()["1"], 6);
    assert_eq!(c.internal_topics_to_create[0].partitions, 6);
}

#[test]
fn a_fixed_repartition_count_that_disagrees_with_the_group_is_incorrectly_partitioned() {
    let c = ok(&join_topology(4), &Topics::of(&[("x", 2), ("t", 6)]));
    assert_eq!(
        detail(&c),
        (
            Status::IncorrectlyPartitionedTopics,
            "Number of partitions [4] of repartition topic [app-r] doesn't match number of \
             partitions [6] of the source topic."
        )
    );
}

#[test]
fn a_fixed_repartition_count_that_agrees_with_the_group_stands() {
    let c = ok(&join_topology(6), &Topics::of(&[("x", 2), ("t", 6)]));
    assert_eq!(partitions_of(&c, "1", "app-r"), 6);
}

#[test]
fn a_group_of_repartition_topics_takes_their_largest_count() {
    let mut join = sub(
        "2",
        &[],
        &[info("app-r1", 0), info("app-r2", 0)],
        &[],
        &[info("app-c", 0)],
    );
    join.copartition_groups = vec![group(&[], &[0, 1])];
    let t = topology(vec![
        sub("0", &["a"], &[], &["app-r1"], &[]),
        sub("1", &["b"], &[], &["app-r2"], &[]),
        join,
    ]);
    let c = ok(&t, &Topics::of(&[("a", 2), ("b", 5)]));
    assert_eq!(partitions_of(&c, "2", "app-r1"), 5);
    assert_eq!(partitions_of(&c, "2", "app-r2"), 5);
    assert_eq!(partitions_of(&c, "2", "app-c"), 5);
    assert_eq!(c.tasks()["2"], 5);
}

#[test]
fn a_group_of_fixed_repartition_topics_must_agree() {
    let mut join = sub("2", &[], &[info("app-r1", 10), info("app-r2", 5)], &[], &[]);
    join.copartition_groups = vec![group(&[], &[0, 1])];
    let t = topology(vec![
        sub("0", &["a"], &[], &["app-r1"], &[]),
        sub("1", &["b"], &[], &["app-r2"], &[]),
        join,
    ]);
    let c = ok(&t, &Topics::of(&[("a", 2), ("b", 5)]));
    assert_eq!(
        detail(&c),
        (
            Status::IncorrectlyPartitionedTopics,
            "Following topics do not have the same number of partitions: \
             [{app-r1=10, app-r2=5}]"
        )
    );
}

#[test]
fn a_fixed_count_decides_for_the_flexible_topics_of_its_group() {
    let mut join = sub(
        "2",
        &[],
        &[info("app-r1", 2), info("app-r2", 0), info("app-r3", 2)],
        &[],
        &[],
    );
    join.copartition_groups = vec![group(&[], &[0, 1, 2])];
    let t = topology(vec![
        sub("0", &["a"], &[], &["app-r1", "app-r3"], &[]),
        sub("1", &["b"], &[], &["app-r2"], &[]),
        join,
    ]);
    let c = ok(&t, &Topics::of(&[("a", 1), ("b", 5)]));
    for r in ["app-r1", "app-r2", "app-r3"] {
        assert_eq!(partitions_of(&c, "2", r), 2, "{r}");
    }
}

#[test]
fn a_fixed_count_elsewhere_in_the_topology_decides_for_a_flexible_group() {
    // Kafka 4.4 validates a group of repartition topics against every repartition topic with a
    // fixed count in the topology, not only the group's.
    let mut join = sub("2", &[], &[info("app-r1", 0), info("app-r2", 0)], &[], &[]);
    join.copartition_groups = vec![group(&[], &[0, 1])];
    let t = topology(vec![
        sub("0", &["a"], &[], &["app-r1", "app-fixed"], &[]),
        sub("1", &["b"], &[], &["app-r2"], &[]),
        join,
        sub("3", &[], &[info("app-fixed", 3)], &[], &[]),
    ]);
    let c = ok(&t, &Topics::of(&[("a", 2), ("b", 5)]));
    assert_eq!(partitions_of(&c, "2", "app-r1"), 3);
    assert_eq!(partitions_of(&c, "2", "app-r2"), 3);
}

#[test]
fn a_source_topic_regex_resolves_to_the_matching_topics() {
    let mut s = sub("0", &[], &[], &[], &[info("app-c", 0)]);
    s.source_topic_regex = strings(&["orders-.*"]);
    let topics = Topics::of(&[("orders-eu", 2), ("orders-us", 3), ("all-orders-x", 9)]);
    let c = ok(&topology(vec![s]), &topics);
    let sub0 = c.subtopology("0").unwrap();
    assert_eq!(
        sub0.source_topics,
        BTreeSet::from(["orders-eu".to_string(), "orders-us".to_string()])
    );
    assert_eq!(sub0.number_of_tasks, 3);
    assert_eq!(partitions_of(&c, "0", "app-c"), 3);
}

#[test]
fn a_source_topic_regex_that_matches_nothing_is_a_missing_source() {
    let mut s = sub("0", &[], &[], &[], &[]);
    s.source_topic_regex = strings(&["orders-.*"]);
    let c = ok(&topology(vec![s]), &Topics::of(&[("payments", 1)]));
    assert_eq!(
        detail(&c),
        (
            Status::MissingSourceTopics,
            "Source topic regexes orders-.* match no topics."
        )
    );
}

#[test]
fn a_source_topic_regex_does_not_match_internal_topics() {
    let mut s = sub("0", &[], &[], &[], &[info("app-c", 0)]);
    s.source_topic_regex = strings(&[".*"]);
    let topics = Topics::of(&[("in", 2), ("__consumer_offsets", 50), ("app-c", 2)]);
    let c = ok(&topology(vec![s]), &topics);
    assert!(c.is_ready(), "{:?}", c.error);
    let sub0 = c.subtopology("0").unwrap();
    assert_eq!(sub0.source_topics, BTreeSet::from(["in".to_string()]));
}

#[test]
fn a_regex_copartition_group_covers_the_matched_topics() {
    let mut s = sub("0", &["left"], &[], &[], &[]);
    s.source_topic_regex = strings(&["right-.*"]);
    s.copartition_groups = vec![CopartitionGroup {
        source_topics: vec![0],
        source_topic_regex: vec![0],
        repartition_source_topics: vec![],
    }];
    let c = ok(
        &topology(vec![s]),
        &Topics::of(&[("left", 2), ("right-1", 2), ("right-2", 3)]),
    );
    assert_eq!(
        detail(&c),
        (
            Status::IncorrectlyPartitionedTopics,
            "Following topics do not have the same number of partitions: \
             [{left=2, right-1=2, right-2=3}]"
        )
    );
}

#[test]
fn an_invalid_regex_is_an_invalid_topology() {
    let mut s = sub("0", &[], &[], &[], &[]);
    s.source_topic_regex = strings(&["("]);
    let err = configure(&topology(vec![s]), &Topics::of(&[("a", 1)])).unwrap_err();
    assert_eq!(err.kind, InvalidTopologyKind::InvalidTopology);
    assert_eq!(err.error_code(), 130);
}

#[test]
fn more_than_three_missing_internal_topics_are_summarized_in_javas_order() {
    let t = topology(vec![sub(
        "0",
        &["input"],
        &[],
        &[],
        &[
            info("app-a-changelog", 0),
            info("app-b-changelog", 0),
            info("app-c-changelog", 0),
            info("app-d-changelog", 0),
        ],
    )]);
    let c = ok(&t, &Topics::of(&[("input", 1)]));
    // The order of Kafka's HashMap of the four names (checked with Java 17).
    assert_eq!(
        detail(&c),
        (
            Status::MissingInternalTopics,
            "Internal topics are missing: app-b-changelog, app-a-changelog, app-d-changelog \
             and 1 additional topics"
        )
    );
    assert_eq!(c.internal_topics_to_create.len(), 4);
}

#[test]
fn internal_topics_that_exist_are_not_to_be_created() {
    let t = topology(vec![
        sub("0", &["input"], &[], &["app-r"], &[info("app-c0", 0)]),
        sub("1", &[], &[info("app-r", 0)], &[], &[info("app-c1", 0)]),
    ]);
    let c = ok(&t, &Topics::of(&[("input", 2), ("app-r", 2)]));
    let names: Vec<&str> = c
        .internal_topics_to_create
        .iter()
        .map(|t| t.name.as_str())
        .collect();
    assert_eq!(names, ["app-c0", "app-c1"]);
    // Java's HashMap order.
    assert_eq!(detail(&c).1, "Internal topics are missing: app-c1, app-c0");
}

#[test]
fn a_repartition_loop_is_an_invalid_topology() {
    let t = topology(vec![
        sub("0", &[], &[info("app-r1", 0)], &["app-r2"], &[]),
        sub("1", &[], &[info("app-r2", 0)], &["app-r1"], &[]),
    ]);
    let err = configure(&t, &Topics::default()).unwrap_err();
    assert_eq!(err.kind, InvalidTopologyKind::InvalidTopology);
    assert_eq!(
        err.message,
        "Failed to compute number of partitions for all repartition topics. There may be loops \
         in the topology that cannot be resolved."
    );
}

#[test]
fn a_repartition_source_nobody_writes_is_an_invalid_topology() {
    let t = topology(vec![sub("0", &["input"], &[info("app-r", 0)], &[], &[])]);
    let err = configure(&t, &Topics::of(&[("input", 1)])).unwrap_err();
    assert_eq!(
        err.message,
        "Failed to compute number of partitions for all repartition topics, because a \
         repartition source topic is never used as a sink topic."
    );
}

#[test]
fn a_subtopology_without_source_topics_is_an_invalid_topology() {
    let t = topology(vec![sub("7", &[], &[], &[], &[])]);
    let err = configure(&t, &Topics::default()).unwrap_err();
    assert_eq!(err.kind, InvalidTopologyKind::InvalidTopology);
    assert_eq!(err.message, "No source topics found for subtopology 7");
}

#[test]
fn an_invalid_internal_topic_name_is_an_invalid_topic() {
    let t = topology(vec![sub(
        "0",
        &["input"],
        &[],
        &[],
        &[info("app store", 0)],
    )]);
    let err = configure(&t, &Topics::of(&[("input", 1)])).unwrap_err();
    assert_eq!(err.kind, InvalidTopologyKind::InvalidTopic);
    assert_eq!(err.error_code(), 17);
    assert_eq!(err.heartbeat_message(), Some(err.message.as_str()));
    assert_eq!(
        err.message,
        "Topic name is invalid: 'app store' contains one or more characters other than ASCII \
         alphanumerics, '.', '_' and '-'"
    );
}

#[test]
fn a_negative_explicit_count_is_rejected() {
    let t = topology(vec![
        sub("0", &["input"], &[], &["app-r"], &[]),
        sub("1", &[], &[info("app-r", -1)], &[], &[]),
    ]);
    let err = configure(&t, &Topics::of(&[("input", 1)])).unwrap_err();
    assert_eq!(err.kind, InvalidTopologyKind::Internal);
}

#[test]
fn a_copartition_index_out_of_range_fails_before_the_source_check() {
    let mut s = sub("0", &["input"], &[], &[], &[]);
    s.copartition_groups = vec![group(&[0, 1], &[])];
    let err = configure(&topology(vec![s]), &Topics::default()).unwrap_err();
    assert_eq!(err.kind, InvalidTopologyKind::Internal);
    assert_eq!(err.message, "Index 1 out of bounds for length 1");
    assert_eq!(err.error_code(), -1);
    assert_eq!(err.heartbeat_message(), None);
}

#[test]
fn a_negative_epoch_is_rejected() {
    let mut t = topology(vec![sub("0", &["input"], &[], &[], &[])]);
    t.epoch = -1;
    assert!(configure(&t, &Topics::of(&[("input", 1)])).is_err());
}

#[test]
fn required_topics_cover_sources_internal_topics_and_regex_matches() {
    let mut s = sub("0", &["a"], &[], &["app-r"], &[info("app-c", 0)]);
    s.source_topic_regex = strings(&["b.*"]);
    let t = topology(vec![s, sub("1", &[], &[info("app-r", 0)], &[], &[])]);
    let topics = Topics::of(&[("a", 1), ("b1", 1), ("b2", 1), ("c", 1)]);
    let required: Vec<String> = required_topics(&t, &topics).into_iter().collect();
    assert_eq!(required, ["a", "app-c", "app-r", "b1", "b2"]);
}

fn tasks(list: &[(&str, &[i32])]) -> TaskSet {
    list.iter()
        .map(|(s, ps)| (s.to_string(), ps.iter().copied().collect()))
        .collect()
}

#[test]
fn endpoint_partitions_cover_source_and_repartition_topics() {
    let t = topology(vec![
        sub("0", &["input"], &[], &["app-r"], &[]),
        sub("1", &["table"], &[info("app-r", 0)], &[], &[]),
    ]);
    let topics = Topics::of(&[("input", 4), ("table", 4), ("app-r", 4)]);
    let c = ok(&t, &topics);
    assert!(c.is_ready());
    let (active, standby) = endpoint_partitions(
        &tasks(&[("0", &[0, 2]), ("1", &[1])]),
        &tasks(&[("1", &[3])]),
        &tasks(&[("1", &[0]), ("0", &[1])]),
        &c,
        &topics,
    );
    assert_eq!(
        active,
        vec![
            ("input".to_string(), vec![0, 2]),
            ("app-r".to_string(), vec![1]),
            ("table".to_string(), vec![1]),
        ]
    );
    // Standby and warm-up tasks together.
    assert_eq!(
        standby,
        vec![
            ("input".to_string(), vec![1]),
            ("app-r".to_string(), vec![0, 3]),
            ("table".to_string(), vec![0, 3]),
        ]
    );
}

#[test]
fn endpoint_partitions_skip_partitions_a_smaller_topic_lacks() {
    let t = topology(vec![sub("0", &["big", "small"], &[], &[], &[])]);
    let topics = Topics::of(&[("big", 4), ("small", 2)]);
    let c = ok(&t, &topics);
    assert_eq!(c.tasks()["0"], 4);
    let (active, standby) = endpoint_partitions(
        &tasks(&[("0", &[1, 3])]),
        &tasks(&[("0", &[2])]),
        &TaskSet::new(),
        &c,
        &topics,
    );
    assert_eq!(
        active,
        vec![
            ("big".to_string(), vec![1, 3]),
            ("small".to_string(), vec![1])
        ]
    );
    // No partition of `small` is left: the topic is not listed.
    assert_eq!(standby, vec![("big".to_string(), vec![2])]);
}

#[test]
fn endpoint_partitions_of_an_unconfigured_topology_are_empty() {
    let t = topology(vec![sub("0", &["input"], &[], &[], &[])]);
    let c = ok(&t, &Topics::default());
    let (active, standby) = endpoint_partitions(
        &tasks(&[("0", &[0])]),
        &TaskSet::new(),
        &TaskSet::new(),
        &c,
        &Topics::default(),
    );
    assert!(active.is_empty() && standby.is_empty());
}

#[test]
fn configuration_is_deterministic_under_topic_changes() {
    // Adding a topic that is not part of the topology changes nothing.
    let t = join_topology(0);
    let before = ok(&t, &Topics::of(&[("x", 2), ("t", 6)]));
    let after = ok(&t, &Topics::of(&[("x", 2), ("t", 6)]).with("unrelated", 9));
    assert_eq!(before, after);
}
