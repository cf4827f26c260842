//! Handlers under an authorizer: each refuses with Kafka's error code for the resource type
//! until an ACL allows the operation, and the `*_authorized_operations` fields follow the ACLs.
//! The broker is opened with `authorizer.class.name` set, no super user and
//! `allow.everyone.if.no.acl.found=false`; the caller is an unauthenticated connection
//! (`User:ANONYMOUS` from 127.0.0.1).

use std::rc::Rc;

use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use samsa_broker::acl::{
    AclBinding, AclOperation, PatternType, PermissionType, ResourceType, ANONYMOUS,
};
use samsa_broker::broker::Broker;
use samsa_broker::config::BrokerConfig;
use samsa_broker::controller::active::{ControllerReply, ControllerRequest};
use samsa_broker::handlers::{self, Connection, Ctx};
use samsa_broker::net::IoEngine;
use samsa_broker::testing::JoinedBroker;

struct Fixture {
    broker: JoinedBroker,
    _dir: tempfile::TempDir,
    conn: Rc<Connection>,
    header: RequestHeader,
}

impl Fixture {
    fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let flags = [
            ("log.dirs", dir.path().join("data").display().to_string()),
            (
                "authorizer.class.name",
                "org.apache.kafka.metadata.authorizer.StandardAuthorizer".into(),
            ),
            ("group.initial.rebalance.delay.ms", "0".into()),
        ]
        .map(|(k, v)| (k.to_string(), v));
        let config = BrokerConfig::load(None, vec![], flags).unwrap();
        let broker = samsa_broker::testing::open_joined(config).unwrap();
        broker
            .node
            .topics
            .create("t", 1, 1, Default::default())
            .unwrap();
        Fixture {
            _dir: dir,
            broker,
            conn: Rc::new(Connection::plaintext("127.0.0.1:40000".parse().unwrap())),
            header: RequestHeader::default(),
        }
    }

    fn ctx(&self, version: i16) -> Ctx<'_> {
        Ctx::new(&self.broker, &self.conn, &self.header, version)
    }

    /// An ACL for the anonymous caller from any host.
    fn allow(&self, rt: ResourceType, name: &str, op: AclOperation) {
        self.acl(rt, name, PatternType::Literal, op, PermissionType::Allow);
    }

    fn acl(
        &self,
        rt: ResourceType,
        name: &str,
        pattern: PatternType,
        op: AclOperation,
        permission: PermissionType,
    ) {
        // Through the controller, as CreateAcls does; the authorizer follows the image.
        let request = ControllerRequest::CreateAcls(vec![AclBinding {
            resource_type: rt,
            resource_name: name.into(),
            pattern_type: pattern,
            principal: ANONYMOUS.into(),
            host: "*".into(),
            operation: op,
            permission_type: permission,
        }]);
        let timeout = std::time::Duration::from_secs(10);
        match self.block_on(
            self.broker
                .node
                .controller
                .request_retrying(request, timeout),
        ) {
            Ok(ControllerReply::CreateAcls(results)) => assert_eq!(results[0].error_code, 0),
            other => panic!("{other:?}"),
        }
        assert!(self.block_on(samsa_broker::metadata_wait::caught_up(
            &self.broker.node,
            timeout
        )));
    }

    fn block_on<F: std::future::Future>(&self, f: F) -> F::Output {
        block_on(f)
    }
}

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    tokio::task::LocalSet::new().block_on(&rt, f)
}

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

fn metadata_request(topics: Option<&[&str]>) -> MetadataRequest {
    let mut r = MetadataRequest::default();
    r.topics = topics.map(|ts| {
        ts.iter()
            .map(|n| {
                let mut t = metadata_request::MetadataRequestTopic::default();
                t.name = Some(TopicName(s(n)));
                t
            })
            .collect()
    });
    r.allow_auto_topic_creation = true;
    r.include_topic_authorized_operations = true;
    r
}

const TOPIC_AUTHORIZATION_FAILED: i16 = 29;
const GROUP_AUTHORIZATION_FAILED: i16 = 30;
const CLUSTER_AUTHORIZATION_FAILED: i16 = 31;

