//! ACLs through librdkafka's admin API (CreateAcls, DescribeAcls, DeleteAcls: KIP-140; the
//! rdkafka crate does not wrap them, so this calls librdkafka's C functions on the admin
//! client's handle) and their enforcement on a real producer and consumer. These connections
//! are PLAINTEXT, so `User:ANONYMOUS`; ACLs on authenticated principals (SASL users, client
//! certificates) are in security.rs.

mod common;

use std::ffi::{c_char, CStr, CString};
use std::ptr;
use std::time::{Duration, Instant};

use common::*;
use kafka_protocol::messages::create_acls_request::AclCreation;
use kafka_protocol::messages::{
    ApiKey, CreateAclsRequest, CreateAclsResponse, DescribeAclsRequest, DescribeAclsResponse,
};
use kafka_protocol::protocol::StrBytes;
use rdkafka::admin::AdminClient;
use rdkafka::bindings as rd;
use rdkafka::client::DefaultClientContext;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::topic_partition_list::{Offset, TopicPartitionList};

use rd::rd_kafka_AclOperation_t as Op;
use rd::rd_kafka_AclPermissionType_t as Perm;
use rd::rd_kafka_ResourcePatternType_t as Pattern;
use rd::rd_kafka_ResourceType_t as Res;

const AUTHORIZER: &str = "org.apache.kafka.metadata.authorizer.StandardAuthorizer";
const ANONYMOUS: &str = "User:ANONYMOUS";

/// An ACL binding, or a filter (`None` fields and the ANY values match everything).
#[derive(Clone, Copy)]
struct Acl<'a> {
    restype: Res,
    name: Option<&'a str>,
    pattern: Pattern,
    principal: Option<&'a str>,
    host: Option<&'a str>,
    op: Op,
    perm: Perm,
}

fn acl<'a>(
    restype: Res,
    name: &'a str,
    pattern: Pattern,
    principal: &'a str,
    op: Op,
    perm: Perm,
) -> Acl<'a> {
    Acl {
        restype,
        name: Some(name),
        pattern,
        principal: Some(principal),
        host: Some("*"),
        op,
        perm,
    }
}

/// The filter that matches every binding.
fn any<'a>() -> Acl<'a> {
    Acl {
        restype: Res::RD_KAFKA_RESOURCE_ANY,
        name: None,
        pattern: Pattern::RD_KAFKA_RESOURCE_PATTERN_ANY,
        principal: None,
        host: None,
        op: Op::RD_KAFKA_ACL_OPERATION_ANY,
        perm: Perm::RD_KAFKA_ACL_PERMISSION_TYPE_ANY,
    }
}

type Refusal = (RDKafkaErrorCode, String);

