//! The APIs Samsa serves, with their version ranges: ApiVersions answers from this table and
//! the request decoder refuses anything outside it. Only APIs that really have a handler may
//! be listed (librdkafka and the Java client choose features from what is advertised).
//!
//! The baseline follows Kafka 4.x (KIP-896): message format v2 only, old versions removed.

use kafka_protocol::messages::api_versions_response::ApiVersion;
use kafka_protocol::messages::ApiKey;

/// One served API: its key and the inclusive version range advertised in ApiVersions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ApiRange {
    pub key: ApiKey,
    pub min_version: i16,
    pub max_version: i16,
}

const fn api(key: ApiKey, min_version: i16, max_version: i16) -> ApiRange {
    ApiRange {
        key,
        min_version,
        max_version,
    }
}

/// Every API the broker answers, in api-key order.
///
/// Produce is advertised from version 0 although v0-2 are refused with UNSUPPORTED_VERSION:
/// Kafka 4 does the same (KAFKA-18659) because librdkafka disables compression when the
/// advertised minimum is above 0.
pub const SUPPORTED_APIS: &[ApiRange] = &[
    api(ApiKey::Produce, 0, 13),
    api(ApiKey::Fetch, 4, 18),
    api(ApiKey::ListOffsets, 1, 11),
    api(ApiKey::Metadata, 0, 13),
    // v10 names topics by id; kafka-protocol 0.18 reads these requests up to v9 only, the rest
    // is translated (crate::newer), as for every version below marked so.
    api(ApiKey::OffsetCommit, 2, 10),
    api(ApiKey::OffsetFetch, 1, 10),
    api(ApiKey::FindCoordinator, 0, 6),
    api(ApiKey::JoinGroup, 0, 9),
    api(ApiKey::Heartbeat, 0, 4),
    api(ApiKey::LeaveGroup, 0, 5),
    api(ApiKey::SyncGroup, 0, 5),
    api(ApiKey::DescribeGroups, 0, 6),
    api(ApiKey::ListGroups, 0, 5),
    // SASL (KIP-43, KIP-152): on every listener, as Kafka advertises them; a listener without
    // SASL answers ILLEGAL_SASL_STATE.
    api(ApiKey::SaslHandshake, 0, 1),
    api(ApiKey::ApiVersions, 0, 5),
    api(ApiKey::CreateTopics, 2, 7),
    api(ApiKey::DeleteTopics, 1, 6),
    api(ApiKey::DeleteRecords, 0, 2),
    api(ApiKey::InitProducerId, 0, 5),
    api(ApiKey::OffsetForLeaderEpoch, 2, 4),
    api(ApiKey::AddPartitionsToTxn, 0, 5),
    api(ApiKey::AddOffsetsToTxn, 0, 4),
    api(ApiKey::EndTxn, 0, 5),
    api(ApiKey::WriteTxnMarkers, 1, 2),
    api(ApiKey::TxnOffsetCommit, 0, 6),
    // KIP-140 ACL APIs, from Kafka 4's baseline (v0 removed by KIP-896).
    api(ApiKey::DescribeAcls, 1, 3),
    api(ApiKey::CreateAcls, 1, 3),
    api(ApiKey::DeleteAcls, 1, 3),
    api(ApiKey::DescribeConfigs, 1, 4),
    api(ApiKey::AlterConfigs, 0, 2),
    api(ApiKey::AlterReplicaLogDirs, 1, 2),
    api(ApiKey::DescribeLogDirs, 1, 5),
    api(ApiKey::SaslAuthenticate, 0, 2),
    api(ApiKey::CreatePartitions, 0, 3),
    // KIP-48 delegation tokens, at Kafka 4's versions: Samsa issues none and answers as Kafka
    // without `delegation.token.secret.key` does (DELEGATION_TOKEN_AUTH_DISABLED, or the
    // requester refused), so that clients learn the feature is off.
    api(ApiKey::CreateDelegationToken, 1, 3),
    api(ApiKey::RenewDelegationToken, 1, 2),
    api(ApiKey::ExpireDelegationToken, 1, 2),
    api(ApiKey::DescribeDelegationToken, 1, 3),
    api(ApiKey::DeleteGroups, 0, 3),
    api(ApiKey::ElectLeaders, 0, 2),
    api(ApiKey::IncrementalAlterConfigs, 0, 1),
    api(ApiKey::AlterPartitionReassignments, 0, 1),
    api(ApiKey::ListPartitionReassignments, 0, 0),
    api(ApiKey::OffsetDelete, 0, 0),
    // KIP-546 client quotas: described from the image, altered through the active controller.
    api(ApiKey::DescribeClientQuotas, 0, 1),
    api(ApiKey::AlterClientQuotas, 0, 1),
    // KIP-554 SCRAM credential administration.
    api(ApiKey::DescribeUserScramCredentials, 0, 0),
    api(ApiKey::AlterUserScramCredentials, 0, 0),
    // The metadata quorum: a single node is its only voter (KIP-595, KIP-836, KIP-853).
    api(ApiKey::DescribeQuorum, 0, 2),
    // KIP-584 feature levels, decided by the active controller.
    api(ApiKey::UpdateFeatures, 0, 2),
    api(ApiKey::DescribeCluster, 0, 2),
    api(ApiKey::DescribeProducers, 0, 0),
    // Forwarded to the active controller (`kafka-cluster.sh unregister`).
    api(ApiKey::UnregisterBroker, 0, 0),
    api(ApiKey::DescribeTransactions, 0, 0),
    api(ApiKey::ListTransactions, 0, 2),
    // KIP-848 consumer groups (advertised always, as Kafka 4.4 does; they answer
    // UNSUPPORTED_VERSION while `group.version` is below 1).
    api(ApiKey::ConsumerGroupHeartbeat, 0, 1),
    api(ApiKey::ConsumerGroupDescribe, 0, 1),
    api(ApiKey::ListConfigResources, 0, 1),
    api(ApiKey::DescribeTopicPartitions, 0, 0),
    // KIP-932 share groups, at the versions Kafka 4.1+ and librdkafka send (advertised always, as
    // Kafka 4.4 does; they answer UNSUPPORTED_VERSION while `share.version` is below 1);
    // ShareFetch and ShareAcknowledge 2 (KIP-1206, KIP-1222) are translated.
    api(ApiKey::ShareGroupHeartbeat, 1, 1),
    api(ApiKey::ShareGroupDescribe, 1, 1),
    api(ApiKey::ShareFetch, 1, 2),
    api(ApiKey::ShareAcknowledge, 1, 2),
    // KIP-853: voters of a dynamic metadata quorum, sent on to its leader.
    api(ApiKey::AddRaftVoter, 0, 1),
    api(ApiKey::RemoveRaftVoter, 0, 0),
    // KIP-932's share coordinator, between brokers.
    api(ApiKey::ReadShareGroupState, 0, 0),
    api(ApiKey::WriteShareGroupState, 0, 1),
    api(ApiKey::DeleteShareGroupState, 0, 0),
    // KIP-932 share-group administration (as the share-group APIs above).
    api(ApiKey::DescribeShareGroupOffsets, 0, 1),
    api(ApiKey::AlterShareGroupOffsets, 0, 0),
    api(ApiKey::DeleteShareGroupOffsets, 0, 0),
];