#[test]
fn metadata_hides_topics_the_caller_may_not_describe_and_reports_its_operations() {
    let f = Fixture::new();
    let resp = f.block_on(handlers::metadata::handle(
        &f.ctx(12),
        metadata_request(Some(&["t"])),
    ));
    assert_eq!(resp.topics[0].error_code, TOPIC_AUTHORIZATION_FAILED);
    assert!(resp.topics[0].partitions.is_empty());
    let all = f.block_on(handlers::metadata::handle(
        &f.ctx(12),
        metadata_request(None),
    ));
    assert!(all.topics.is_empty(), "unauthorized topics are left out");

    f.allow(ResourceType::Topic, "t", AclOperation::Read);
    let resp = f.block_on(handlers::metadata::handle(
        &f.ctx(12),
        metadata_request(Some(&["t"])),
    ));
    assert_eq!(resp.topics[0].error_code, 0);
    assert_eq!(resp.topics[0].partitions.len(), 1);
    // READ, and the DESCRIBE it implies.
    assert_eq!(
        resp.topics[0].topic_authorized_operations,
        (1 << 3) | (1 << 8)
    );
    let all = f.block_on(handlers::metadata::handle(
        &f.ctx(12),
        metadata_request(None),
    ));
    assert_eq!(all.topics.len(), 1);
}

#[test]
fn auto_creation_needs_create_on_the_cluster_or_the_topic() {
    let f = Fixture::new();
    f.acl(
        ResourceType::Topic,
        "*",
        PatternType::Literal,
        AclOperation::Describe,
        PermissionType::Allow,
    );
    let resp = f.block_on(handlers::metadata::handle(
        &f.ctx(12),
        metadata_request(Some(&["new"])),
    ));
    assert_eq!(resp.topics[0].error_code, TOPIC_AUTHORIZATION_FAILED);
    assert!(f.broker.node.topics.get("new").is_none());

    f.acl(
        ResourceType::Topic,
        "ne",
        PatternType::Prefixed,
        AclOperation::Create,
        PermissionType::Allow,
    );
    let resp = f.block_on(handlers::metadata::handle(
        &f.ctx(12),
        metadata_request(Some(&["new"])),
    ));
    assert_eq!(resp.topics[0].error_code, 0);
    assert!(f.broker.node.topics.get("new").is_some());

    let resp = f.block_on(handlers::metadata::handle(
        &f.ctx(12),
        metadata_request(Some(&["other"])),
    ));
    assert_eq!(resp.topics[0].error_code, TOPIC_AUTHORIZATION_FAILED);
    f.allow(ResourceType::Cluster, "kafka-cluster", AclOperation::Create);
    let resp = f.block_on(handlers::metadata::handle(
        &f.ctx(12),
        metadata_request(Some(&["other"])),
    ));
    assert_eq!(resp.topics[0].error_code, 0);
}

#[test]
fn fetch_and_list_offsets_are_refused_per_partition_until_allowed() {
    let f = Fixture::new();
    let fetch = || {
        let mut p = fetch_request::FetchPartition::default();
        p.partition = 0;
        p.partition_max_bytes = 1 << 20;
        let mut t = fetch_request::FetchTopic::default();
        t.topic = TopicName(s("t"));
        t.partitions = vec![p];
        let mut r = FetchRequest::default();
        r.max_bytes = 1 << 20;
        r.topics = vec![t];
        let (resp, _) = f.block_on(handlers::fetch::handle(&f.ctx(12), r));
        resp.responses[0].partitions[0].error_code
    };
    assert_eq!(fetch(), TOPIC_AUTHORIZATION_FAILED);
    f.allow(ResourceType::Topic, "t", AclOperation::Read);
    assert_eq!(fetch(), 0);

    let mut lp = list_offsets_request::ListOffsetsPartition::default();
    lp.timestamp = -1;
    let mut lt = list_offsets_request::ListOffsetsTopic::default();
    lt.name = TopicName(s("t"));
    lt.partitions = vec![lp];
    let mut lr = ListOffsetsRequest::default();
    lr.topics = vec![lt];
    let resp = handlers::list_offsets::handle(&f.ctx(7), lr);
    assert_eq!(
        resp.topics[0].partitions[0].error_code, 0,
        "READ implies DESCRIBE"
    );
}