fn cstr(p: *const c_char) -> String {
    if p.is_null() {
        return String::new();
    }
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

fn opt_cstring(s: Option<&str>) -> Option<CString> {
    s.map(|s| CString::new(s).unwrap())
}

fn ptr_of(s: &Option<CString>) -> *const c_char {
    s.as_ref().map_or(ptr::null(), |c| c.as_ptr())
}

/// A librdkafka AclBinding (or AclBindingFilter); the caller destroys it.
fn new_binding(a: &Acl<'_>, filter: bool) -> *mut rd::rd_kafka_AclBinding_t {
    let (name, principal, host) = (
        opt_cstring(a.name),
        opt_cstring(a.principal),
        opt_cstring(a.host),
    );
    let mut err = [0 as c_char; 512];
    let b = unsafe {
        let new = if filter {
            rd::rd_kafka_AclBindingFilter_new
        } else {
            rd::rd_kafka_AclBinding_new
        };
        new(
            a.restype,
            ptr_of(&name),
            a.pattern,
            ptr_of(&principal),
            ptr_of(&host),
            a.op,
            a.perm,
            err.as_mut_ptr(),
            err.len(),
        )
    };
    assert!(
        !b.is_null(),
        "librdkafka refused the binding: {}",
        cstr(err.as_ptr())
    );
    b
}

/// A binding as a line: `TOPIC:LITERAL:orders User:alice@* READ ALLOW`.
fn describe_binding(b: *const rd::rd_kafka_AclBinding_t) -> String {
    unsafe {
        format!(
            "{}:{}:{} {}@{} {} {}",
            cstr(rd::rd_kafka_ResourceType_name(
                rd::rd_kafka_AclBinding_restype(b)
            )),
            cstr(rd::rd_kafka_ResourcePatternType_name(
                rd::rd_kafka_AclBinding_resource_pattern_type(b)
            )),
            cstr(rd::rd_kafka_AclBinding_name(b)),
            cstr(rd::rd_kafka_AclBinding_principal(b)),
            cstr(rd::rd_kafka_AclBinding_host(b)),
            cstr(rd::rd_kafka_AclOperation_name(
                rd::rd_kafka_AclBinding_operation(b)
            )),
            cstr(rd::rd_kafka_AclPermissionType_name(
                rd::rd_kafka_AclBinding_permission_type(b)
            )),
        )
    }
}

fn error_of(e: *const rd::rd_kafka_error_t) -> Result<(), Refusal> {
    if e.is_null() {
        return Ok(());
    }
    unsafe {
        Err((
            RDKafkaErrorCode::from(rd::rd_kafka_error_code(e)),
            cstr(rd::rd_kafka_error_string(e)),
        ))
    }
}

/// Runs one admin call on its own queue and hands its result event to `read`.
fn admin_call<T>(
    admin: &AdminClient<DefaultClientContext>,
    call: impl FnOnce(*mut rd::rd_kafka_t, *mut rd::rd_kafka_queue_t),
    read: impl FnOnce(*mut rd::rd_kafka_event_t) -> T,
) -> T {
    let rk = admin.inner().native_ptr();
    unsafe {
        let queue = rd::rd_kafka_queue_new(rk);
        call(rk, queue);
        let event = rd::rd_kafka_queue_poll(queue, 30_000);
        assert!(!event.is_null(), "no admin result within 30 s");
        let out = read(event);
        rd::rd_kafka_event_destroy(event);
        rd::rd_kafka_queue_destroy(queue);
        out
    }
}

/// The request-level error of an admin result, if any.
fn event_error(event: *mut rd::rd_kafka_event_t) -> Result<(), Refusal> {
    unsafe {
        let code = RDKafkaErrorCode::from(rd::rd_kafka_event_error(event));
        if code == RDKafkaErrorCode::NoError {
            Ok(())
        } else {
            Err((code, cstr(rd::rd_kafka_event_error_string(event))))
        }
    }
}

fn create_acls(
    admin: &AdminClient<DefaultClientContext>,
    acls: &[Acl<'_>],
) -> Vec<Result<(), Refusal>> {
    let mut bindings: Vec<_> = acls.iter().map(|a| new_binding(a, false)).collect();
    let out = admin_call(
        admin,
        |rk, q| unsafe {
            rd::rd_kafka_CreateAcls(rk, bindings.as_mut_ptr(), bindings.len(), ptr::null(), q)
        },
        |event| {
            if let Err(e) = event_error(event) {
                return vec![Err(e); acls.len()];
            }
            unsafe {
                let result = rd::rd_kafka_event_CreateAcls_result(event);
                let mut n = 0;
                let results = rd::rd_kafka_CreateAcls_result_acls(result, &mut n);
                (0..n)
                    .map(|i| error_of(rd::rd_kafka_acl_result_error(*results.add(i))))
                    .collect()
            }
        },
    );
    for b in bindings {
        unsafe { rd::rd_kafka_AclBinding_destroy(b) };
    }
    out
}

fn create_ok(admin: &AdminClient<DefaultClientContext>, acls: &[Acl<'_>]) {
    for (i, r) in create_acls(admin, acls).into_iter().enumerate() {
        r.unwrap_or_else(|e| panic!("creating ACL {i} failed: {e:?}"));
    }
}

fn describe_acls(
    admin: &AdminClient<DefaultClientContext>,
    filter: &Acl<'_>,
) -> Result<Vec<String>, Refusal> {
    let f = new_binding(filter, true);
    let out = admin_call(
        admin,
        |rk, q| unsafe { rd::rd_kafka_DescribeAcls(rk, f, ptr::null(), q) },
        |event| {
            event_error(event)?;
            unsafe {
                let result = rd::rd_kafka_event_DescribeAcls_result(event);
                let mut n = 0;
                let acls = rd::rd_kafka_DescribeAcls_result_acls(result, &mut n);
                let mut lines: Vec<String> =
                    (0..n).map(|i| describe_binding(*acls.add(i))).collect();
                lines.sort();
                Ok(lines)
            }
        },
    );
    unsafe { rd::rd_kafka_AclBinding_destroy(f) };
    out
}

fn delete_acls(
    admin: &AdminClient<DefaultClientContext>,
    filters: &[Acl<'_>],
) -> Vec<Result<Vec<String>, Refusal>> {
    let mut fs: Vec<_> = filters.iter().map(|a| new_binding(a, true)).collect();
    let out = admin_call(
        admin,
        |rk, q| unsafe { rd::rd_kafka_DeleteAcls(rk, fs.as_mut_ptr(), fs.len(), ptr::null(), q) },
        |event| {
            if let Err(e) = event_error(event) {
                return vec![Err(e); filters.len()];
            }
            unsafe {
                let result = rd::rd_kafka_event_DeleteAcls_result(event);
                let mut n = 0;
                let responses = rd::rd_kafka_DeleteAcls_result_responses(result, &mut n);
                (0..n)
                    .map(|i| {
                        let r = *responses.add(i);
                        error_of(rd::rd_kafka_DeleteAcls_result_response_error(r))?;
                        let mut m = 0;
                        let acls = rd::rd_kafka_DeleteAcls_result_response_matching_acls(r, &mut m);
                        let mut lines: Vec<String> =
                            (0..m).map(|j| describe_binding(*acls.add(j))).collect();
                        lines.sort();
                        Ok(lines)
                    })
                    .collect()
            }
        },
    );
    for f in fs {
        unsafe { rd::rd_kafka_AclBinding_destroy(f) };
    }
    out
}

fn lines(v: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = v.iter().map(|s| s.to_string()).collect();
    v.sort();
    v
}

fn authorizer_options() -> BrokerOptions {
    BrokerOptions::default().prop("authorizer.class.name", AUTHORIZER)
}

#[test]
fn without_an_authorizer_the_acl_apis_answer_security_disabled() {
    let broker = Broker::start();
    let admin = admin(&broker);
    let read_orders = acl(
        Res::RD_KAFKA_RESOURCE_TOPIC,
        "orders",
        Pattern::RD_KAFKA_RESOURCE_PATTERN_LITERAL,
        "User:alice",
        Op::RD_KAFKA_ACL_OPERATION_READ,
        Perm::RD_KAFKA_ACL_PERMISSION_TYPE_ALLOW,
    );
    let created = create_acls(&admin, &[read_orders]);
    assert!(
        matches!(&created[0], Err((RDKafkaErrorCode::SecurityDisabled, _))),
        "{created:?}"
    );
    // librdkafka drops DescribeAcls' top-level error (it answers an empty list): read the wire.
    let described = describe_error(&broker);
    assert_eq!(
        described,
        (54, "No Authorizer is configured on the broker".to_string())
    );
    let deleted = delete_acls(&admin, &[any()]);
    assert!(
        matches!(&deleted[0], Err((RDKafkaErrorCode::SecurityDisabled, _))),
        "{deleted:?}"
    );
}

#[test]
fn acls_are_created_described_through_filters_and_deleted() {
    // The anonymous admin is a super user: the ACLs below constrain others.
    let broker = Broker::start_with(authorizer_options().prop("super.users", ANONYMOUS));
    let admin = admin(&broker);
    use Op::*;
    use Pattern::*;
    use Perm::*;
    use Res::*;
    create_ok(
        &admin,
        &[
            acl(
                RD_KAFKA_RESOURCE_TOPIC,
                "orders",
                RD_KAFKA_RESOURCE_PATTERN_LITERAL,
                "User:alice",
                RD_KAFKA_ACL_OPERATION_READ,
                RD_KAFKA_ACL_PERMISSION_TYPE_ALLOW,
            ),
            acl(
                RD_KAFKA_RESOURCE_TOPIC,
                "pay",
                RD_KAFKA_RESOURCE_PATTERN_PREFIXED,
                "User:bob",
                RD_KAFKA_ACL_OPERATION_WRITE,
                RD_KAFKA_ACL_PERMISSION_TYPE_DENY,
            ),
            acl(
                RD_KAFKA_RESOURCE_TOPIC,
                "*",
                RD_KAFKA_RESOURCE_PATTERN_LITERAL,
                "User:*",
                RD_KAFKA_ACL_OPERATION_DESCRIBE,
                RD_KAFKA_ACL_PERMISSION_TYPE_ALLOW,
            ),
            acl(
                RD_KAFKA_RESOURCE_GROUP,
                "billing",
                RD_KAFKA_RESOURCE_PATTERN_LITERAL,
                "User:bob",
                RD_KAFKA_ACL_OPERATION_ALL,
                RD_KAFKA_ACL_PERMISSION_TYPE_ALLOW,
            ),
            acl(
                RD_KAFKA_RESOURCE_BROKER,
                "kafka-cluster",
                RD_KAFKA_RESOURCE_PATTERN_LITERAL,
                "User:ops",
                RD_KAFKA_ACL_OPERATION_ALTER,
                RD_KAFKA_ACL_PERMISSION_TYPE_ALLOW,
            ),
            // The same binding twice: created once, both succeed.
            acl(
                RD_KAFKA_RESOURCE_TOPIC,
                "orders",
                RD_KAFKA_RESOURCE_PATTERN_LITERAL,
                "User:alice",
                RD_KAFKA_ACL_OPERATION_READ,
                RD_KAFKA_ACL_PERMISSION_TYPE_ALLOW,
            ),
        ],
    );
    let all = lines(&[
        "TOPIC:LITERAL:orders User:alice@* READ ALLOW",
        "TOPIC:PREFIXED:pay User:bob@* WRITE DENY",
        "TOPIC:LITERAL:* User:*@* DESCRIBE ALLOW",
        "GROUP:LITERAL:billing User:bob@* ALL ALLOW",
        "BROKER:LITERAL:kafka-cluster User:ops@* ALTER ALLOW",
    ]);
    assert_eq!(describe_acls(&admin, &any()).unwrap(), all);

    // MATCH: what applies to topic "payments": the prefix and the wildcard.
    let mut matching = any();
    matching.restype = RD_KAFKA_RESOURCE_TOPIC;
    matching.name = Some("payments");
    matching.pattern = RD_KAFKA_RESOURCE_PATTERN_MATCH;
    assert_eq!(
        describe_acls(&admin, &matching).unwrap(),
        lines(&[
            "TOPIC:PREFIXED:pay User:bob@* WRITE DENY",
            "TOPIC:LITERAL:* User:*@* DESCRIBE ALLOW",
        ])
    );
    // A concrete pattern type compares the name exactly.
    let mut literal = matching;
    literal.pattern = RD_KAFKA_RESOURCE_PATTERN_LITERAL;
    assert_eq!(
        describe_acls(&admin, &literal).unwrap(),
        Vec::<String>::new()
    );
    // By principal, across resource types.
    let mut bob = any();
    bob.principal = Some("User:bob");
    assert_eq!(
        describe_acls(&admin, &bob).unwrap(),
        lines(&[
            "TOPIC:PREFIXED:pay User:bob@* WRITE DENY",
            "GROUP:LITERAL:billing User:bob@* ALL ALLOW",
        ])
    );
    // By resource type and permission.
    let mut allowed_topics = any();
    allowed_topics.restype = RD_KAFKA_RESOURCE_TOPIC;
    allowed_topics.perm = RD_KAFKA_ACL_PERMISSION_TYPE_ALLOW;
    assert_eq!(
        describe_acls(&admin, &allowed_topics).unwrap(),
        lines(&[
            "TOPIC:LITERAL:orders User:alice@* READ ALLOW",
            "TOPIC:LITERAL:* User:*@* DESCRIBE ALLOW",
        ])
    );

    // Each filter reports what it deleted; one that matches nothing deletes nothing.
    let mut denies = any();
    denies.perm = RD_KAFKA_ACL_PERMISSION_TYPE_DENY;
    let mut nobody = any();
    nobody.principal = Some("User:nobody");
    let deleted = delete_acls(&admin, &[bob, nobody]);
    assert_eq!(
        deleted[0].as_ref().unwrap(),
        &lines(&[
            "TOPIC:PREFIXED:pay User:bob@* WRITE DENY",
            "GROUP:LITERAL:billing User:bob@* ALL ALLOW",
        ])
    );
    assert_eq!(deleted[1].as_ref().unwrap(), &Vec::<String>::new());
    assert_eq!(
        delete_acls(&admin, &[denies])[0].as_ref().unwrap(),
        &Vec::<String>::new(),
        "bob's DENY is already gone"
    );
    assert_eq!(
        describe_acls(&admin, &any()).unwrap(),
        lines(&[
            "TOPIC:LITERAL:orders User:alice@* READ ALLOW",
            "TOPIC:LITERAL:* User:*@* DESCRIBE ALLOW",
            "BROKER:LITERAL:kafka-cluster User:ops@* ALTER ALLOW",
        ])
    );
}

/// The ACL requests librdkafka refuses to build: sent on the wire, each bad creation gets
/// INVALID_REQUEST and the valid one beside it is created.
#[test]
fn invalid_creations_get_invalid_request_and_the_valid_ones_are_created() {
    let broker = Broker::start_with(authorizer_options().prop("super.users", ANONYMOUS));
    let valid = {
        let mut c = AclCreation::default();
        c.resource_type = 2; // TOPIC
        c.resource_name = StrBytes::from_static_str("orders");
        c.resource_pattern_type = 3; // LITERAL
        c.principal = StrBytes::from_static_str("User:alice");
        c.host = StrBytes::from_static_str("*");
        c.operation = 3; // READ
        c.permission_type = 3; // ALLOW
        c
    };
    let mut match_pattern = valid.clone();
    match_pattern.resource_pattern_type = 2; // MATCH: a filter value
    let mut unknown_operation = valid.clone();
    unknown_operation.operation = 99;
    let mut no_principal_type = valid.clone();
    no_principal_type.principal = StrBytes::from_static_str("alice");
    let mut cluster_named_otherwise = valid.clone();
    cluster_named_otherwise.resource_type = 4; // CLUSTER
    let mut req = CreateAclsRequest::default();
    req.creations = vec![
        match_pattern,
        valid,
        unknown_operation,
        no_principal_type,
        cluster_named_otherwise,
    ];
    let resp: CreateAclsResponse = raw_request(&broker, ApiKey::CreateAcls, 3, &req);
    let got: Vec<(i16, String)> = resp
        .results
        .iter()
        .map(|r| {
            (
                r.error_code,
                r.error_message.as_deref().unwrap_or("").to_string(),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            (42, "Invalid patternType MATCH".to_string()),
            (0, String::new()),
            (42, "Invalid operation UNKNOWN".to_string()),
            (42, "Could not parse principal from `alice` (no colon is present separating the principal type from the principal name)".to_string()),
            (42, "The only valid name for the CLUSTER resource is kafka-cluster".to_string()),
        ]
    );
    assert_eq!(
        describe_acls(&admin(&broker), &any()).unwrap(),
        lines(&["TOPIC:LITERAL:orders User:alice@* READ ALLOW"])
    );
}

/// DescribeAcls (v3, every ACL) on the wire: its top-level error code and message.
fn describe_error(broker: &Broker) -> (i16, String) {
    let mut req = DescribeAclsRequest::default();
    req.resource_type_filter = 1; // ANY
    req.resource_name_filter = None;
    req.pattern_type_filter = 1;
    req.principal_filter = None;
    req.host_filter = None;
    req.operation = 1;
    req.permission_type = 1;
    let resp: DescribeAclsResponse = raw_request(broker, ApiKey::DescribeAcls, 3, &req);
    (
        resp.error_code,
        resp.error_message.as_deref().unwrap_or("").to_string(),
    )
}

/// The first error a consumer assigned to `topic` reports, or none within a few seconds of
/// reading records.
fn consume_error(broker: &Broker, topic: &str) -> Option<RDKafkaErrorCode> {
    // librdkafka's consumer needs a group even to assign: "reader", which has an ACL.
    let consumer: BaseConsumer = client_config(broker)
        .set("group.id", "reader")
        .set("enable.auto.commit", "false")
        .set("enable.partition.eof", "false")
        .create()
        .expect("consumer");
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition_offset(topic, 0, Offset::Beginning)
        .unwrap();
    consumer.assign(&tpl).expect("assign");
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        match consumer.poll(Duration::from_millis(200)) {
            Some(Err(KafkaError::MessageConsumption(code))) => return Some(code),
            Some(Err(e)) => panic!("unexpected consumer error: {e}"),
            Some(Ok(_)) => return None,
            None => {}
        }
    }
    panic!("the consumer neither read a record nor reported an error");
}

#[test]
fn anonymous_clients_are_refused_until_an_acl_allows_a_deny_wins_and_acls_survive_a_restart() {
    use Op::*;
    use Pattern::*;
    use Perm::*;
    use Res::*;
    // First as a super user: the topic, and the cluster ACL that lets the anonymous admin
    // manage ACLs once it is a super user no more.
    let mut broker = Broker::start_with(authorizer_options().prop("super.users", ANONYMOUS));
    create_topic(&broker, "guarded", 1, &[]);
    create_ok(
        &admin(&broker),
        &[acl(
            RD_KAFKA_RESOURCE_BROKER,
            "kafka-cluster",
            RD_KAFKA_RESOURCE_PATTERN_LITERAL,
            ANONYMOUS,
            RD_KAFKA_ACL_OPERATION_ALTER,
            RD_KAFKA_ACL_PERMISSION_TYPE_ALLOW,
        )],
    );
    broker.stop();
    broker.options = authorizer_options().prop("allow.everyone.if.no.acl.found", "false");
    broker.restart();
    let admin = admin(&broker);
    assert_eq!(
        describe_acls(&admin, &any()).unwrap(),
        lines(&["BROKER:LITERAL:kafka-cluster User:ANONYMOUS@* ALTER ALLOW"]),
        "the ACL survived the restart and ALTER implies DESCRIBE on the cluster"
    );

    assert_eq!(
        produce_one(&broker, "guarded"),
        Err(RDKafkaErrorCode::TopicAuthorizationFailed)
    );
    create_ok(
        &admin,
        &[acl(
            RD_KAFKA_RESOURCE_TOPIC,
            "guarded",
            RD_KAFKA_RESOURCE_PATTERN_LITERAL,
            ANONYMOUS,
            RD_KAFKA_ACL_OPERATION_WRITE,
            RD_KAFKA_ACL_PERMISSION_TYPE_ALLOW,
        )],
    );
    assert_eq!(produce_one(&broker, "guarded"), Ok(()));
    // A consumer needs READ on its group and on the topic; WRITE does not give READ.
    create_ok(
        &admin,
        &[acl(
            RD_KAFKA_RESOURCE_GROUP,
            "reader",
            RD_KAFKA_RESOURCE_PATTERN_LITERAL,
            ANONYMOUS,
            RD_KAFKA_ACL_OPERATION_READ,
            RD_KAFKA_ACL_PERMISSION_TYPE_ALLOW,
        )],
    );
    assert_eq!(
        consume_error(&broker, "guarded"),
        Some(RDKafkaErrorCode::TopicAuthorizationFailed)
    );
    create_ok(
        &admin,
        &[acl(
            RD_KAFKA_RESOURCE_TOPIC,
            "guard",
            RD_KAFKA_RESOURCE_PATTERN_PREFIXED,
            "User:*",
            RD_KAFKA_ACL_OPERATION_READ,
            RD_KAFKA_ACL_PERMISSION_TYPE_ALLOW,
        )],
    );
    assert_eq!(consume_error(&broker, "guarded"), None);

    // A DENY beats the ALLOW, wherever it comes from (here a prefix).
    create_ok(
        &admin,
        &[acl(
            RD_KAFKA_RESOURCE_TOPIC,
            "guard",
            RD_KAFKA_RESOURCE_PATTERN_PREFIXED,
            ANONYMOUS,
            RD_KAFKA_ACL_OPERATION_WRITE,
            RD_KAFKA_ACL_PERMISSION_TYPE_DENY,
        )],
    );
    assert_eq!(
        produce_one(&broker, "guarded"),
        Err(RDKafkaErrorCode::TopicAuthorizationFailed)
    );

    // Everything survives a restart.
    broker.stop();
    broker.restart();
    let admin = common::admin(&broker);
    assert_eq!(
        describe_acls(&admin, &any()).unwrap(),
        lines(&[
            "BROKER:LITERAL:kafka-cluster User:ANONYMOUS@* ALTER ALLOW",
            "GROUP:LITERAL:reader User:ANONYMOUS@* READ ALLOW",
            "TOPIC:LITERAL:guarded User:ANONYMOUS@* WRITE ALLOW",
            "TOPIC:PREFIXED:guard User:*@* READ ALLOW",
            "TOPIC:PREFIXED:guard User:ANONYMOUS@* WRITE DENY",
        ])
    );
    assert_eq!(
        produce_one(&broker, "guarded"),
        Err(RDKafkaErrorCode::TopicAuthorizationFailed)
    );
    let mut the_deny = any();
    the_deny.perm = RD_KAFKA_ACL_PERMISSION_TYPE_DENY;
    assert_eq!(
        delete_acls(&admin, &[the_deny])[0].as_ref().unwrap().len(),
        1
    );
    assert_eq!(produce_one(&broker, "guarded"), Ok(()));

    // Without ALTER on the cluster, ACLs cannot be changed.
    let mut cluster = any();
    cluster.restype = RD_KAFKA_RESOURCE_BROKER;
    assert_eq!(
        delete_acls(&admin, &[cluster])[0].as_ref().unwrap().len(),
        1
    );
    let refused = create_acls(
        &admin,
        &[acl(
            RD_KAFKA_RESOURCE_TOPIC,
            "x",
            RD_KAFKA_RESOURCE_PATTERN_LITERAL,
            ANONYMOUS,
            RD_KAFKA_ACL_OPERATION_ALL,
            RD_KAFKA_ACL_PERMISSION_TYPE_ALLOW,
        )],
    );
    assert!(
        matches!(
            &refused[0],
            Err((RDKafkaErrorCode::ClusterAuthorizationFailed, _))
        ),
        "{refused:?}"
    );
    assert_eq!(
        describe_error(&broker).0,
        31,
        "CLUSTER_AUTHORIZATION_FAILED"
    );
}

/// kafka-python's admin client (its own protocol code, not librdkafka's) on every resource
/// type, USER ACLs included (CreateAcls v3).
#[test]
fn kafka_python_administers_acls_of_every_resource_type() {
    let broker = Broker::start_with(authorizer_options().prop("super.users", ANONYMOUS));
    let script = compat_tests::workspace_root().join("compat-tests/python/kafka_python_acls.py");
    let mut cmd = std::process::Command::new(compat_tests::python());
    cmd.arg(&script).arg(broker.bootstrap());
    let (status, out, err) =
        compat_tests::run_with_timeout(&mut cmd, Duration::from_secs(120)).unwrap();
    assert!(
        status.success(),
        "kafka_python_acls.py failed ({status}):\nstdout:\n{out}\nstderr:\n{err}"
    );
}
