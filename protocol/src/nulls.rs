//! Null where Kafka sends null. `kafka-protocol`'s `Default` gives many nullable response
//! strings the value `Some("")` (as Kafka's generated Java does), while Kafka's handlers send
//! null there: an error message on success (`ApiError.NONE.message()` is null), a rack that is
//! not set, the instance id of a dynamic member, documentation that was not asked for. A
//! strict client sees `""` and null as different answers. [`null_where_kafka_does`] runs on
//! every response before it is encoded, so no handler has to remember it and a new one cannot
//! bring the empty strings back; `broker/tests/every_version_answers.rs` decodes every
//! advertised version's answer and fails on an empty string in such a field.
//!
//! The match is written from Kafka's response schemas: every nullable string field of these
//! kinds (error messages, racks, instance ids, documentation, subscribed regexes, except
//! ConsumerGroupDescribe's, where Kafka sends "" for a member without one). An empty
//! string there never carries information: Kafka refuses an empty `group.instance.id` and an
//! empty rack, and an empty error message says nothing.

use kafka_protocol::messages::ResponseKind;
use kafka_protocol::protocol::StrBytes;

fn null_if_empty(field: &mut Option<StrBytes>) {
    if field.as_ref().is_some_and(|s| s.is_empty()) {
        *field = None;
    }
}