#[test]
fn a_deny_overrides_an_allow_for_its_operation_only() {
    let f = Fixture::new();
    f.acl(
        ResourceType::Topic,
        "*",
        PatternType::Literal,
        AclOperation::All,
        PermissionType::Allow,
    );
    f.acl(
        ResourceType::Topic,
        "t",
        PatternType::Prefixed,
        AclOperation::Read,
        PermissionType::Deny,
    );
    let mut p = fetch_request::FetchPartition::default();
    p.partition_max_bytes = 1 << 20;
    let mut t = fetch_request::FetchTopic::default();
    t.topic = TopicName(s("t"));
    t.partitions = vec![p];
    let mut r = FetchRequest::default();
    r.max_bytes = 1 << 20;
    r.topics = vec![t];
    let (resp, _) = f.block_on(handlers::fetch::handle(&f.ctx(12), r));
    assert_eq!(
        resp.responses[0].partitions[0].error_code,
        TOPIC_AUTHORIZATION_FAILED
    );
    let resp = f.block_on(handlers::metadata::handle(
        &f.ctx(12),
        metadata_request(Some(&["t"])),
    ));
    assert_eq!(resp.topics[0].error_code, 0, "DESCRIBE is not denied");
    let ops = resp.topics[0].topic_authorized_operations;
    assert_eq!(ops & (1 << 3), 0, "no READ");
    assert_ne!(ops & (1 << 4), 0, "WRITE");
}

#[test]
fn create_topics_needs_create_and_shows_configs_only_with_describe_configs() {
    let f = Fixture::new();
    let create = |name: &str| {
        let mut t = create_topics_request::CreatableTopic::default();
        t.name = TopicName(s(name));
        t.num_partitions = 1;
        t.replication_factor = 1;
        let mut r = CreateTopicsRequest::default();
        r.topics = vec![t];
        f.block_on(handlers::create_topics::handle(&f.ctx(7), r))
            .topics
            .remove(0)
    };
    let r = create("a");
    assert_eq!(r.error_code, TOPIC_AUTHORIZATION_FAILED);
    assert!(f.broker.node.topics.get("a").is_none());

    f.allow(ResourceType::Topic, "a", AclOperation::Create);
    let r = create("a");
    assert_eq!(r.error_code, 0);
    assert_eq!(r.topic_config_error_code, TOPIC_AUTHORIZATION_FAILED);
    assert!(r.configs.unwrap_or_default().is_empty());
    assert_eq!(r.num_partitions, -1);

    f.allow(ResourceType::Cluster, "kafka-cluster", AclOperation::Create);
    f.allow(ResourceType::Topic, "b", AclOperation::AlterConfigs);
    let r = create("b");
    assert_eq!(r.error_code, 0);
    assert_eq!(
        r.topic_config_error_code, 0,
        "ALTER_CONFIGS implies DESCRIBE_CONFIGS"
    );
    assert!(!r.configs.unwrap_or_default().is_empty());
    assert_eq!(r.num_partitions, 1);
}

#[test]
fn config_apis_refuse_topics_and_the_broker_with_their_own_codes() {
    let f = Fixture::new();
    let describe = |rt: i8, name: &str| {
        let mut res = describe_configs_request::DescribeConfigsResource::default();
        res.resource_type = rt;
        res.resource_name = s(name);
        res.configuration_keys = None;
        let mut r = DescribeConfigsRequest::default();
        r.resources = vec![res];
        handlers::describe_configs::handle(&f.ctx(4), r)
            .results
            .remove(0)
    };
    assert_eq!(describe(2, "t").error_code, TOPIC_AUTHORIZATION_FAILED);
    assert_eq!(describe(4, "1").error_code, CLUSTER_AUTHORIZATION_FAILED);
    f.allow(ResourceType::Topic, "t", AclOperation::DescribeConfigs);
    let r = describe(2, "t");
    assert_eq!(r.error_code, 0);
    assert!(!r.configs.is_empty());

    let mut res = incremental_alter_configs_request::AlterConfigsResource::default();
    res.resource_type = 2;
    res.resource_name = s("t");
    let mut r = IncrementalAlterConfigsRequest::default();
    r.resources = vec![res];
    let resp = f.block_on(handlers::incremental_alter_configs::handle(&f.ctx(1), r));
    assert_eq!(resp.responses[0].error_code, TOPIC_AUTHORIZATION_FAILED);
}

