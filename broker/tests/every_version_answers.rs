//! Every advertised version of every served API decodes a populated request and encodes its
//! response. `kafka-protocol` refuses to encode a field that a version lacks, so a handler
//! that sets one unconditionally breaks old clients; this test finds that before they do.
//!
//! Each answer is also decoded as a client decodes it and must hold null, not `""`, where
//! Kafka sends null (an error message on success, a rack that is not set). The handlers run
//! in this process first (refusal paths included), then in a running `samsa`, where the
//! controller places replicas and the admin writes succeed.

use std::rc::Rc;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::{Encodable, StrBytes};
use samsa_broker::broker::Broker;
use samsa_broker::config::BrokerConfig;
use samsa_broker::handlers::{self, Connection};
use samsa_broker::net::IoEngine;
use samsa_protocol::newer::{self, Record, Value};
use samsa_protocol::SUPPORTED_APIS;

fn name(s: &str) -> TopicName {
    TopicName(StrBytes::from_string(s.to_string()))
}

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

/// A request for `key` that names an existing topic, a missing one and typical options.
fn populated(key: ApiKey, version: i16, topic_id: uuid::Uuid) -> RequestKind {
    match key {
        ApiKey::Produce => {
            let mut pd = produce_request::PartitionProduceData::default();
            pd.index = 0;
            pd.records = Some(Bytes::from_static(&[0; 10])); // refused as corrupt: an error path
            let mut td = produce_request::TopicProduceData::default();
            if version >= 13 {
                td.topic_id = topic_id;
            } else {
                td.name = name("t");
            }
            td.partition_data = vec![pd.clone(), {
                let mut p = pd;
                p.index = 9;
                p
            }];
            let mut r = ProduceRequest::default();
            r.acks = -1;
            r.timeout_ms = 1000;
            r.topic_data = vec![td];
            RequestKind::Produce(r)
        }
        ApiKey::Fetch => {
            let mut fp = fetch_request::FetchPartition::default();
            fp.partition = 0;
            fp.partition_max_bytes = 1 << 20;
            let mut ft = fetch_request::FetchTopic::default();
            if version >= 13 {
                ft.topic_id = topic_id;
            } else {
                ft.topic = name("t");
            }
            ft.partitions = vec![fp.clone(), {
                let mut p = fp;
                p.partition = 9;
                p
            }];
            let mut r = FetchRequest::default();
            r.max_wait_ms = 0;
            r.max_bytes = 1 << 20;
            r.topics = vec![ft];
            RequestKind::Fetch(r)
        }
        ApiKey::ListOffsets => {
            let mut t = list_offsets_request::ListOffsetsTopic::default();
            t.name = name("t");
            t.partitions = [-1i64, -2, 0]
                .iter()
                .map(|ts| {
                    let mut p = list_offsets_request::ListOffsetsPartition::default();
                    p.timestamp = *ts;
                    p
                })
                .collect();
            let mut r = ListOffsetsRequest::default();
            r.topics = vec![t];
            RequestKind::ListOffsets(r)
        }
        ApiKey::Metadata => {
            let mut r = MetadataRequest::default();
            let topics = ["t", "missing"].iter().map(|n| {
                let mut t = metadata_request::MetadataRequestTopic::default();
                t.name = Some(name(n));
                t
            });
            r.topics = Some(topics.collect());
            if version >= 4 {
                r.allow_auto_topic_creation = false;
            }
            RequestKind::Metadata(r)
        }
        ApiKey::ApiVersions => {
            let mut r = ApiVersionsRequest::default();
            if version >= 3 {
                r.client_software_name = s("test");
                r.client_software_version = s("1");
            }
            RequestKind::ApiVersions(r)
        }
        ApiKey::CreateTopics => {
            let mut t = create_topics_request::CreatableTopic::default();
            t.name = name(&format!("created-v{version}"));
            t.num_partitions = 2;
            t.replication_factor = 1;
            let mut c = create_topics_request::CreatableTopicConfig::default();
            c.name = s("retention.ms");
            c.value = Some(s("1000"));
            t.configs = vec![c];
            let mut bad = create_topics_request::CreatableTopic::default();
            bad.name = name("t");
            bad.num_partitions = 1;
            bad.replication_factor = 1;
            let mut r = CreateTopicsRequest::default();
            r.topics = vec![t, bad];
            RequestKind::CreateTopics(r)
        }
        ApiKey::DeleteTopics => {
            let mut r = DeleteTopicsRequest::default();
            if version >= 6 {
                let mut t = delete_topics_request::DeleteTopicState::default();
                t.name = Some(name("missing"));
                r.topics = vec![t];
            } else {
                r.topic_names = vec![name("missing")];
            }
            RequestKind::DeleteTopics(r)
        }
        ApiKey::DeleteRecords => {
            let mut p = delete_records_request::DeleteRecordsPartition::default();
            p.offset = -1;
            let mut t = delete_records_request::DeleteRecordsTopic::default();
            t.name = name("t");
            t.partitions = vec![p];
            let mut r = DeleteRecordsRequest::default();
            r.topics = vec![t];
            RequestKind::DeleteRecords(r)
        }
        ApiKey::OffsetForLeaderEpoch => {
            let mut p = offset_for_leader_epoch_request::OffsetForLeaderPartition::default();
            p.leader_epoch = 0;
            let mut t = offset_for_leader_epoch_request::OffsetForLeaderTopic::default();
            t.topic = name("t");
            t.partitions = vec![p];
            let mut r = OffsetForLeaderEpochRequest::default();
            r.topics = vec![t];
            RequestKind::OffsetForLeaderEpoch(r)
        }
        ApiKey::DescribeConfigs => {
            let mut topic = describe_configs_request::DescribeConfigsResource::default();
            topic.resource_type = 2;
            topic.resource_name = s("t");
            let mut b = describe_configs_request::DescribeConfigsResource::default();
            b.resource_type = 4;
            b.resource_name = s("1");
            let mut default = describe_configs_request::DescribeConfigsResource::default();
            default.resource_type = 4;
            default.resource_name = s("");
            let mut group = describe_configs_request::DescribeConfigsResource::default();
            group.resource_type = 32;
            group.resource_name = s("g");
            let mut r = DescribeConfigsRequest::default();
            r.resources = vec![topic, b, default, group];
            r.include_synonyms = version >= 1;
            r.include_documentation = version >= 3;
            RequestKind::DescribeConfigs(r)
        }
        ApiKey::AlterConfigs => {
            let mut c = alter_configs_request::AlterableConfig::default();
            c.name = s("retention.ms");
            c.value = Some(s("5000"));
            let mut res = alter_configs_request::AlterConfigsResource::default();
            res.resource_type = 2;
            res.resource_name = s("t");
            res.configs = vec![c];
            let mut relogin = alter_configs_request::AlterableConfig::default();
            relogin.name = s("sasl.kerberos.min.time.before.relogin");
            relogin.value = Some(s("58000"));
            let mut broker = alter_configs_request::AlterConfigsResource::default();
            broker.resource_type = 4;
            broker.resource_name = s("1");
            broker.configs = vec![relogin];
            let mut r = AlterConfigsRequest::default();
            r.resources = vec![res, broker];
            r.validate_only = true;
            RequestKind::AlterConfigs(r)
        }
        ApiKey::DescribeLogDirs => RequestKind::DescribeLogDirs(DescribeLogDirsRequest::default()),
        ApiKey::CreatePartitions => {
            let mut t = create_partitions_request::CreatePartitionsTopic::default();
            t.name = name("t");
            t.count = 1;
            let mut r = CreatePartitionsRequest::default();
            r.topics = vec![t];
            RequestKind::CreatePartitions(r)
        }
        ApiKey::IncrementalAlterConfigs => {
            let mut c = incremental_alter_configs_request::AlterableConfig::default();
            c.name = s("cleanup.policy");
            c.config_operation = 2;
            c.value = Some(s("compact"));
            let mut res = incremental_alter_configs_request::AlterConfigsResource::default();
            res.resource_type = 2;
            res.resource_name = s("t");
            res.configs = vec![c];
            let mut policy = incremental_alter_configs_request::AlterableConfig::default();
            policy.name = s("log.cleanup.policy");
            policy.config_operation = 2; // APPEND
            policy.value = Some(s("compact"));
            let mut broker = incremental_alter_configs_request::AlterConfigsResource::default();
            broker.resource_type = 4;
            broker.resource_name = s("");
            broker.configs = vec![policy];
            let mut timeout = incremental_alter_configs_request::AlterableConfig::default();
            timeout.name = s("consumer.session.timeout.ms");
            timeout.value = Some(s("50000"));
            let mut group = incremental_alter_configs_request::AlterConfigsResource::default();
            group.resource_type = 32;
            group.resource_name = s("g");
            group.configs = vec![timeout];
            let mut r = IncrementalAlterConfigsRequest::default();
            r.resources = vec![res, broker, group];
            r.validate_only = true;
            RequestKind::IncrementalAlterConfigs(r)
        }
        ApiKey::DescribeCluster => {
            let mut r = DescribeClusterRequest::default();
            if version >= 1 {
                r.endpoint_type = 1;
            }
            RequestKind::DescribeCluster(r)
        }
        ApiKey::InitProducerId => {
            let mut r = InitProducerIdRequest::default();
            r.transactional_id = Some(TransactionalId(s("tx")));
            r.transaction_timeout_ms = 60_000;
            RequestKind::InitProducerId(r)
        }
        ApiKey::AddPartitionsToTxn => {
            let topics = ["t", "missing"]
                .iter()
                .map(|t| {
                    let mut at = add_partitions_to_txn_request::AddPartitionsToTxnTopic::default();
                    at.name = name(t);
                    at.partitions = vec![0];
                    at
                })
                .collect::<Vec<_>>();
            let mut r = AddPartitionsToTxnRequest::default();
            if version < 4 {
                r.v3_and_below_transactional_id = TransactionalId(s("tx"));
                r.v3_and_below_producer_id = ProducerId(0);
                r.v3_and_below_topics = topics;
            } else {
                let mut t = add_partitions_to_txn_request::AddPartitionsToTxnTransaction::default();
                t.transactional_id = TransactionalId(s("tx"));
                t.verify_only = true;
                t.topics = topics;
                r.transactions = vec![t];
            }
            RequestKind::AddPartitionsToTxn(r)
        }
        ApiKey::EndTxn => {
            let mut r = EndTxnRequest::default();
            r.transactional_id = TransactionalId(s("tx"));
            r.committed = true;
            RequestKind::EndTxn(r)
        }
        ApiKey::WriteTxnMarkers => {
            let mut t = write_txn_markers_request::WritableTxnMarkerTopic::default();
            t.name = name("t");
            t.partition_indexes = vec![0, 9];
            let mut m = write_txn_markers_request::WritableTxnMarker::default();
            m.producer_id = ProducerId(5);
            m.producer_epoch = 1;
            m.transaction_result = true;
            m.topics = vec![t];
            let mut r = WriteTxnMarkersRequest::default();
            r.markers = vec![m];
            RequestKind::WriteTxnMarkers(r)
        }
        ApiKey::AddOffsetsToTxn => {
            let mut r = AddOffsetsToTxnRequest::default();
            r.transactional_id = TransactionalId(s("tx"));
            r.group_id = GroupId(s("g"));
            RequestKind::AddOffsetsToTxn(r)
        }
        ApiKey::TxnOffsetCommit => {
            let mut p = txn_offset_commit_request::TxnOffsetCommitRequestPartition::default();
            p.partition_index = 0;
            p.committed_offset = 3;
            p.committed_metadata = Some(s("meta"));
            let mut missing = p.clone();
            missing.partition_index = 9;
            let mut t = txn_offset_commit_request::TxnOffsetCommitRequestTopic::default();
            t.name = name("t");
            t.partitions = vec![p, missing];
            let mut r = TxnOffsetCommitRequest::default();
            r.transactional_id = TransactionalId(s("tx"));
            r.group_id = GroupId(s("g"));
            if version >= 3 {
                r.generation_id = -1;
                r.group_instance_id = Some(s("instance"));
            }
            // v6 names topics by id (see added): the second one unknown.
            r.topics = if version >= 6 {
                vec![t.clone(), t]
            } else {
                vec![t]
            };
            RequestKind::TxnOffsetCommit(r)
        }
        ApiKey::DescribeProducers => {
            let mut t = describe_producers_request::TopicRequest::default();
            t.name = name("t");
            t.partition_indexes = vec![0, 9];
            let mut r = DescribeProducersRequest::default();
            r.topics = vec![t];
            RequestKind::DescribeProducers(r)
        }
        ApiKey::DescribeTransactions => {
            let mut r = DescribeTransactionsRequest::default();
            r.transactional_ids = vec![TransactionalId(s("tx")), TransactionalId(s("nope"))];
            RequestKind::DescribeTransactions(r)
        }
        ApiKey::ListTransactions => {
            let mut r = ListTransactionsRequest::default();
            r.state_filters = vec![s("Empty"), s("Bogus")];
            if version >= 2 {
                r.transactional_id_pattern = Some(s("t.*"));
            }
            RequestKind::ListTransactions(r)
        }
        ApiKey::FindCoordinator => {
            let mut r = FindCoordinatorRequest::default();
            if version >= 4 {
                r.coordinator_keys = vec![s("g"), s("other")];
            } else {
                r.key = s("g");
            }
            RequestKind::FindCoordinator(r)
        }
        ApiKey::JoinGroup => {
            // A static member (v5+) joins at once; v4 gets MEMBER_ID_REQUIRED; older versions
            // complete a one-member rebalance (the test broker has no initial delay).
            let mut p = join_group_request::JoinGroupRequestProtocol::default();
            p.name = s("range");
            p.metadata = Bytes::from_static(&[0, 0, 0, 0, 0, 1, 0, 1, b't', 0, 0, 0, 0]);
            let mut r = JoinGroupRequest::default();
            r.group_id = GroupId(s(&format!("join-v{version}")));
            r.session_timeout_ms = 10_000;
            r.rebalance_timeout_ms = 10_000;
            r.protocol_type = s("consumer");
            r.protocols = vec![p];
            if version >= 5 {
                r.group_instance_id = Some(s("instance"));
            }
            if version >= 8 {
                r.reason = Some(s("testing"));
            }
            RequestKind::JoinGroup(r)
        }
        ApiKey::SyncGroup => {
            let mut a = sync_group_request::SyncGroupRequestAssignment::default();
            a.member_id = s("m");
            a.assignment = Bytes::from_static(b"assignment");
            let mut r = SyncGroupRequest::default();
            r.group_id = GroupId(s("join-v0"));
            r.member_id = s("m");
            r.generation_id = 1;
            r.assignments = vec![a];
            if version >= 5 {
                r.protocol_type = Some(s("consumer"));
                r.protocol_name = Some(s("range"));
            }
            RequestKind::SyncGroup(r)
        }
        ApiKey::Heartbeat => {
            let mut r = HeartbeatRequest::default();
            r.group_id = GroupId(s("join-v0"));
            r.member_id = s("unknown");
            r.generation_id = 1;
            RequestKind::Heartbeat(r)
        }
        ApiKey::LeaveGroup => {
            let mut r = LeaveGroupRequest::default();
            r.group_id = GroupId(s("join-v1"));
            if version >= 3 {
                let mut m = leave_group_request::MemberIdentity::default();
                m.member_id = s("unknown");
                let mut by_instance = leave_group_request::MemberIdentity::default();
                by_instance.group_instance_id = Some(s("instance"));
                r.members = vec![m, by_instance];
            } else {
                r.member_id = s("unknown");
            }
            RequestKind::LeaveGroup(r)
        }
        ApiKey::OffsetCommit => {
            let mut p = offset_commit_request::OffsetCommitRequestPartition::default();
            p.partition_index = 0;
            p.committed_offset = 5;
            p.committed_metadata = Some(s("meta"));
            let mut missing = p.clone();
            missing.partition_index = 9;
            let mut t = offset_commit_request::OffsetCommitRequestTopic::default();
            t.name = name("t");
            t.partitions = vec![p, missing];
            let mut r = OffsetCommitRequest::default();
            r.group_id = GroupId(s("simple"));
            r.generation_id_or_member_epoch = -1;
            // v10 names topics by id (see added): the second one unknown.
            r.topics = if version >= 10 {
                vec![t.clone(), t]
            } else {
                vec![t]
            };
            RequestKind::OffsetCommit(r)
        }
        ApiKey::OffsetFetch => {
            let mut r = OffsetFetchRequest::default();
            if version >= 8 {
                let mut t = offset_fetch_request::OffsetFetchRequestTopics::default();
                t.name = name("t");
                t.partition_indexes = vec![0, 1];
                let mut g = offset_fetch_request::OffsetFetchRequestGroup::default();
                g.group_id = GroupId(s("simple"));
                // v10 names topics by id (see added): the second one unknown.
                g.topics = Some(if version >= 10 {
                    vec![t.clone(), t]
                } else {
                    vec![t]
                });
                let mut all = offset_fetch_request::OffsetFetchRequestGroup::default();
                all.group_id = GroupId(s("simple"));
                all.topics = None;
                r.groups = vec![g, all];
            } else {
                let mut t = offset_fetch_request::OffsetFetchRequestTopic::default();
                t.name = name("t");
                t.partition_indexes = vec![0, 1];
                r.group_id = GroupId(s("simple"));
                r.topics = Some(vec![t]);
            }
            RequestKind::OffsetFetch(r)
        }
        ApiKey::DescribeGroups => {
            let mut r = DescribeGroupsRequest::default();
            r.groups = vec![GroupId(s("join-v0")), GroupId(s("missing"))];
            r.include_authorized_operations = version >= 3;
            RequestKind::DescribeGroups(r)
        }
        ApiKey::ListGroups => {
            let mut r = ListGroupsRequest::default();
            if version >= 4 {
                r.states_filter = vec![s("stable"), s("empty")];
            }
            if version >= 5 {
                r.types_filter = vec![s("classic")];
            }
            RequestKind::ListGroups(r)
        }
        ApiKey::DeleteGroups => {
            let mut r = DeleteGroupsRequest::default();
            r.groups_names = vec![GroupId(s("missing")), GroupId(s("join-v0"))];
            RequestKind::DeleteGroups(r)
        }
        ApiKey::OffsetDelete => {
            let mut p = offset_delete_request::OffsetDeleteRequestPartition::default();
            p.partition_index = 0;
            let mut t = offset_delete_request::OffsetDeleteRequestTopic::default();
            t.name = name("t");
            t.partitions = vec![p];
            let mut r = OffsetDeleteRequest::default();
            r.group_id = GroupId(s("simple"));
            r.topics = vec![t];
            RequestKind::OffsetDelete(r)
        }
        ApiKey::CreateAcls => {
            let mut ok = create_acls_request::AclCreation::default();
            ok.resource_type = 2; // TOPIC
            ok.resource_name = s("t");
            ok.resource_pattern_type = 3; // LITERAL
            ok.principal = s("User:alice");
            ok.host = s("*");
            ok.operation = 3; // READ
            ok.permission_type = 3; // ALLOW
            let mut bad = ok.clone();
            bad.resource_pattern_type = 2; // MATCH: refused in a creation
            let mut r = CreateAclsRequest::default();
            r.creations = vec![ok, bad];
            RequestKind::CreateAcls(r)
        }
        ApiKey::DescribeAcls => {
            let mut r = DescribeAclsRequest::default();
            r.resource_type_filter = 1; // ANY
            r.resource_name_filter = Some(s("t"));
            r.pattern_type_filter = 2; // MATCH
            r.operation = 1;
            r.permission_type = 1;
            RequestKind::DescribeAcls(r)
        }
        ApiKey::DeleteAcls => {
            let mut f = delete_acls_request::DeleteAclsFilter::default();
            f.resource_type_filter = 2;
            f.resource_name_filter = Some(s("t"));
            f.pattern_type_filter = 3;
            f.principal_filter = Some(s("User:alice"));
            f.operation = 1;
            f.permission_type = 1;
            let mut unknown = f.clone();
            unknown.operation = 0; // UNKNOWN: refused
            let mut r = DeleteAclsRequest::default();
            r.filters = vec![f, unknown];
            RequestKind::DeleteAcls(r)
        }
        ApiKey::DescribeUserScramCredentials => {
            let users = ["alice", "nobody", "nobody"].iter().map(|n| {
                let mut u = describe_user_scram_credentials_request::UserName::default();
                u.name = s(n);
                u
            });
            let mut r = DescribeUserScramCredentialsRequest::default();
            r.users = Some(users.collect());
            RequestKind::DescribeUserScramCredentials(r)
        }
        ApiKey::AlterUserScramCredentials => {
            let mut ok = alter_user_scram_credentials_request::ScramCredentialUpsertion::default();
            ok.name = s("alice");
            ok.mechanism = 1; // SCRAM-SHA-256
            ok.iterations = 8192;
            ok.salt = Bytes::from_static(b"salt");
            ok.salted_password = Bytes::from_static(&[7; 32]);
            let mut too_few = ok.clone();
            too_few.name = s("bob");
            too_few.iterations = 1; // UNACCEPTABLE_CREDENTIAL
            let mut missing =
                alter_user_scram_credentials_request::ScramCredentialDeletion::default();
            missing.name = s("nobody");
            missing.mechanism = 2; // RESOURCE_NOT_FOUND
            let mut r = AlterUserScramCredentialsRequest::default();
            r.upsertions = vec![ok, too_few];
            r.deletions = vec![missing];
            RequestKind::AlterUserScramCredentials(r)
        }
        ApiKey::AlterReplicaLogDirs => {
            let mut t = alter_replica_log_dirs_request::AlterReplicaLogDirTopic::default();
            t.name = name("t");
            t.partitions = vec![0, 9];
            let mut d = alter_replica_log_dirs_request::AlterReplicaLogDir::default();
            d.path = s("/nowhere");
            d.topics = vec![t];
            let mut r = AlterReplicaLogDirsRequest::default();
            r.dirs = vec![d];
            RequestKind::AlterReplicaLogDirs(r)
        }
        ApiKey::ElectLeaders => {
            let mut t = elect_leaders_request::TopicPartitions::default();
            t.topic = name("t");
            t.partitions = vec![0, 9];
            let mut r = ElectLeadersRequest::default();
            r.topic_partitions = Some(vec![t]);
            RequestKind::ElectLeaders(r)
        }
        ApiKey::AlterPartitionReassignments => {
            let mut p = alter_partition_reassignments_request::ReassignablePartition::default();
            p.partition_index = 0;
            p.replicas = Some(vec![BrokerId(1)]);
            let mut cancel = p.clone();
            cancel.replicas = None;
            let mut t = alter_partition_reassignments_request::ReassignableTopic::default();
            t.name = name("t");
            t.partitions = vec![p, cancel];
            let mut r = AlterPartitionReassignmentsRequest::default();
            r.topics = vec![t];
            RequestKind::AlterPartitionReassignments(r)
        }
        ApiKey::ListPartitionReassignments => {
            let mut t =
                list_partition_reassignments_request::ListPartitionReassignmentsTopics::default();
            t.name = name("t");
            t.partition_indexes = vec![0];
            let mut r = ListPartitionReassignmentsRequest::default();
            r.topics = Some(vec![t]);
            RequestKind::ListPartitionReassignments(r)
        }
        ApiKey::DescribeQuorum => {
            let mut p = describe_quorum_request::PartitionData::default();
            p.partition_index = 0;
            let mut t = describe_quorum_request::TopicData::default();
            t.topic_name = name("__cluster_metadata");
            t.partitions = vec![p];
            let mut r = DescribeQuorumRequest::default();
            r.topics = vec![t];
            RequestKind::DescribeQuorum(r)
        }
        ApiKey::AddRaftVoter => {
            let mut l = add_raft_voter_request::Listener::default();
            l.name = s("CONTROLLER");
            l.host = s("127.0.0.1");
            l.port = 9093;
            let mut r = AddRaftVoterRequest::default();
            r.voter_id = 7;
            r.timeout_ms = 1000;
            r.listeners = vec![l];
            RequestKind::AddRaftVoter(r)
        }
        ApiKey::RemoveRaftVoter => {
            let mut r = RemoveRaftVoterRequest::default();
            r.voter_id = 7;
            RequestKind::RemoveRaftVoter(r)
        }
        ApiKey::ListConfigResources => {
            let mut r = ListConfigResourcesRequest::default();
            if version >= 1 {
                r.resource_types = vec![2, 4];
            }
            RequestKind::ListConfigResources(r)
        }
        ApiKey::DescribeClientQuotas => {
            let mut c = describe_client_quotas_request::ComponentData::default();
            c.entity_type = s("user");
            c.match_type = 0;
            c._match = Some(s("alice"));
            let mut r = DescribeClientQuotasRequest::default();
            r.components = vec![c];
            RequestKind::DescribeClientQuotas(r)
        }
        ApiKey::AlterClientQuotas => {
            let entry = |t: &str, key: &str, value: f64| {
                let mut d = alter_client_quotas_request::EntityData::default();
                d.entity_type = s(t);
                d.entity_name = Some(s("alice"));
                let mut op = alter_client_quotas_request::OpData::default();
                op.key = s(key);
                op.value = value;
                let mut e = alter_client_quotas_request::EntryData::default();
                e.entity = vec![d];
                e.ops = vec![op];
                e
            };
            let mut r = AlterClientQuotasRequest::default();
            // One set, one refused (a negative rate).
            r.entries = vec![
                entry("user", "producer_byte_rate", 1024.0),
                entry("client-id", "consumer_byte_rate", -1.0),
            ];
            RequestKind::AlterClientQuotas(r)
        }
        ApiKey::UpdateFeatures => {
            let mut u = update_features_request::FeatureUpdateKey::default();
            u.feature = s("metadata.version");
            u.max_version_level = 25;
            let mut r = UpdateFeaturesRequest::default();
            r.timeout_ms = 5000;
            r.feature_updates = vec![u];
            r.validate_only = version >= 1;
            RequestKind::UpdateFeatures(r)
        }
        ApiKey::DescribeTopicPartitions => {
            let topics = ["t", "missing"].map(|n| {
                let mut t = describe_topic_partitions_request::TopicRequest::default();
                t.name = name(n);
                t
            });
            let mut r = DescribeTopicPartitionsRequest::default();
            r.topics = topics.to_vec();
            r.response_partition_limit = 1;
            RequestKind::DescribeTopicPartitions(r)
        }
        // Share groups (KIP-932): a member joins, describes, fetches and acknowledges; the
        // share coordinator's RPCs and the admin APIs on another group.
        // A KIP-848 member joins (a new group per version: v0 lets the coordinator name the
        // member, v1 does not), and the group and an unknown one are described.
        ApiKey::ConsumerGroupHeartbeat => {
            let mut r = ConsumerGroupHeartbeatRequest::default();
            r.group_id = GroupId(s(&format!("g-consumer-v{version}")));
            r.member_id = s("consumer-member-1");
            r.member_epoch = 0;
            r.rebalance_timeout_ms = 30_000;
            r.subscribed_topic_names = Some(vec![name("t"), name("missing")]);
            r.topic_partitions = Some(Vec::new());
            RequestKind::ConsumerGroupHeartbeat(r)
        }
        ApiKey::ConsumerGroupDescribe => {
            let mut r = ConsumerGroupDescribeRequest::default();
            r.group_ids = vec![GroupId(s("g-consumer-v1")), GroupId(s("missing"))];
            r.include_authorized_operations = true;
            RequestKind::ConsumerGroupDescribe(r)
        }
        ApiKey::ShareGroupHeartbeat => {
            let mut r = ShareGroupHeartbeatRequest::default();
            r.group_id = GroupId(s("g-share"));
            r.member_id = s("member-1");
            r.member_epoch = 0;
            r.subscribed_topic_names = Some(vec![name("t"), name("missing")]);
            RequestKind::ShareGroupHeartbeat(r)
        }
        ApiKey::ShareGroupDescribe => {
            let mut r = ShareGroupDescribeRequest::default();
            r.group_ids = vec![GroupId(s("g-share")), GroupId(s("missing"))];
            RequestKind::ShareGroupDescribe(r)
        }
        ApiKey::ShareFetch => {
            let partitions = [0, 9].map(|p| {
                let mut fp = share_fetch_request::FetchPartition::default();
                fp.partition_index = p;
                fp
            });
            let mut t = share_fetch_request::FetchTopic::default();
            t.topic_id = topic_id;
            t.partitions = partitions.to_vec();
            let mut r = ShareFetchRequest::default();
            r.group_id = Some(GroupId(s("g-share")));
            r.member_id = Some(s("member-1"));
            r.share_session_epoch = 0;
            r.max_wait_ms = 0;
            r.min_bytes = 1;
            r.max_bytes = 1 << 20;
            r.max_records = 10;
            r.batch_size = 10;
            r.topics = vec![t];
            RequestKind::ShareFetch(r)
        }
        ApiKey::ShareAcknowledge => {
            let mut b = share_acknowledge_request::AcknowledgementBatch::default();
            b.first_offset = 0;
            b.last_offset = 0;
            b.acknowledge_types = vec![1];
            let mut p = share_acknowledge_request::AcknowledgePartition::default();
            p.partition_index = 0;
            p.acknowledgement_batches = vec![b];
            let mut t = share_acknowledge_request::AcknowledgeTopic::default();
            t.topic_id = topic_id;
            t.partitions = vec![p];
            let mut r = ShareAcknowledgeRequest::default();
            r.group_id = Some(GroupId(s("g-share")));
            r.member_id = Some(s("member-1"));
            r.share_session_epoch = 1;
            r.topics = vec![t];
            RequestKind::ShareAcknowledge(r)
        }
        ApiKey::ReadShareGroupState => {
            let mut p = read_share_group_state_request::PartitionData::default();
            p.partition = 0;
            let mut t = read_share_group_state_request::ReadStateData::default();
            t.topic_id = topic_id;
            t.partitions = vec![p];
            let mut r = ReadShareGroupStateRequest::default();
            r.group_id = s("g-state");
            r.topics = vec![t];
            RequestKind::ReadShareGroupState(r)
        }
        ApiKey::WriteShareGroupState => {
            let mut b = write_share_group_state_request::StateBatch::default();
            b.first_offset = 0;
            b.last_offset = 1;
            b.delivery_state = 2;
            b.delivery_count = 1;
            let mut p = write_share_group_state_request::PartitionData::default();
            p.partition = 0;
            p.start_offset = 0;
            p.state_batches = vec![b];
            let mut t = write_share_group_state_request::WriteStateData::default();
            t.topic_id = topic_id;
            t.partitions = vec![p];
            let mut r = WriteShareGroupStateRequest::default();
            r.group_id = s("g-state");
            r.topics = vec![t];
            RequestKind::WriteShareGroupState(r)
        }
        ApiKey::DeleteShareGroupState => {
            let mut p = delete_share_group_state_request::PartitionData::default();
            p.partition = 0;
            let mut t = delete_share_group_state_request::DeleteStateData::default();
            t.topic_id = topic_id;
            t.partitions = vec![p];
            let mut r = DeleteShareGroupStateRequest::default();
            r.group_id = s("g-state");
            r.topics = vec![t];
            RequestKind::DeleteShareGroupState(r)
        }
        ApiKey::DescribeShareGroupOffsets => {
            let mut t = describe_share_group_offsets_request::DescribeShareGroupOffsetsRequestTopic::default();
            t.topic_name = name("t");
            t.partitions = vec![0, 9];
            let mut named = describe_share_group_offsets_request::DescribeShareGroupOffsetsRequestGroup::default();
            named.group_id = GroupId(s("g-share"));
            named.topics = Some(vec![t]);
            let mut all = describe_share_group_offsets_request::DescribeShareGroupOffsetsRequestGroup::default();
            all.group_id = GroupId(s("g-share-admin"));
            let mut r = DescribeShareGroupOffsetsRequest::default();
            r.groups = vec![named, all];
            RequestKind::DescribeShareGroupOffsets(r)
        }
        ApiKey::AlterShareGroupOffsets => {
            let mut p =
                alter_share_group_offsets_request::AlterShareGroupOffsetsRequestPartition::default(
                );
            p.partition_index = 0;
            p.start_offset = 0;
            let mut t =
                alter_share_group_offsets_request::AlterShareGroupOffsetsRequestTopic::default();
            t.topic_name = name("t");
            t.partitions = vec![p];
            let mut missing = t.clone();
            missing.topic_name = name("missing");
            let mut r = AlterShareGroupOffsetsRequest::default();
            r.group_id = GroupId(s("g-share-admin"));
            r.topics = vec![t, missing];
            RequestKind::AlterShareGroupOffsets(r)
        }
        ApiKey::DeleteShareGroupOffsets => {
            let mut t =
                delete_share_group_offsets_request::DeleteShareGroupOffsetsRequestTopic::default();
            t.topic_name = name("t");
            let mut missing = t.clone();
            missing.topic_name = name("missing");
            let mut r = DeleteShareGroupOffsetsRequest::default();
            r.group_id = GroupId(s("g-share-admin"));
            r.topics = vec![t, missing];
            RequestKind::DeleteShareGroupOffsets(r)
        }
        // A broker id nobody registered: BROKER_ID_NOT_REGISTERED (this node stays registered).
        ApiKey::UnregisterBroker => {
            let mut r = UnregisterBrokerRequest::default();
            r.broker_id = BrokerId(99);
            RequestKind::UnregisterBroker(r)
        }
        // Samsa issues no delegation tokens: refused over PLAINTEXT (the SASL answers are
        // tests/delegation_tokens.rs).
        ApiKey::CreateDelegationToken => {
            let mut renewer = create_delegation_token_request::CreatableRenewers::default();
            renewer.principal_type = s("User");
            renewer.principal_name = s("bob");
            let mut r = CreateDelegationTokenRequest::default();
            if version >= 3 {
                r.owner_principal_type = Some(s("User"));
                r.owner_principal_name = Some(s("carol"));
            }
            r.renewers = vec![renewer];
            r.max_lifetime_ms = -1;
            RequestKind::CreateDelegationToken(r)
        }
        ApiKey::RenewDelegationToken => {
            let mut r = RenewDelegationTokenRequest::default();
            r.hmac = Bytes::from_static(b"hmac");
            r.renew_period_ms = 1000;
            RequestKind::RenewDelegationToken(r)
        }
        ApiKey::ExpireDelegationToken => {
            let mut r = ExpireDelegationTokenRequest::default();
            r.hmac = Bytes::from_static(b"hmac");
            r.expiry_time_period_ms = -1;
            RequestKind::ExpireDelegationToken(r)
        }
        ApiKey::DescribeDelegationToken => {
            let mut owner =
                describe_delegation_token_request::DescribeDelegationTokenOwner::default();
            owner.principal_type = s("User");
            owner.principal_name = s("bob");
            let mut r = DescribeDelegationTokenRequest::default();
            r.owners = Some(vec![owner]);
            RequestKind::DescribeDelegationToken(r)
        }
        // On a listener without SASL both are ILLEGAL_SASL_STATE (the SASL exchange itself is
        // compat-tests/tests/security.rs).
        ApiKey::SaslHandshake => {
            let mut r = SaslHandshakeRequest::default();
            r.mechanism = s("PLAIN");
            RequestKind::SaslHandshake(r)
        }
        ApiKey::SaslAuthenticate => {
            let mut r = SaslAuthenticateRequest::default();
            r.auth_bytes = Bytes::from_static(b"\0alice\0alice-secret");
            RequestKind::SaslAuthenticate(r)
        }
        other => panic!("{other:?} is advertised but this test has no request for it: add one"),
    }
}