/// Turns `Some("")` into `None` in every field of `response` (to be encoded at `version`)
/// where Kafka sends null.
pub fn null_where_kafka_does(response: &mut ResponseKind, version: i16) {
    match response {
        ResponseKind::AddRaftVoter(r) => {
            null_if_empty(&mut r.error_message);
        }
        ResponseKind::AlterClientQuotas(r) => {
            for a in &mut r.entries {
                null_if_empty(&mut a.error_message);
            }
        }
        ResponseKind::AlterConfigs(r) => {
            for a in &mut r.responses {
                null_if_empty(&mut a.error_message);
            }
        }
        ResponseKind::AlterPartitionReassignments(r) => {
            null_if_empty(&mut r.error_message);
            for a in &mut r.responses {
                for b in &mut a.partitions {
                    null_if_empty(&mut b.error_message);
                }
            }
        }
        ResponseKind::AlterUserScramCredentials(r) => {
            for a in &mut r.results {
                null_if_empty(&mut a.error_message);
            }
        }
        ResponseKind::ConsumerGroupDescribe(r) => {
            for a in &mut r.groups {
                null_if_empty(&mut a.error_message);
                for b in &mut a.members {
                    null_if_empty(&mut b.instance_id);
                    null_if_empty(&mut b.rack_id);
                    // A member without a regex: Kafka 4.4 sends "" here, not null.
                }
            }
        }
        ResponseKind::ConsumerGroupHeartbeat(r) => {
            null_if_empty(&mut r.error_message);
        }
        ResponseKind::ControllerRegistration(r) => {
            null_if_empty(&mut r.error_message);
        }
        ResponseKind::CreateAcls(r) => {
            for a in &mut r.results {
                null_if_empty(&mut a.error_message);
            }
        }
        ResponseKind::CreatePartitions(r) => {
            for a in &mut r.results {
                null_if_empty(&mut a.error_message);
            }
        }
        ResponseKind::CreateTopics(r) => {
            for a in &mut r.topics {
                null_if_empty(&mut a.error_message);
            }
        }
        ResponseKind::DeleteAcls(r) => {
            for a in &mut r.filter_results {
                null_if_empty(&mut a.error_message);
                for b in &mut a.matching_acls {
                    null_if_empty(&mut b.error_message);
                }
            }
        }
        ResponseKind::DeleteShareGroupState(r) => {
            for a in &mut r.results {
                for b in &mut a.partitions {
                    null_if_empty(&mut b.error_message);
                }
            }
        }
        ResponseKind::DeleteTopics(r) => {
            for a in &mut r.responses {
                null_if_empty(&mut a.error_message);
            }
        }
        ResponseKind::DescribeAcls(r) => {
            null_if_empty(&mut r.error_message);
        }
        // DescribeClientQuotas: Kafka answers a success with "" (the schema default), kept.
        ResponseKind::DescribeCluster(r) => {
            null_if_empty(&mut r.error_message);
            for a in &mut r.brokers {
                null_if_empty(&mut a.rack);
            }
        }
        // DescribeConfigs: Kafka 4.4 sends "" as the error message of every result that
        // succeeded (and of an unknown topic), and "" as a logger's documentation; Samsa's
        // handler leaves documentation null unless asked for.
        ResponseKind::DescribeConfigs(_) => {}
        ResponseKind::DescribeGroups(r) => {
            for a in &mut r.groups {
                for b in &mut a.members {
                    null_if_empty(&mut b.group_instance_id);
                }
            }
        }
        ResponseKind::DescribeProducers(r) => {
            for a in &mut r.topics {
                for b in &mut a.partitions {
                    null_if_empty(&mut b.error_message);
                }
            }
        }
        // DescribeQuorum and DescribeUserScramCredentials: Kafka 4.4 sends "" where nothing
        // went wrong (its schema default), as the differential run shows.
        ResponseKind::ElectLeaders(r) => {
            for a in &mut r.replica_election_results {
                for b in &mut a.partition_result {
                    null_if_empty(&mut b.error_message);
                }
            }
        }
        ResponseKind::Fetch(r) => {
            for a in &mut r.node_endpoints {
                null_if_empty(&mut a.rack);
            }
        }
        // Kafka's batched answer (v4+) carries "" for a coordinator it found, as the
        // differential run against Kafka 4.4 shows; v1-3 say "NONE".
        ResponseKind::FindCoordinator(r) => {
            null_if_empty(&mut r.error_message);
        }
        ResponseKind::IncrementalAlterConfigs(r) => {
            for a in &mut r.responses {
                null_if_empty(&mut a.error_message);
            }
        }
        ResponseKind::InitializeShareGroupState(r) => {
            for a in &mut r.results {
                for b in &mut a.partitions {
                    null_if_empty(&mut b.error_message);
                }
            }
        }
        ResponseKind::JoinGroup(r) => {
            // Nullable from v7, where Kafka's JoinGroupResponse turns "" into null (and before
            // it, null into "").
            if version >= 7 {
                null_if_empty(&mut r.protocol_type);
                null_if_empty(&mut r.protocol_name);
            }
            for a in &mut r.members {
                null_if_empty(&mut a.group_instance_id);
            }
        }
        ResponseKind::SyncGroup(r) => {
            // From v5, the group's protocol, null where it has none.
            null_if_empty(&mut r.protocol_type);
            null_if_empty(&mut r.protocol_name);
        }
        ResponseKind::LeaveGroup(r) => {
            for a in &mut r.members {
                null_if_empty(&mut a.group_instance_id);
            }
        }
        ResponseKind::ListPartitionReassignments(r) => {
            null_if_empty(&mut r.error_message);
        }
        ResponseKind::Metadata(r) => {
            for a in &mut r.brokers {
                null_if_empty(&mut a.rack);
            }
        }
        ResponseKind::Produce(r) => {
            for a in &mut r.responses {
                for b in &mut a.partition_responses {
                    for c in &mut b.record_errors {
                        null_if_empty(&mut c.batch_index_error_message);
                    }
                    null_if_empty(&mut b.error_message);
                }
            }
            for a in &mut r.node_endpoints {
                null_if_empty(&mut a.rack);
            }
        }
        ResponseKind::ReadShareGroupState(r) => {
            for a in &mut r.results {
                for b in &mut a.partitions {
                    null_if_empty(&mut b.error_message);
                }
            }
        }
        ResponseKind::ReadShareGroupStateSummary(r) => {
            for a in &mut r.results {
                for b in &mut a.partitions {
                    null_if_empty(&mut b.error_message);
                }
            }
        }
        ResponseKind::RemoveRaftVoter(r) => {
            null_if_empty(&mut r.error_message);
        }
        ResponseKind::SaslAuthenticate(r) => {
            null_if_empty(&mut r.error_message);
        }
        ResponseKind::ShareAcknowledge(r) => {
            null_if_empty(&mut r.error_message);
            for a in &mut r.responses {
                for b in &mut a.partitions {
                    null_if_empty(&mut b.error_message);
                }
            }
            for a in &mut r.node_endpoints {
                null_if_empty(&mut a.rack);
            }
        }
        ResponseKind::ShareFetch(r) => {
            null_if_empty(&mut r.error_message);
            for a in &mut r.responses {
                for b in &mut a.partitions {
                    null_if_empty(&mut b.error_message);
                    null_if_empty(&mut b.acknowledge_error_message);
                }
            }
            for a in &mut r.node_endpoints {
                null_if_empty(&mut a.rack);
            }
        }
        ResponseKind::ShareGroupDescribe(r) => {
            for a in &mut r.groups {
                null_if_empty(&mut a.error_message);
                for b in &mut a.members {
                    null_if_empty(&mut b.rack_id);
                }
            }
        }
        ResponseKind::ShareGroupHeartbeat(r) => {
            null_if_empty(&mut r.error_message);
        }
        ResponseKind::UnregisterBroker(r) => {
            null_if_empty(&mut r.error_message);
        }
        ResponseKind::UpdateFeatures(r) => {
            null_if_empty(&mut r.error_message);
            for a in &mut r.results {
                null_if_empty(&mut a.error_message);
            }
        }
        ResponseKind::WriteShareGroupState(r) => {
            for a in &mut r.results {
                for b in &mut a.partitions {
                    null_if_empty(&mut b.error_message);
                }
            }
        }
        // The rest have no such field.
        _ => {}
    }
}