#[test]
fn group_and_broker_configs_and_scram_credentials_need_their_acls() {
    let f = Fixture::new();
    let group_timeout = || {
        let mut c = incremental_alter_configs_request::AlterableConfig::default();
        c.name = s("consumer.session.timeout.ms");
        c.value = Some(s("50000"));
        let mut res = incremental_alter_configs_request::AlterConfigsResource::default();
        res.resource_type = 32;
        res.resource_name = s("g");
        res.configs = vec![c];
        let mut r = IncrementalAlterConfigsRequest::default();
        r.resources = vec![res];
        f.block_on(handlers::incremental_alter_configs::handle(&f.ctx(1), r))
            .responses[0]
            .error_code
    };
    let broker_threads = || {
        let mut c = alter_configs_request::AlterableConfig::default();
        c.name = s("background.threads");
        c.value = Some(s("9"));
        let mut res = alter_configs_request::AlterConfigsResource::default();
        res.resource_type = 4;
        res.resource_name = s("");
        res.configs = vec![c];
        let mut r = AlterConfigsRequest::default();
        r.resources = vec![res];
        f.block_on(handlers::alter_configs::handle(&f.ctx(2), r))
            .responses[0]
            .error_code
    };
    let scram_upsert = || {
        let mut u = alter_user_scram_credentials_request::ScramCredentialUpsertion::default();
        u.name = s("alice");
        u.mechanism = 1;
        u.iterations = 4096;
        u.salted_password = bytes::Bytes::from_static(&[1; 32]);
        let mut r = AlterUserScramCredentialsRequest::default();
        r.upsertions = vec![u];
        let resp = f.block_on(handlers::alter_user_scram_credentials::handle(&f.ctx(0), r));
        (resp.results[0].user.to_string(), resp.results[0].error_code)
    };
    let scram_describe = || {
        let r = DescribeUserScramCredentialsRequest::default();
        let resp = handlers::describe_user_scram_credentials::handle(&f.ctx(0), r);
        (resp.error_code, resp.results.len())
    };
    assert_eq!(group_timeout(), GROUP_AUTHORIZATION_FAILED);
    assert_eq!(broker_threads(), CLUSTER_AUTHORIZATION_FAILED);
    assert_eq!(
        scram_upsert(),
        ("alice".into(), CLUSTER_AUTHORIZATION_FAILED)
    );
    assert_eq!(scram_describe(), (CLUSTER_AUTHORIZATION_FAILED, 0));

    f.allow(ResourceType::Group, "g", AclOperation::AlterConfigs);
    f.allow(
        ResourceType::Cluster,
        "kafka-cluster",
        AclOperation::AlterConfigs,
    );
    f.allow(ResourceType::Cluster, "kafka-cluster", AclOperation::Alter);
    assert_eq!(group_timeout(), 0);
    assert_eq!(broker_threads(), 0);
    assert_eq!(scram_upsert(), ("alice".into(), 0));
    // ALTER on the cluster implies DESCRIBE.
    assert_eq!(scram_describe(), (0, 1));
}

