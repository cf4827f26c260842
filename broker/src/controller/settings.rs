//! The KRaft settings a Kafka user writes (`process.roles`, `controller.quorum.voters`,
//! `controller.quorum.bootstrap.servers`, `controller.listener.names`, `controller.quorum.*`
//! timeouts), checked at start as Kafka's `KafkaConfig` checks them and turned into the
//! controller's settings. What Samsa cannot honour is refused with a message naming the key,
//! never ignored.
//!
//! With none of them set, a node is broker and controller at once and the only voter of its
//! quorum (`samsa` with no arguments): the same quorum code, electing itself at start. A
//! `process.roles=controller` node runs the quorum and the active controller only; a
//! `process.roles=broker` node follows the quorum as an observer, finding it through the voters
//! or, with KIP-853's `controller.quorum.bootstrap.servers`, through any controller it is given.

use std::collections::BTreeMap;
use std::net::SocketAddr;

use samsa_cluster::quorum::QuorumConfig;
use samsa_cluster::NodeId;

use super::store::MetadataLogConfig;
use crate::config::{BrokerConfig, Listener};

/// What `process.roles` makes of this node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Roles {
    pub broker: bool,
    pub controller: bool,
}

/// The parsed KRaft settings.
#[derive(Debug, Clone)]
pub struct KraftConfig {
    pub roles: Roles,
    /// Every voter's id and controller address; a single entry without an address for a
    /// quorum of one that was not configured; empty for a broker given only bootstrap servers.
    pub voters: BTreeMap<NodeId, Option<SocketAddr>>,
    /// `controller.quorum.bootstrap.servers`, with the ids the quorum knows them by (Kafka's
    /// -2, -3, ... in the order given); also in `quorum.bootstrap`.
    pub bootstrap_servers: BTreeMap<NodeId, SocketAddr>,
    /// The listener this node's controller serves, if it is a voter of a quorum of several.
    pub listener: Option<Listener>,
    pub listener_name: String,
    pub quorum: QuorumConfig,
    pub log: MetadataLogConfig,
    pub snapshot_after_bytes: u64,
}

fn invalid(key: &str, message: String) -> anyhow::Error {
    anyhow::anyhow!("{key}: {message}")
}

/// `id@host:port` entries of `controller.quorum.voters`.
pub fn parse_voters(entries: &[String]) -> anyhow::Result<BTreeMap<NodeId, SocketAddr>> {
    let key = "controller.quorum.voters";
    let mut voters = BTreeMap::new();
    for e in entries {
        let (id, addr) = e
            .split_once('@')
            .ok_or_else(|| invalid(key, format!("'{e}' is not id@host:port")))?;
        let id: NodeId = id
            .trim()
            .parse()
            .ok()
            .filter(|&i: &NodeId| i >= 0)
            .ok_or_else(|| invalid(key, format!("'{e}' has no valid node id")))?;
        let addr = resolve(key, e, addr)?;
        if voters.insert(id, addr).is_some() {
            return Err(invalid(key, format!("node id {id} is listed twice")));
        }
    }
    Ok(voters)
}

/// `host:port` entries of `controller.quorum.bootstrap.servers`, numbered -2, -3, ... as
/// Kafka's `KafkaRaftClient` numbers them.
pub fn parse_bootstrap_servers(entries: &[String]) -> anyhow::Result<BTreeMap<NodeId, SocketAddr>> {
    let key = "controller.quorum.bootstrap.servers";
    let mut servers = BTreeMap::new();
    for (i, e) in entries.iter().enumerate() {
        if e.contains('@') {
            return Err(invalid(
                key,
                format!("'{e}' is id@host:port; bootstrap servers are host:port (the ids are learned from the quorum)"),
            ));
        }
        servers.insert(-2 - i as NodeId, resolve(key, e, e)?);
    }
    Ok(servers)
}