/// The fields a version newer than `kafka-protocol` knows adds to the request of
/// [`populated`] (samsa_protocol::newer translates the codec's bytes up with them).
fn added(key: ApiKey, version: i16, topic_id: uuid::Uuid) -> Option<Record> {
    let topic = |id| Record::new().with("TopicId", Value::Uuid(id));
    let unknown = uuid::Uuid::from_u128(0x5a65a);
    match (key, version) {
        (ApiKey::OffsetCommit, 10..) | (ApiKey::TxnOffsetCommit, 6..) => {
            Some(Record::new().with("Topics", Value::records([topic(topic_id), topic(unknown)])))
        }
        (ApiKey::OffsetFetch, 10..) => Some(Record::new().with(
            "Groups",
            Value::records([
                Record::new().with("Topics", Value::records([topic(topic_id), topic(unknown)])),
            ]),
        )),
        // Another cluster's id: REBOOTSTRAP_REQUIRED (KIP-1242).
        (ApiKey::ApiVersions, 5..) => Some(
            Record::new()
                .with("ClusterId", Value::string(Some("another-cluster")))
                .with("NodeId", Value::Int(1)),
        ),
        (ApiKey::WriteTxnMarkers, 2..) => Some(Record::new().with(
            "Markers",
            Value::records([Record::new().with("TransactionVersion", Value::Int(2))]),
        )),
        (ApiKey::AddRaftVoter, 1..) => {
            Some(Record::new().with("AckWhenCommitted", Value::Bool(false)))
        }
        (ApiKey::ShareFetch, 2..) => Some(Record::new().with("ShareAcquireMode", Value::Int(1))),
        (ApiKey::WriteShareGroupState, 1..) => Some(Record::new().with(
            "Topics",
            Value::records([Record::new().with(
                "Partitions",
                Value::records([Record::new().with("DeliveryCompleteCount", Value::Int(1))]),
            )]),
        )),
        _ => None,
    }
}