#[test]
fn group_apis_need_the_group_acl() {
    let f = Fixture::new();
    let mut fc = FindCoordinatorRequest::default();
    fc.coordinator_keys = vec![s("g")];
    let resp = f.block_on(handlers::find_coordinator::handle(&f.ctx(4), fc.clone()));
    assert_eq!(resp.coordinators[0].error_code, GROUP_AUTHORIZATION_FAILED);

    let mut join = JoinGroupRequest::default();
    join.group_id = GroupId(s("g"));
    join.session_timeout_ms = 10_000;
    join.rebalance_timeout_ms = 10_000;
    join.protocol_type = s("consumer");
    let resp = f.block_on(handlers::join_group::handle(&f.ctx(5), join));
    assert_eq!(resp.error_code, GROUP_AUTHORIZATION_FAILED);
    assert_eq!(resp.generation_id, -1);

    let mut of = OffsetFetchRequest::default();
    let mut g = offset_fetch_request::OffsetFetchRequestGroup::default();
    g.group_id = GroupId(s("g"));
    g.topics = None;
    of.groups = vec![g];
    let resp = handlers::offset_fetch::handle(&f.ctx(8), of.clone());
    assert_eq!(resp.groups[0].error_code, GROUP_AUTHORIZATION_FAILED);

    let mut dg = DescribeGroupsRequest::default();
    dg.groups = vec![GroupId(s("g"))];
    dg.include_authorized_operations = true;
    let resp = handlers::describe_groups::handle(&f.ctx(5), dg.clone());
    assert_eq!(resp.groups[0].error_code, GROUP_AUTHORIZATION_FAILED);

    f.allow(ResourceType::Group, "g", AclOperation::Read);
    let resp = f.block_on(handlers::find_coordinator::handle(&f.ctx(4), fc));
    assert_eq!(resp.coordinators[0].error_code, 0, "READ implies DESCRIBE");
    let resp = handlers::offset_fetch::handle(&f.ctx(8), of);
    assert_eq!(resp.groups[0].error_code, 0);
    let resp = handlers::describe_groups::handle(&f.ctx(5), dg);
    assert_eq!(resp.groups[0].error_code, 0);
    assert_eq!(
        resp.groups[0].authorized_operations,
        (1 << 3) | (1 << 8),
        "READ and DESCRIBE of the group's READ, DESCRIBE, DELETE, DESCRIBE_CONFIGS, ALTER_CONFIGS"
    );
}

#[test]
fn producer_ids_need_idempotent_write_or_write_on_some_topic() {
    let f = Fixture::new();
    let init = |transactional_id: Option<&str>| {
        let mut r = InitProducerIdRequest::default();
        r.transactional_id = transactional_id.map(|id| TransactionalId(s(id)));
        r.transaction_timeout_ms = 60_000;
        r.producer_id = ProducerId(-1);
        r.producer_epoch = -1;
        f.block_on(handlers::init_producer_id::handle(&f.ctx(4), r))
            .error_code
    };
    assert_eq!(init(None), CLUSTER_AUTHORIZATION_FAILED);
    assert_eq!(
        init(Some("app")),
        ResponseError::TransactionalIdAuthorizationFailed.code()
    );
    f.allow(ResourceType::Topic, "t", AclOperation::Write);
    assert_eq!(init(None), 0);
    f.allow(ResourceType::TransactionalId, "app", AclOperation::Write);
    // As a client does, the coordinator is found (and its topic created) first.
    let spec = f.broker.txn.state_topic_spec();
    f.block_on(samsa_broker::internal_topics::ensure(&f.broker.node, &spec))
        .unwrap();
    assert_eq!(init(Some("app")), 0);
}

#[test]
fn cluster_operations_and_the_acl_apis_follow_the_cluster_acls() {
    let f = Fixture::new();
    let mut dc = DescribeClusterRequest::default();
    dc.include_cluster_authorized_operations = true;
    let resp = handlers::describe_cluster::handle(&f.ctx(1), dc.clone());
    assert_eq!(resp.cluster_authorized_operations, 0);

    let mut creation = create_acls_request::AclCreation::default();
    creation.resource_type = ResourceType::Topic.code();
    creation.resource_name = s("t");
    creation.resource_pattern_type = PatternType::Literal.code();
    creation.principal = s("User:alice");
    creation.host = s("*");
    creation.operation = AclOperation::Read.code();
    creation.permission_type = PermissionType::Allow.code();
    let mut ca = CreateAclsRequest::default();
    ca.creations = vec![creation];
    let resp = f.block_on(handlers::create_acls::handle(&f.ctx(3), ca.clone()));
    assert_eq!(resp.results[0].error_code, CLUSTER_AUTHORIZATION_FAILED);
    let resp = handlers::describe_acls::handle(&f.ctx(3), any_filter());
    assert_eq!(resp.error_code, CLUSTER_AUTHORIZATION_FAILED);

    f.allow(ResourceType::Cluster, "kafka-cluster", AclOperation::Alter);
    let resp = handlers::describe_cluster::handle(&f.ctx(1), dc);
    // ALTER, and the DESCRIBE it implies.
    assert_eq!(resp.cluster_authorized_operations, (1 << 7) | (1 << 8));
    let resp = f.block_on(handlers::create_acls::handle(&f.ctx(3), ca));
    assert_eq!(resp.results[0].error_code, 0);
    let resp = handlers::describe_acls::handle(&f.ctx(3), any_filter());
    assert_eq!(resp.error_code, 0);
    let names: Vec<(i8, String)> = resp
        .resources
        .iter()
        .map(|r| (r.resource_type, r.resource_name.to_string()))
        .collect();
    assert_eq!(
        names,
        vec![(2, "t".to_string()), (4, "kafka-cluster".to_string())],
        "grouped by resource, topics (2) before the cluster (4)"
    );
}