/// What a controller listener (`controller.listener.names`) answers, in api-key order: the
/// KRaft RPCs between controllers, DescribeQuorum, brokers' registrations, heartbeats and
/// producer-id blocks, the admin APIs brokers forward (topics, configs, ACLs, SCRAM
/// credentials, features, leader elections, reassignments, UnregisterBroker), what Kafka's
/// tools given `--bootstrap-controller` ask (KIP-919: DescribeCluster, DescribeConfigs,
/// ApiVersions with features), and the delegation-token APIs, refused as Kafka's controllers
/// refuse them without a secret key. Kafka's controllers serve more admin APIs; each is listed
/// here only once it has a handler on that listener.
pub const CONTROLLER_APIS: &[ApiRange] = &[
    api(ApiKey::Fetch, 4, 18),
    api(ApiKey::ApiVersions, 0, 5),
    api(ApiKey::CreateTopics, 2, 7),
    api(ApiKey::DeleteTopics, 1, 6),
    api(ApiKey::CreateAcls, 1, 3),
    api(ApiKey::DeleteAcls, 1, 3),
    api(ApiKey::DescribeConfigs, 1, 4),
    api(ApiKey::AlterConfigs, 0, 2),
    api(ApiKey::CreatePartitions, 0, 3),
    // Kafka's controllers advertise the four token APIs too (and answer DescribeDelegationToken
    // with UNKNOWN_SERVER_ERROR, having no handler for it).
    api(ApiKey::CreateDelegationToken, 1, 3),
    api(ApiKey::RenewDelegationToken, 1, 2),
    api(ApiKey::ExpireDelegationToken, 1, 2),
    api(ApiKey::DescribeDelegationToken, 1, 3),
    api(ApiKey::ElectLeaders, 0, 2),
    api(ApiKey::IncrementalAlterConfigs, 0, 1),
    api(ApiKey::AlterPartitionReassignments, 0, 1),
    api(ApiKey::AlterClientQuotas, 0, 1),
    api(ApiKey::AlterUserScramCredentials, 0, 0),
    api(ApiKey::Vote, 0, 2),
    api(ApiKey::BeginQuorumEpoch, 0, 1),
    api(ApiKey::EndQuorumEpoch, 0, 1),
    api(ApiKey::DescribeQuorum, 0, 2),
    api(ApiKey::AlterPartition, 2, 3),
    api(ApiKey::UpdateFeatures, 0, 2),
    api(ApiKey::FetchSnapshot, 0, 1),
    api(ApiKey::DescribeCluster, 0, 2),
    api(ApiKey::BrokerRegistration, 0, 4),
    api(ApiKey::BrokerHeartbeat, 0, 2),
    api(ApiKey::UnregisterBroker, 0, 0),
    api(ApiKey::AllocateProducerIds, 0, 0),
    api(ApiKey::AddRaftVoter, 0, 1),
    api(ApiKey::RemoveRaftVoter, 0, 0),
];