/// A request frame of `key` at `version` with the fields `added` names, through
/// samsa_protocol::newer for versions `kafka-protocol` cannot encode.
fn frame_with(key: ApiKey, version: i16, body: &RequestKind, added: Option<&Record>) -> Bytes {
    let mut buf = BytesMut::new();
    let mut h = RequestHeader::default();
    h.request_api_key = key as i16;
    h.request_api_version = version;
    h.correlation_id = 42;
    h.client_id = Some(s("every-version"));
    h.encode(&mut buf, key.request_header_version(version))
        .unwrap();
    let codec_version = newer::request_codec_version(key, version);
    let mut codec_body = BytesMut::new();
    body.encode(&mut codec_body, codec_version)
        .unwrap_or_else(|e| panic!("test request {key:?} v{version} does not encode: {e}"));
    let translated = newer::request_up(key, version, &codec_body, added)
        .unwrap_or_else(|e| panic!("test request {key:?} v{version} does not translate: {e}"));
    buf.extend_from_slice(&translated);
    buf.freeze()
}

#[test]
fn every_advertised_version_decodes_a_populated_request_and_encodes_its_answer() {
    answer_every_version(&[]);
}

/// With an authorizer that lets the (anonymous) caller do everything, the ACL APIs really
/// create, describe and delete, and `*_authorized_operations` are computed.
#[test]
fn every_version_answers_with_an_authorizer_that_allows() {
    answer_every_version(&[
        (
            "authorizer.class.name",
            "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        ),
        ("super.users", "User:ANONYMOUS"),
    ]);
}

/// With an authorizer and no ACLs every handler takes its refusal path, which must encode in
/// every version too.
#[test]
fn every_version_answers_with_an_authorizer_that_denies() {
    answer_every_version(&[(
        "authorizer.class.name",
        "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    )]);
}

/// Fields whose empty string Kafka sends too: an offset's metadata (Kafka stores a null one as
/// ""), and a config value whose default is the empty string (`authorizer.class.name`,
/// `leader.replication.throttled.replicas`; a config without a value is null).
const KAFKA_SENDS_EMPTY: &[&str] = &["metadata", "value"];

/// Struct fields where Kafka 4.4 sends "" on success, as the differential run against it shows
/// (scripts/reference/compare): a coordinator FindCoordinator v4+ found.
const KAFKA_SENDS_EMPTY_AT: &[&str] = &["Coordinator.error_message"];

/// Fields of one API's answer where Kafka 4.4 sends "" when nothing went wrong (the schema's
/// default), as the differential run shows: DescribeQuorum's messages,
/// DescribeUserScramCredentials', DescribeClientQuotas', DescribeConfigs' results and its loggers' documentation,
/// ConsumerGroupDescribe's regex of a member that subscribes without one.
fn kafka_sends_empty_in(key: ApiKey, path: &str) -> bool {
    matches!(
        (key, path),
        (
            ApiKey::DescribeConfigs,
            "DescribeConfigsResult.error_message" | "DescribeConfigsResourceResult.documentation"
        ) | (
            ApiKey::DescribeQuorum,
            "DescribeQuorumResponse.error_message" | "PartitionData.error_message"
        ) | (
            ApiKey::DescribeClientQuotas,
            "DescribeClientQuotasResponse.error_message"
        ) | (
            ApiKey::DescribeUserScramCredentials,
            "DescribeUserScramCredentialsResponse.error_message"
                | "DescribeUserScramCredentialsResult.error_message"
        ) | (
            ApiKey::ConsumerGroupDescribe,
            "Member.subscribed_topic_regex"
        )
    )
}

/// The name of the struct whose field ends `text`, a `Debug` rendering cut inside it.
fn enclosing_struct(text: &str) -> &str {
    let mut depth = 0;
    for (i, c) in text.char_indices().rev() {
        match c {
            '}' => depth += 1,
            '{' if depth == 0 => {
                return text[..i]
                    .trim_end()
                    .rsplit(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .next()
                    .unwrap_or_default();
            }
            '{' => depth -= 1,
            _ => {}
        }
    }
    ""
}

/// Whether `path` (struct.field) is sent at `version`: a decoder fills a field the version
/// lacks with its default, `Some("")` for these.
fn on_the_wire(path: &str, version: i16) -> bool {
    match path {
        "FindCoordinatorResponse.error_message" => (1..=3).contains(&version),
        "JoinGroupResponse.protocol_name" => version >= 7,
        "DescribeConfigsResourceResult.documentation" => version >= 3,
        "DescribeQuorumResponse.error_message" | "PartitionData.error_message" => version >= 2,
        _ => true,
    }
}

/// The fields of the encoded response `frame` that hold `""`, decoded as a client would,
/// less those where Kafka sends `""` as well.
fn empty_where_kafka_sends_null(key: ApiKey, version: i16, frame: &[u8]) -> Vec<String> {
    use kafka_protocol::protocol::Decodable;
    let mut body = Bytes::copy_from_slice(&frame[4..]);
    ResponseHeader::decode(
        &mut body,
        samsa_protocol::response::response_header_version(key, version),
    )
    .unwrap_or_else(|e| panic!("{key:?} v{version} header: {e}"));
    // A version newer than kafka-protocol knows is read as the newest it knows.
    let (codec_body, _) = newer::response_down(key, version, &body)
        .unwrap_or_else(|e| panic!("{key:?} v{version} does not translate: {e}"));
    let mut body = Bytes::from(codec_body);
    let decoded = ResponseKind::decode(key, &mut body, newer::response_codec_version(key, version))
        .unwrap_or_else(|e| panic!("{key:?} v{version} does not decode: {e}"));
    let text = format!("{decoded:?}");
    // For audits against Kafka: every decoded answer, one per line.
    if let Ok(path) = std::env::var("SAMSA_WIRE_DUMP") {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(path)
            .unwrap();
        writeln!(f, "{key:?} v{version} {text}").unwrap();
    }
    let mut found = Vec::new();
    for (at, _) in text.match_indices(": Some(\"\")") {
        let field = text[..at]
            .rsplit(|c: char| !(c.is_alphanumeric() || c == '_'))
            .next()
            .unwrap_or_default();
        let path = format!("{}.{field}", enclosing_struct(&text[..at]));
        if !KAFKA_SENDS_EMPTY.contains(&field)
            && !KAFKA_SENDS_EMPTY_AT.contains(&path.as_str())
            && !kafka_sends_empty_in(key, &path)
            && on_the_wire(&path, version)
        {
            found.push(path);
        }
    }
    found
}

fn answer_every_version(extra: &[(&str, &str)]) {
    let dir = tempfile::tempdir().unwrap();
    let mut flags = vec![
        (
            "log.dirs".to_string(),
            dir.path().join("data").display().to_string(),
        ),
        // JoinGroup answers after the initial rebalance delay; none here.
        (
            "group.initial.rebalance.delay.ms".to_string(),
            "0".to_string(),
        ),
    ];
    flags.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    let config = BrokerConfig::load(None, vec![], flags).unwrap();
    let broker: Arc<Broker> = Broker::open(config, IoEngine::Epoll).unwrap();
    let topic = broker
        .node
        .topics
        .create("t", 1, 1, Default::default())
        .unwrap();
    let conn = Rc::new(Connection::plaintext("127.0.0.1:1".parse().unwrap()));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let local = tokio::task::LocalSet::new();
    let mut checked = 0;
    let mut not_null = Vec::new();
    for (key, version) in advertised() {
        let body = populated(key, version, topic.id);
        let added = added(key, version, topic.id);
        let req = samsa_protocol::decode_request(frame_with(key, version, &body, added.as_ref()))
            .unwrap_or_else(|e| panic!("{key:?} v{version}: {e}"));
        let mut chunks = Vec::new();
        local
            .block_on(&rt, handlers::handle(&broker, &conn, req, &mut chunks))
            .unwrap_or_else(|e| panic!("{key:?} v{version}: {e}"));
        let out: Vec<u8> = samsa_protocol::chunk::concat(&chunks).unwrap();
        assert!(out.len() > 8, "{key:?} v{version} answered nothing");
        assert_eq!(
            i32::from_be_bytes(out[4..8].try_into().unwrap()),
            42,
            "{key:?} v{version} correlation id"
        );
        let mut empty = empty_where_kafka_sends_null(key, version, &out);
        empty.dedup();
        if !empty.is_empty() {
            not_null.push(format!("{key:?} v{version}: {}", empty.join(", ")));
        }
        checked += 1;
    }
    let expected: i32 = SUPPORTED_APIS
        .iter()
        .map(|a| (a.max_version - a.min_version + 1) as i32)
        .sum::<i32>()
        - samsa_protocol::api_table::PRODUCE_REFUSED_BELOW as i32;
    assert_eq!(checked, expected, "every (api, version) pair was exercised");
    assert!(
        not_null.is_empty(),
        "\"\" where Kafka sends null:\n{}",
        not_null.join("\n")
    );
}

/// Every (API, version) the broker advertises and answers (Produce below its refused
/// versions is closed, not answered).
fn advertised() -> impl Iterator<Item = (ApiKey, i16)> {
    SUPPORTED_APIS.iter().flat_map(|api| {
        let min = if api.key == ApiKey::Produce {
            samsa_protocol::api_table::PRODUCE_REFUSED_BELOW
        } else {
            api.min_version
        };
        (min..=api.max_version).map(move |version| (api.key, version))
    })
}

/// A `samsa` process on a free port with its own data directory, killed when dropped.
struct Running {
    child: std::process::Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Running {
    fn start() -> Running {
        let dir = tempfile::tempdir().unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let log = std::fs::File::create(dir.path().join("samsa.log")).unwrap();
        let child = std::process::Command::new(env!("CARGO_BIN_EXE_samsa"))
            .arg(format!("--listeners=PLAINTEXT://127.0.0.1:{port}"))
            .arg(format!("--log.dirs={}", dir.path().join("data").display()))
            .arg("--metrics.listener=")
            .arg("--console.listener=")
            .arg("--group.initial.rebalance.delay.ms=0")
            .arg("--authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer")
            .arg("--super.users=User:ANONYMOUS")
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap();
        Running {
            child,
            port,
            _dir: dir,
        }
    }

    fn connect(&self) -> std::net::TcpStream {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        loop {
            match std::net::TcpStream::connect(("127.0.0.1", self.port)) {
                Ok(s) => {
                    s.set_read_timeout(Some(std::time::Duration::from_secs(30)))
                        .unwrap();
                    return s;
                }
                Err(e) if std::time::Instant::now() > deadline => {
                    panic!("samsa never listened: {e}")
                }
                Err(_) => std::thread::sleep(std::time::Duration::from_millis(50)),
            }
        }
    }
}

/// Sends one request and reads its answer, size prefix included.
fn exchange(
    stream: &mut std::net::TcpStream,
    key: ApiKey,
    version: i16,
    body: &RequestKind,
) -> std::io::Result<Vec<u8>> {
    exchange_with(stream, key, version, body, None)
}

fn exchange_with(
    stream: &mut std::net::TcpStream,
    key: ApiKey,
    version: i16,
    body: &RequestKind,
    added: Option<&Record>,
) -> std::io::Result<Vec<u8>> {
    use std::io::{Read, Write};
    let f = frame_with(key, version, body, added);
    let mut out = (f.len() as i32).to_be_bytes().to_vec();
    out.extend_from_slice(&f);
    stream.write_all(&out)?;
    let mut size = [0u8; 4];
    stream.read_exact(&mut size)?;
    let mut answer = vec![0u8; i32::from_be_bytes(size) as usize];
    stream.read_exact(&mut answer)?;
    Ok([size.to_vec(), answer].concat())
}

#[test]
fn a_running_broker_sends_null_where_kafka_does_in_every_version() {
    use kafka_protocol::protocol::Decodable;
    let samsa = Running::start();
    let mut stream = samsa.connect();
    // The topic the requests name, created once the node has registered as a broker.
    let mut t = create_topics_request::CreatableTopic::default();
    t.name = name("t");
    t.num_partitions = 1;
    t.replication_factor = 1;
    let mut create = CreateTopicsRequest::default();
    create.topics = vec![t];
    create.timeout_ms = 10_000;
    let create = RequestKind::CreateTopics(create);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let topic_id = loop {
        let answer = exchange(&mut stream, ApiKey::CreateTopics, 7, &create).unwrap();
        let mut body = Bytes::copy_from_slice(&answer[4..]);
        let _ = ResponseHeader::decode(&mut body, 1).unwrap();
        let r = CreateTopicsResponse::decode(&mut body, 7).unwrap();
        if r.topics[0].error_code == 0 {
            break r.topics[0].topic_id;
        }
        assert!(std::time::Instant::now() < deadline, "no topic: {r:?}");
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    let mut not_null = Vec::new();
    for (key, version) in advertised() {
        let body = populated(key, version, topic_id);
        let added = added(key, version, topic_id);
        let answer = exchange_with(&mut stream, key, version, &body, added.as_ref())
            .unwrap_or_else(|e| panic!("{key:?} v{version}: {e}"));
        let mut empty = empty_where_kafka_sends_null(key, version, &answer);
        empty.dedup();
        if !empty.is_empty() {
            not_null.push(format!("{key:?} v{version}: {}", empty.join(", ")));
        }
    }
    assert!(
        not_null.is_empty(),
        "\"\" where Kafka sends null:\n{}",
        not_null.join("\n")
    );
}
