//! Feature levels (KIP-584) on a node that is its quorum's only voter: ApiVersions reports what
//! the broker supports and what the cluster finalized, UpdateFeatures changes a level through
//! the active controller (refusing what Kafka refuses), and ApiVersions follows at once.

use std::rc::Rc;

use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use samsa_broker::config::BrokerConfig;
use samsa_broker::handlers::{self, Connection, Ctx};
use samsa_broker::testing::JoinedBroker;

struct Node {
    broker: JoinedBroker,
    _dir: tempfile::TempDir,
    conn: Rc<Connection>,
    header: RequestHeader,
}

impl Node {
    fn open() -> Node {
        let dir = tempfile::tempdir().unwrap();
        let flags = [("log.dirs", dir.path().join("data").display().to_string())]
            .map(|(k, v)| (k.to_string(), v));
        let config = BrokerConfig::load(None, vec![], flags).unwrap();
        Node {
            broker: samsa_broker::testing::open_joined(config).unwrap(),
            _dir: dir,
            conn: Rc::new(Connection::plaintext("127.0.0.1:40000".parse().unwrap())),
            header: RequestHeader::default(),
        }
    }

    fn ctx(&self, version: i16) -> Ctx<'_> {
        Ctx::new(&self.broker, &self.conn, &self.header, version)
    }

    /// The finalized levels ApiVersions v3 reports, and the epoch.
    fn finalized(&self) -> (Vec<(String, i16)>, i64) {
        let r = handlers::api_versions::handle(&self.ctx(3), named());
        let levels = r
            .finalized_features
            .iter()
            .map(|f| {
                assert_eq!(f.min_version_level, f.max_version_level);
                (f.name.to_string(), f.max_version_level)
            })
            .collect();
        (levels, r.finalized_features_epoch)
    }

    fn update(&self, version: i16, feature: &str, level: i16, downgrade: bool) -> (i16, usize) {
        let mut u = update_features_request::FeatureUpdateKey::default();
        u.feature = StrBytes::from_string(feature.to_string());
        u.max_version_level = level;
        if version == 0 {
            u.allow_downgrade = downgrade;
        } else {
            u.upgrade_type = if downgrade { 2 } else { 1 };
        }
        let mut r = UpdateFeaturesRequest::default();
        r.timeout_ms = 10_000;
        r.feature_updates = vec![u];
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let resp = rt.block_on(handlers::update_features::handle(&self.ctx(version), r));
        for f in &resp.results {
            // Only a success lists the features, each with Kafka's "NONE" as its message.
            assert_eq!((f.error_code, resp.error_code), (0, 0));
            assert_eq!(f.error_message.as_deref(), Some("NONE"));
        }
        (resp.error_code, resp.results.len())
    }
}

#[test]
fn update_features_changes_the_finalized_levels_api_versions_reports() {
    let node = Node::open();
    // v4: v3 cannot carry a minimum of 0, so kraft.version is left out there (KAFKA-17011).
    let r = handlers::api_versions::handle(&node.ctx(4), named());
    let v3 = handlers::api_versions::handle(&node.ctx(3), named());
    assert_eq!(
        v3.supported_features.len(),
        1,
        "{:?}",
        v3.supported_features
    );
    let supported: Vec<(String, i16, i16)> = r
        .supported_features
        .iter()
        .map(|f| (f.name.to_string(), f.min_version, f.max_version))
        .collect();
    assert_eq!(
        supported,
        vec![
            ("metadata.version".to_string(), 7, 25),
            ("group.version".to_string(), 0, 1),
            ("share.version".to_string(), 0, 2),
            ("streams.version".to_string(), 0, 1),
            ("transaction.version".to_string(), 0, 2),
            ("kraft.version".to_string(), 0, 1)
        ]
    );
    let (levels, epoch) = node.finalized();
    assert_eq!(
        levels,
        vec![
            ("metadata.version".to_string(), 25),
            ("group.version".to_string(), 1),
            ("share.version".to_string(), 2),
            ("streams.version".to_string(), 1),
            ("transaction.version".to_string(), 2),
        ]
    );
    assert!(epoch >= 0, "{epoch}");

    // 4.0-IV3 to 4.0-IV2 did not change the metadata format: a safe downgrade may go there.
    assert_eq!(node.update(1, "metadata.version", 24, true), (0, 1));
    let (levels, _) = node.finalized();
    assert_eq!(
        levels,
        vec![
            ("metadata.version".to_string(), 24),
            ("group.version".to_string(), 1),
            ("share.version".to_string(), 2),
            ("streams.version".to_string(), 1),
            ("transaction.version".to_string(), 2),
        ]
    );
    // The epoch is the controller's applied offset, published just after the image: it may
    // trail the levels for a moment (a client then updates them again at the next epoch),
    // never lead them.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    let mut later = node.finalized().1;
    while later <= epoch && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(10));
        later = node.finalized().1;
    }
    assert!(
        later > epoch,
        "the epoch moves with the image: {later} after {epoch}"
    );
    // Back up, with version 0's flag.
    assert_eq!(node.update(0, "metadata.version", 25, false), (0, 1));
    assert_eq!(
        node.finalized().0,
        vec![
            ("metadata.version".to_string(), 25),
            ("group.version".to_string(), 1),
            ("share.version".to_string(), 2),
            ("streams.version".to_string(), 1),
            ("transaction.version".to_string(), 2),
        ]
    );

    // Refusals: a downgrade without saying so, a level no broker supports, an unknown
    // feature, a downgrade past 4.0-IV1 (which changed the metadata format). A refusal is
    // the request's error alone: as Kafka's, versions 0 and 1 list no features then.
    let invalid = ResponseError::InvalidUpdateVersion.code();
    assert_eq!(node.update(1, "metadata.version", 24, false), (invalid, 0));
    assert_eq!(node.update(2, "metadata.version", 26, false), (invalid, 0));
    assert_eq!(node.update(1, "no.such.feature", 1, false), (invalid, 0));
    assert_eq!(node.update(0, "metadata.version", 22, true), (invalid, 0));
    assert_eq!(node.update(1, "metadata.version", 22, true), (invalid, 0));
    assert_eq!(
        node.finalized().0,
        vec![
            ("metadata.version".to_string(), 25),
            ("group.version".to_string(), 1),
            ("share.version".to_string(), 2),
            ("streams.version".to_string(), 1),
            ("transaction.version".to_string(), 2),
        ]
    );
}