fn any_filter() -> DescribeAclsRequest {
    let mut r = DescribeAclsRequest::default();
    r.resource_type_filter = ResourceType::Any.code();
    r.resource_name_filter = None;
    r.principal_filter = None;
    r.host_filter = None;
    r.pattern_type_filter = PatternType::Any.code();
    r.operation = AclOperation::Any.code();
    r.permission_type = PermissionType::Any.code();
    r
}

#[test]
fn without_an_authorizer_the_acl_apis_answer_security_disabled() {
    let dir = tempfile::tempdir().unwrap();
    let flags = vec![(
        "log.dirs".to_string(),
        dir.path().join("data").display().to_string(),
    )];
    let broker = Broker::open(
        BrokerConfig::load(None, vec![], flags).unwrap(),
        IoEngine::Epoll,
    )
    .unwrap();
    let conn = Rc::new(Connection::plaintext("127.0.0.1:1".parse().unwrap()));
    let header = RequestHeader::default();
    let ctx = Ctx::new(&broker, &conn, &header, 3);
    let resp = handlers::describe_acls::handle(&ctx, any_filter());
    assert_eq!(resp.error_code, ResponseError::SecurityDisabled.code());
    assert_eq!(
        resp.error_message.as_deref(),
        Some("No Authorizer is configured on the broker")
    );
    let mut ca = CreateAclsRequest::default();
    ca.creations = vec![Default::default()];
    let resp = block_on(handlers::create_acls::handle(&ctx, ca));
    assert_eq!(
        resp.results[0].error_code,
        ResponseError::SecurityDisabled.code()
    );
    let mut da = DeleteAclsRequest::default();
    da.filters = vec![Default::default()];
    let resp = block_on(handlers::delete_acls::handle(&ctx, da));
    assert_eq!(
        resp.filter_results[0].error_code,
        ResponseError::SecurityDisabled.code()
    );
    // Without an authorizer everything is allowed, and reported as such.
    let mut dc = DescribeClusterRequest::default();
    dc.include_cluster_authorized_operations = true;
    let resp = handlers::describe_cluster::handle(&ctx, dc);
    assert_eq!(resp.cluster_authorized_operations, 8096);
}