fn resolve(key: &str, entry: &str, addr: &str) -> anyhow::Result<SocketAddr> {
    let addr = addr.trim();
    let Some((host, port)) = addr
        .rsplit_once(':')
        .and_then(|(h, p)| Some((h, p.parse::<u16>().ok()?)))
    else {
        return Err(invalid(key, format!("'{entry}' has no host:port")));
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    crate::net::peer::resolve(host, port)
        .ok_or_else(|| invalid(key, format!("'{entry}': cannot resolve the address")))
}

fn parse_roles(config: &BrokerConfig) -> anyhow::Result<Roles> {
    let roles_list: Vec<String> = config
        .list("process.roles")
        .into_iter()
        .map(|r| r.trim().to_string())
        .filter(|r| !r.is_empty())
        .collect();
    if roles_list.is_empty() {
        return Ok(Roles {
            broker: true,
            controller: true,
        });
    }
    let mut r = Roles {
        broker: false,
        controller: false,
    };
    for role in &roles_list {
        match role.as_str() {
            "broker" => r.broker = true,
            "controller" => r.controller = true,
            other => {
                return Err(invalid(
                    "process.roles",
                    format!("unknown role '{other}': expected broker, controller or both"),
                ))
            }
        }
    }
    Ok(r)
}

impl KraftConfig {
    pub fn from_config(config: &BrokerConfig) -> anyhow::Result<KraftConfig> {
        let node_id = config.node_id();
        let roles = parse_roles(config)?;
        let configured = parse_voters(&config.list("controller.quorum.voters"))?;
        let bootstrap_servers =
            parse_bootstrap_servers(&config.list("controller.quorum.bootstrap.servers"))?;
        let listener_names: Vec<String> = config
            .list("controller.listener.names")
            .into_iter()
            .map(|n| n.trim().to_string())
            .filter(|n| !n.is_empty())
            .collect();
        let listener_name = listener_names
            .first()
            .cloned()
            .unwrap_or_else(|| "CONTROLLER".to_string());
        let listeners = config.listeners();
        let is_controller_listener = |l: &Listener| {
            listener_names
                .iter()
                .any(|n| n.eq_ignore_ascii_case(&l.name))
        };
        let controller_listener = listeners
            .iter()
            .find(|l| l.name.eq_ignore_ascii_case(&listener_name))
            .cloned();
        let roles_text = match (roles.broker, roles.controller) {
            (true, true) => "broker,controller",
            (true, false) => "broker",
            _ => "controller",
        };

        // A controller given bootstrap servers instead of voters belongs to a dynamic quorum
        // (KIP-853, kraft.version 1): the voters are in the metadata log, the first set written
        // by `samsa storage format --standalone`, and changed with AddRaftVoter /
        // RemoveRaftVoter; a controller that was not formatted so joins as an observer.
        let dynamic = roles.controller && !bootstrap_servers.is_empty();
        if dynamic && !configured.is_empty() {
            return Err(invalid(
                "controller.quorum.bootstrap.servers",
                format!("process.roles={roles_text}: give a controller either controller.quorum.voters (a fixed voter set) or controller.quorum.bootstrap.servers (a dynamic one, KIP-853), not both"),
            ));
        }
        if dynamic && controller_listener.is_none() {
            return Err(invalid(
                "controller.listener.names",
                format!("process.roles={roles_text} with controller.quorum.bootstrap.servers: name the controller listener (e.g. CONTROLLER, with CONTROLLER://host:port in listeners), where the other controllers reach this one"),
            ));
        }
        if roles.broker && !roles.controller {
            // Kafka's checks for a broker-only node.
            if configured.is_empty() && bootstrap_servers.is_empty() {
                return Err(invalid(
                    "controller.quorum.voters",
                    "a broker-only node must name the controllers it follows: set controller.quorum.voters to the voters (id@host:port,...) or controller.quorum.bootstrap.servers to some of the controllers (host:port,...)".into(),
                ));
            }
            if configured.contains_key(&node_id) {
                return Err(invalid(
                    "controller.quorum.voters",
                    format!(
                        "node.id={node_id} is a voter, so process.roles must include controller"
                    ),
                ));
            }
            if listener_names.is_empty() {
                return Err(invalid(
                    "controller.listener.names",
                    "must name at least one listener when process.roles=broker: the controllers' listener (e.g. CONTROLLER), used to reach them".into(),
                ));
            }
            if let Some(l) = listeners.iter().find(|l| is_controller_listener(l)) {
                return Err(invalid(
                    "controller.listener.names",
                    format!("process.roles=broker: listener '{}' is a controller listener, which a broker-only node must not have in listeners", l.name),
                ));
            }
        }
        if roles.controller && !roles.broker {
            // Kafka's checks for a controller-only node.
            if configured.is_empty() && !dynamic {
                return Err(invalid(
                    "controller.quorum.voters",
                    "process.roles=controller: list the voters of the metadata quorum (id@host:port,...), this node among them".into(),
                ));
            }
            if listener_names.is_empty() {
                return Err(invalid(
                    "controller.listener.names",
                    "process.roles=controller: name the listener the controllers talk on (e.g. CONTROLLER, with CONTROLLER://host:port in listeners)".into(),
                ));
            }
            if let Some(l) = listeners.iter().find(|l| !is_controller_listener(l)) {
                return Err(invalid(
                    "listeners",
                    format!(
                        "process.roles=controller: listener '{}' is not one of controller.listener.names ({}); a controller-only node serves no clients, so listeners must only contain controller listeners",
                        l.name,
                        listener_names.join(",")
                    ),
                ));
            }
        }
        if roles.controller {
            if let Some(n) = listener_names
                .iter()
                .find(|n| !listeners.iter().any(|l| l.name.eq_ignore_ascii_case(n)))
            {
                return Err(invalid(
                    "controller.listener.names",
                    format!("listener '{n}' is not in listeners (a controller needs a listener for each of controller.listener.names)"),
                ));
            }
        }

        let voters: BTreeMap<NodeId, Option<SocketAddr>> =
            if configured.is_empty() && roles.controller && !dynamic {
                // The default quorum of one: this combined node alone.
                BTreeMap::from([(
                    node_id,
                    controller_listener
                        .as_ref()
                        .and_then(|l| l.socket_addr().ok()),
                )])
            } else {
                configured.iter().map(|(&k, &v)| (k, Some(v))).collect()
            };
        let is_voter = voters.contains_key(&node_id);
        if roles.controller && !is_voter && !dynamic {
            return Err(invalid(
                "controller.quorum.voters",
                format!(
                    "node.id={node_id} has the controller role but is not one of the voters {:?}",
                    voters.keys().collect::<Vec<_>>()
                ),
            ));
        }
        // A controller with other voters needs its listener; a quorum of one serves one too
        // when configured (for DescribeQuorum and tools that ask the controller directly).
        let configured_listener = !listener_names.is_empty() && controller_listener.is_some();
        let listener = if roles.controller && (voters.len() > 1 || configured_listener || dynamic) {
            if listener_names.is_empty() {
                return Err(invalid(
                    "controller.listener.names",
                    "required with several voters: name the listener the controllers talk on (e.g. CONTROLLER, with CONTROLLER://host:port in listeners)".into(),
                ));
            }
            let l = controller_listener.ok_or_else(|| {
                invalid(
                    "controller.listener.names",
                    format!("listener '{listener_name}' is not in listeners"),
                )
            })?;
            let mine = voters.get(&node_id).copied().flatten();
            if let Some(mine) = mine.filter(|m| m.port() != l.port) {
                return Err(invalid(
                    "controller.quorum.voters",
                    format!(
                        "node {node_id} is listed at {mine} but its {listener_name} listener is on port {}",
                        l.port
                    ),
                ));
            }
            Some(l)
        } else {
            None
        };
        let mut quorum = if dynamic {
            // The formatted voter set, if any, is read from the log directory at start.
            QuorumConfig::dynamic(node_id, None)
        } else {
            QuorumConfig::new(node_id, voters.keys().copied())
        };
        // In the order given: -2, -3, ...
        quorum.bootstrap = bootstrap_servers.keys().rev().copied().collect();
        let ms = |key: &str| -> anyhow::Result<u64> {
            let v = config.long(key);
            if v <= 0 {
                return Err(invalid(key, format!("must be positive, not {v}")));
            }
            Ok(v as u64)
        };
        quorum.election_timeout_ms = ms("controller.quorum.election.timeout.ms")?;
        quorum.election_backoff_max_ms = ms("controller.quorum.election.backoff.max.ms")?;
        quorum.fetch_timeout_ms = ms("controller.quorum.fetch.timeout.ms")?;
        quorum.request_timeout_ms = ms("controller.quorum.request.timeout.ms")?;
        quorum.retry_backoff_ms = ms("controller.quorum.retry.backoff.ms")?;
        let log = MetadataLogConfig {
            segment_bytes: ms("metadata.log.segment.bytes")?,
            segment_ms: ms("metadata.log.segment.ms")? as i64,
            ..MetadataLogConfig::default()
        };
        Ok(KraftConfig {
            roles,
            voters,
            bootstrap_servers,
            listener,
            listener_name,
            quorum,
            log,
            snapshot_after_bytes: ms("metadata.log.max.record.bytes.between.snapshots")?,
        })
    }

    /// The listener names clients must not be served on.
    pub fn is_controller_listener(&self, l: &Listener) -> bool {
        self.listener.as_ref().is_some_and(|c| c.name == l.name)
            || l.name.eq_ignore_ascii_case(&self.listener_name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kraft(flags: &[(&str, &str)]) -> anyhow::Result<KraftConfig> {
        let flags: Vec<(String, String)> = flags
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        KraftConfig::from_config(&BrokerConfig::load(None, vec![], flags)?)
    }

    fn refused(flags: &[(&str, &str)], needle: &str) {
        let e = kraft(flags).expect_err("refused").to_string();
        assert!(e.contains(needle), "{e}");
    }

    #[test]
    fn no_settings_is_a_quorum_of_one_without_a_listener() {
        let k = kraft(&[("node.id", "4")]).unwrap();
        assert!(k.roles.broker && k.roles.controller);
        assert_eq!(k.voters.keys().copied().collect::<Vec<_>>(), vec![4]);
        assert!(k.listener.is_none());
        assert_eq!(k.quorum.election_timeout_ms, 1000);
    }

    #[test]
    fn three_voters_need_the_controller_listener_on_the_listed_port() {
        let voters = "1@127.0.0.1:9093,2@127.0.0.1:9193,3@127.0.0.1:9293";
        let both = "PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093";
        let k = kraft(&[
            ("node.id", "1"),
            ("listeners", both),
            ("controller.listener.names", "CONTROLLER"),
            ("controller.quorum.voters", voters),
        ])
        .unwrap();
        assert_eq!(k.voters.len(), 3);
        assert_eq!(k.listener.as_ref().unwrap().port, 9093);
        assert!(k.is_controller_listener(k.listener.as_ref().unwrap()));
        let voters_flag = ("controller.quorum.voters", voters);
        refused(
            &[("node.id", "1"), ("listeners", both), voters_flag],
            "controller.listener.names",
        );
        refused(
            &[
                ("node.id", "2"),
                ("listeners", both),
                ("controller.listener.names", "CONTROLLER"),
                voters_flag,
            ],
            "port 9093",
        );
        refused(
            &[
                ("node.id", "5"),
                ("listeners", both),
                ("controller.listener.names", "CONTROLLER"),
                voters_flag,
            ],
            "not one of the voters",
        );
        refused(&[("controller.quorum.voters", "1@")], "has no host:port");
        refused(&[("controller.quorum.voters", "x@127.0.0.1:1")], "node id");
        refused(
            &[("controller.quorum.voters", "1@127.0.0.1:1,1@127.0.0.1:2")],
            "twice",
        );
    }

    #[test]
    fn what_samsa_cannot_do_is_refused_by_name() {
        refused(&[("process.roles", "broker,zookeeper")], "unknown role");
        refused(
            &[("controller.quorum.election.timeout.ms", "0")],
            "must be positive",
        );
        // A dynamic quorum's controller (KIP-853) needs its listener, and not a voter list.
        for roles in ["controller", "broker,controller"] {
            let k = kraft(&[
                ("process.roles", roles),
                ("listeners", "CONTROLLER://127.0.0.1:9093"),
                ("controller.listener.names", "CONTROLLER"),
                ("controller.quorum.bootstrap.servers", "127.0.0.1:9093"),
            ])
            .unwrap();
            assert!(k.quorum.dynamic.is_some() && k.quorum.voters.is_empty());
            assert_eq!(k.listener.unwrap().port, 9093);
            refused(
                &[
                    ("process.roles", roles),
                    ("listeners", "CONTROLLER://127.0.0.1:9093"),
                    ("controller.listener.names", "CONTROLLER"),
                    ("controller.quorum.bootstrap.servers", "127.0.0.1:9093"),
                    ("controller.quorum.voters", "1@127.0.0.1:9093"),
                ],
                "not both",
            );
        }
        refused(
            &[("controller.quorum.bootstrap.servers", "127.0.0.1:9093")],
            "name the controller listener",
        );
    }

    const VOTERS: &str = "1@127.0.0.1:9093,2@127.0.0.1:9193,3@127.0.0.1:9293";

    #[test]
    fn a_controller_only_node_runs_the_quorum_on_its_controller_listener() {
        let k = kraft(&[
            ("node.id", "2"),
            ("process.roles", "controller"),
            ("listeners", "CONTROLLER://127.0.0.1:9193"),
            ("controller.listener.names", "CONTROLLER"),
            ("controller.quorum.voters", VOTERS),
        ])
        .unwrap();
        assert_eq!(
            k.roles,
            Roles {
                broker: false,
                controller: true
            }
        );
        assert_eq!(k.voters.len(), 3);
        assert_eq!(k.listener.as_ref().unwrap().port, 9193);
        assert!(k.bootstrap_servers.is_empty());
    }

    #[test]
    fn a_controller_only_node_is_checked_as_kafka_checks_it() {
        let base = |extra: &[(&'static str, &'static str)]| {
            let mut f = vec![
                ("node.id", "1"),
                ("process.roles", "controller"),
                ("listeners", "CONTROLLER://127.0.0.1:9093"),
                ("controller.listener.names", "CONTROLLER"),
                ("controller.quorum.voters", VOTERS),
            ];
            for (k, v) in extra {
                f.retain(|(key, _)| key != k);
                if !v.is_empty() {
                    f.push((k, v));
                }
            }
            f
        };
        assert!(kraft(&base(&[])).is_ok());
        refused(
            &base(&[(
                "listeners",
                "PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093",
            )]),
            "listeners: process.roles=controller: listener 'PLAINTEXT' is not one of controller.listener.names (CONTROLLER); a controller-only node serves no clients",
        );
        refused(
            &base(&[("controller.listener.names", "")]),
            "listener CONTROLLER has no security protocol: if it is the controller listener, \
             name it in controller.listener.names",
        );
        refused(
            &base(&[
                ("controller.listener.names", ""),
                ("listener.security.protocol.map", "CONTROLLER:PLAINTEXT"),
            ]),
            "controller.listener.names: process.roles=controller: name the listener",
        );
        refused(
            &base(&[("controller.quorum.voters", "")]),
            "controller.quorum.voters: process.roles=controller: list the voters",
        );
        refused(
            &base(&[("node.id", "4")]),
            "node.id=4 has the controller role but is not one of the voters",
        );
        refused(
            &base(&[("node.id", "2")]),
            "node 2 is listed at 127.0.0.1:9193 but its CONTROLLER listener is on port 9093",
        );
        refused(
            &base(&[("controller.listener.names", "CONTROLLER,OTHER")]),
            "listener 'OTHER' is not in listeners",
        );
    }

    #[test]
    fn a_broker_only_node_is_checked_as_kafka_checks_it() {
        let base = |extra: &[(&'static str, &'static str)]| {
            let mut f = vec![
                ("node.id", "4"),
                ("process.roles", "broker"),
                ("listeners", "PLAINTEXT://127.0.0.1:9092"),
                ("controller.listener.names", "CONTROLLER"),
                ("controller.quorum.voters", VOTERS),
            ];
            for (k, v) in extra {
                f.retain(|(key, _)| key != k);
                if !v.is_empty() {
                    f.push((k, v));
                }
            }
            f
        };
        let k = kraft(&base(&[])).unwrap();
        assert!(k.roles.broker && !k.roles.controller);
        assert!(k.listener.is_none());
        refused(
            &base(&[("controller.quorum.voters", "")]),
            "a broker-only node must name the controllers it follows: set controller.quorum.voters",
        );
        refused(
            &base(&[("node.id", "3")]),
            "node.id=3 is a voter, so process.roles must include controller",
        );
        refused(
            &base(&[("controller.listener.names", "")]),
            "controller.listener.names: must name at least one listener when process.roles=broker",
        );
        refused(
            &base(&[(
                "listeners",
                "PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093",
            )]),
            "listener 'CONTROLLER' is a controller listener, which a broker-only node must not have in listeners",
        );
    }

    #[test]
    fn a_broker_may_find_the_quorum_through_bootstrap_servers() {
        let k = kraft(&[
            ("node.id", "4"),
            ("process.roles", "broker"),
            ("controller.listener.names", "CONTROLLER"),
            (
                "controller.quorum.bootstrap.servers",
                "127.0.0.1:9093, 127.0.0.1:9193",
            ),
        ])
        .unwrap();
        assert!(
            k.voters.is_empty(),
            "the voters are learned from the quorum"
        );
        assert_eq!(
            k.bootstrap_servers,
            BTreeMap::from([
                (-2, "127.0.0.1:9093".parse().unwrap()),
                (-3, "127.0.0.1:9193".parse().unwrap()),
            ])
        );
        assert_eq!(k.quorum.bootstrap, vec![-2, -3]);
        assert!(k.quorum.voters.is_empty());
        let bootstrap = |v: &'static str| {
            [
                ("node.id", "4"),
                ("process.roles", "broker"),
                ("controller.listener.names", "CONTROLLER"),
                ("controller.quorum.bootstrap.servers", v),
            ]
        };
        refused(&bootstrap("127.0.0.1"), "'127.0.0.1' has no host:port");
        refused(
            &bootstrap("1@127.0.0.1:9093"),
            "bootstrap servers are host:port",
        );
    }
}