/// `share.version` turns share groups on and off as on Kafka 4.4: a new cluster finalizes 2;
/// below 1 the share-group APIs stay advertised but answer UNSUPPORTED_VERSION, whatever
/// `group.coordinator.rebalance.protocols` lists; the levels go down and up with kafka-features'
/// requests, and no level above 2 is taken.
#[test]
fn share_version_switches_share_groups() {
    let node = Node::open();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let heartbeat = || -> i16 {
        let mut r = ShareGroupHeartbeatRequest::default();
        r.group_id = StrBytes::from_static_str("sv-group").into();
        r.member_id = StrBytes::from_static_str("member-sv-0000000000001");
        r.member_epoch = 0;
        r.subscribed_topic_names = Some(vec![StrBytes::from_static_str("sv-topic").into()]);
        rt.block_on(handlers::share_group_heartbeat::handle(&node.ctx(1), r))
            .error_code
    };
    let advertised = || -> bool {
        handlers::api_versions::handle(&node.ctx(3), named())
            .api_keys
            .iter()
            .any(|k| k.api_key == ApiKey::ShareGroupHeartbeat as i16)
    };
    let share_level = || {
        node.finalized()
            .0
            .into_iter()
            .find(|(name, _)| name == "share.version")
            .map(|(_, level)| level)
    };
    let unsupported = ResponseError::UnsupportedVersion.code();
    assert_eq!(share_level(), Some(2));
    assert_ne!(heartbeat(), unsupported);
    assert!(advertised());

    // Off: a safe downgrade to 0 removes the level; the APIs are still advertised.
    assert_eq!(
        node.update(1, "share.version", 0, false).0,
        ResponseError::InvalidUpdateVersion.code()
    );
    assert_eq!(node.update(1, "share.version", 0, true), (0, 1));
    assert_eq!(share_level(), None);
    assert_eq!(heartbeat(), unsupported);
    assert!(advertised());
    let mut describe = ShareGroupDescribeRequest::default();
    describe.group_ids = vec![StrBytes::from_static_str("sv-group").into()];
    let d = handlers::share_group_describe::handle(&node.ctx(1), describe);
    assert_eq!(
        d.groups.iter().map(|g| g.error_code).collect::<Vec<_>>(),
        vec![unsupported]
    );

    // On again at 1 (share groups without dead-letter queues), then 2; never 3.
    assert_eq!(node.update(1, "share.version", 1, false), (0, 1));
    assert_eq!(share_level(), Some(1));
    assert_ne!(heartbeat(), unsupported);
    assert_eq!(
        node.update(1, "share.version", 3, false).0,
        ResponseError::InvalidUpdateVersion.code()
    );
    assert_eq!(node.update(1, "share.version", 2, false), (0, 1));
    assert_eq!(share_level(), Some(2));
}

/// ApiVersions v3+ with this client's software named, as Kafka requires.
fn named() -> ApiVersionsRequest {
    let mut r = ApiVersionsRequest::default();
    r.client_software_name = StrBytes::from_static_str("features-test");
    r.client_software_version = StrBytes::from_static_str("1");
    r
}