/// What a controller listener with SASL answers besides [`CONTROLLER_APIS`]: the exchange, in
/// its framed form only (SaslHandshake v1; nodes and Kafka's tools never send v0's raw tokens
/// to a controller).
pub const CONTROLLER_SASL_APIS: &[ApiRange] = &[
    api(ApiKey::SaslHandshake, 1, 1),
    api(ApiKey::SaslAuthenticate, 0, 2),
];

/// Versions of Produce that are advertised but refused (see [`SUPPORTED_APIS`]).
pub const PRODUCE_REFUSED_BELOW: i16 = 3;

/// The advertised range for `key`, if the broker serves it.
pub fn supported_range(key: ApiKey) -> Option<ApiRange> {
    SUPPORTED_APIS.iter().copied().find(|a| a.key == key)
}

/// A table as the `api_keys` of an ApiVersions response.
pub fn api_versions(table: &[ApiRange]) -> Vec<ApiVersion> {
    table
        .iter()
        .map(|a| {
            let mut v = ApiVersion::default();
            v.api_key = a.key as i16;
            v.min_version = a.min_version;
            v.max_version = a.max_version;
            v
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_advertised_version_is_one_the_codec_can_decode() {
        for a in SUPPORTED_APIS.iter().chain(CONTROLLER_APIS) {
            let codec = a.key.valid_versions();
            let min = if a.key == ApiKey::Produce {
                PRODUCE_REFUSED_BELOW
            } else {
                a.min_version
            };
            assert!(
                codec.min <= min && a.max_version <= crate::newer::max_version(a.key),
                "{:?} {a:?} vs codec {codec:?}",
                a.key
            );
            assert!(a.min_version <= a.max_version);
        }
    }

    #[test]
    fn table_is_sorted_and_has_no_duplicates() {
        for w in SUPPORTED_APIS.windows(2).chain(CONTROLLER_APIS.windows(2)) {
            assert!(
                (w[0].key as i16) < (w[1].key as i16),
                "{:?} before {:?}",
                w[0].key,
                w[1].key
            );
        }
    }
}