#[test]
fn single_node_admin_apis_need_their_cluster_and_topic_acls() {
    let f = Fixture::new();
    let elect = || {
        let mut t = elect_leaders_request::TopicPartitions::default();
        t.topic = TopicName(s("t"));
        t.partitions = vec![0];
        let mut r = ElectLeadersRequest::default();
        r.topic_partitions = Some(vec![t]);
        let resp = f.block_on(handlers::elect_leaders::handle(&f.ctx(1), r));
        let p = &resp.replica_election_results[0].partition_result[0];
        (resp.error_code, p.error_code)
    };
    let reassign = || {
        let mut p = alter_partition_reassignments_request::ReassignablePartition::default();
        p.replicas = Some(vec![BrokerId(1)]);
        let mut t = alter_partition_reassignments_request::ReassignableTopic::default();
        t.name = TopicName(s("t"));
        t.partitions = vec![p];
        let mut r = AlterPartitionReassignmentsRequest::default();
        r.topics = vec![t];
        f.block_on(handlers::alter_partition_reassignments::handle(
            &f.ctx(0),
            r,
        ))
        .error_code
    };
    let list_reassignments = || {
        let r = ListPartitionReassignmentsRequest::default();
        handlers::list_partition_reassignments::handle(&f.ctx(0), r).error_code
    };
    let move_dir = || {
        let mut t = alter_replica_log_dirs_request::AlterReplicaLogDirTopic::default();
        t.name = TopicName(s("t"));
        t.partitions = vec![0];
        let mut d = alter_replica_log_dirs_request::AlterReplicaLogDir::default();
        d.path = s("/nowhere");
        d.topics = vec![t];
        let mut r = AlterReplicaLogDirsRequest::default();
        r.dirs = vec![d];
        handlers::alter_replica_log_dirs::handle(&f.ctx(1), r).results[0].partitions[0].error_code
    };
    let config_resources = || {
        let r = ListConfigResourcesRequest::default();
        handlers::list_config_resources::handle(&f.ctx(1), r).error_code
    };
    let describe_topic = || {
        let mut t = describe_topic_partitions_request::TopicRequest::default();
        t.name = TopicName(s("t"));
        let mut r = DescribeTopicPartitionsRequest::default();
        r.topics = vec![t];
        r.response_partition_limit = 10;
        let resp = handlers::describe_topic_partitions::handle(&f.ctx(0), r);
        (
            resp.topics[0].error_code,
            resp.topics[0].topic_authorized_operations,
        )
    };
    let quorum = || {
        let mut p = describe_quorum_request::PartitionData::default();
        p.partition_index = 0;
        let mut t = describe_quorum_request::TopicData::default();
        t.topic_name = TopicName(s("__cluster_metadata"));
        t.partitions = vec![p];
        let mut r = DescribeQuorumRequest::default();
        r.topics = vec![t];
        f.block_on(handlers::describe_quorum::handle(&f.ctx(2), r))
            .error_code
    };
    let add_voter = || {
        let mut r = AddRaftVoterRequest::default();
        r.voter_id = 9;
        f.block_on(handlers::add_raft_voter::handle(&f.ctx(2), r))
            .error_code
    };
    let remove_voter = || {
        let mut r = RemoveRaftVoterRequest::default();
        r.voter_id = 1;
        f.block_on(handlers::remove_raft_voter::handle(&f.ctx(2), r))
            .error_code
    };
    let all_topics = || {
        let mut r = DescribeTopicPartitionsRequest::default();
        r.response_partition_limit = 10;
        handlers::describe_topic_partitions::handle(&f.ctx(0), r)
            .topics
            .len()
    };

    let refused = CLUSTER_AUTHORIZATION_FAILED;
    assert_eq!(elect(), (refused, refused));
    assert_eq!(reassign(), refused);
    assert_eq!(list_reassignments(), refused);
    assert_eq!(move_dir(), refused);
    assert_eq!(config_resources(), refused);
    assert_eq!(quorum(), refused);
    assert_eq!(add_voter(), refused);
    assert_eq!(remove_voter(), refused);
    assert_eq!(describe_topic().0, TOPIC_AUTHORIZATION_FAILED);
    assert_eq!(
        all_topics(),
        0,
        "the all-topics listing leaves out what may not be described"
    );

    f.allow(ResourceType::Cluster, "kafka-cluster", AclOperation::Alter);
    f.allow(
        ResourceType::Cluster,
        "kafka-cluster",
        AclOperation::DescribeConfigs,
    );
    f.allow(ResourceType::Topic, "t", AclOperation::Describe);
    // Authorized, each gets its single-node answer.
    assert_eq!(elect(), (0, ResponseError::ElectionNotNeeded.code()));
    assert_eq!(reassign(), 0);
    assert_eq!(
        list_reassignments(),
        0,
        "ALTER on the cluster implies DESCRIBE"
    );
    assert_eq!(move_dir(), ResponseError::LogDirNotFound.code());
    assert_eq!(config_resources(), 0);
    assert_eq!(quorum(), 0);
    // Past the ACLs, a fixed voter set refuses the change itself.
    assert_eq!(
        add_voter(),
        ResponseError::InvalidRequest.code(),
        "no listener given"
    );
    assert_eq!(remove_voter(), ResponseError::UnsupportedVersion.code());
    assert_eq!(describe_topic(), (0, 1 << 8), "DESCRIBE only");
    assert_eq!(all_topics(), 1);
}
