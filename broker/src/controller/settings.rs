//! The KRaft settings a Kafka user writes (`process.roles`, `controller.quorum.voters`,
//! `controller.listener.names`, `controller.quorum.*` timeouts), checked at start and turned
//! into the controller's settings. What Samsa cannot honour is refused with a message naming
//! the key, never ignored.
//!
//! With none of them set, a node is broker and controller at once and the only voter of its
//! quorum (`samsa` with no arguments): the same quorum code, electing itself at start.

use std::collections::BTreeMap;
use std::net::{SocketAddr, ToSocketAddrs};

use samsa_cluster::quorum::QuorumConfig;
use samsa_cluster::NodeId;

use super::store::MetadataLogConfig;
use crate::config::{BrokerConfig, Listener};

/// What `process.roles` and the voters make of this node.
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
    /// quorum of one that was not configured.
    pub voters: BTreeMap<NodeId, Option<SocketAddr>>,
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
        let addr = addr
            .trim()
            .to_socket_addrs()
            .ok()
            .and_then(|mut a| a.next())
            .ok_or_else(|| invalid(key, format!("'{e}': cannot resolve the address")))?;
        if voters.insert(id, addr).is_some() {
            return Err(invalid(key, format!("node id {id} is listed twice")));
        }
    }
    Ok(voters)
}

impl KraftConfig {
    pub fn from_config(config: &BrokerConfig) -> anyhow::Result<KraftConfig> {
        let node_id = config.node_id();
        let roles_list = config.list("process.roles");
        let roles = if roles_list.is_empty() {
            Roles {
                broker: true,
                controller: true,
            }
        } else {
            let mut r = Roles {
                broker: false,
                controller: false,
            };
            for role in &roles_list {
                match role.trim() {
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
            r
        };
        if !roles.broker {
            return Err(invalid(
                "process.roles",
                "a controller-only node is not supported yet: run every controller as broker,controller".into(),
            ));
        }
        if !config
            .list("controller.quorum.bootstrap.servers")
            .is_empty()
        {
            return Err(invalid(
                "controller.quorum.bootstrap.servers",
                "dynamic quorums (KIP-853) are not supported yet: list the voters in controller.quorum.voters instead".into(),
            ));
        }
        let configured = parse_voters(&config.list("controller.quorum.voters"))?;
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
        let controller_listener = config
            .listeners()
            .into_iter()
            .find(|l| l.name.eq_ignore_ascii_case(&listener_name));
        let voters: BTreeMap<NodeId, Option<SocketAddr>> = if configured.is_empty() {
            if !roles.controller {
                return Err(invalid(
                    "controller.quorum.voters",
                    "a broker-only node must name the controllers it follows".into(),
                ));
            }
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
        if roles.controller && !is_voter {
            return Err(invalid(
                "controller.quorum.voters",
                format!(
                    "node.id={node_id} has the controller role but is not one of the voters {:?}",
                    voters.keys().collect::<Vec<_>>()
                ),
            ));
        }
        if !roles.controller && is_voter {
            return Err(invalid(
                "controller.quorum.voters",
                format!("node.id={node_id} is a voter, so process.roles must include controller"),
            ));
        }
        // A controller with other voters needs its listener; a quorum of one serves one too
        // when configured (for DescribeQuorum and tools that ask the controller directly).
        let configured_listener = !listener_names.is_empty() && controller_listener.is_some();
        let listener = if roles.controller && (voters.len() > 1 || configured_listener) {
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
            let mine = voters[&node_id];
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
        let mut quorum = QuorumConfig::new(node_id, voters.keys().copied());
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
        KraftConfig::from_config(&BrokerConfig::load(None, vec![], flags).unwrap())
    }

    fn refused(flags: &[(&str, &str)], needle: &str) {
        let e = kraft(flags).err().expect("refused").to_string();
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
        refused(&[("controller.quorum.voters", "1@")], "cannot resolve");
        refused(&[("controller.quorum.voters", "x@127.0.0.1:1")], "node id");
        refused(
            &[("controller.quorum.voters", "1@127.0.0.1:1,1@127.0.0.1:2")],
            "twice",
        );
    }

    #[test]
    fn what_samsa_cannot_do_is_refused_by_name() {
        refused(&[("process.roles", "controller")], "controller-only");
        refused(&[("process.roles", "broker,zookeeper")], "unknown role");
        refused(
            &[("controller.quorum.bootstrap.servers", "127.0.0.1:9093")],
            "KIP-853",
        );
        refused(&[("process.roles", "broker")], "must name the controllers");
        refused(
            &[("controller.quorum.election.timeout.ms", "0")],
            "must be positive",
        );
    }
}
