//! The cluster as this broker describes it to clients (Kafka's `KRaftMetadataCache`): live
//! brokers, the controller, and each partition's leader, replicas and ISR, read from the
//! committed metadata image, so that every broker answers Metadata, DescribeCluster,
//! DescribeTopicPartitions and FindCoordinator alike. Topics only this node knows (internal
//! topics and topics from before the metadata log held topics, until they are imported) are
//! described from its own registry, led here.
//!
//! A broker is live when it is registered, not fenced, and has an endpoint for the listener
//! the clients use; a replica on a broker that is not live is offline, and a partition whose
//! leader is not live has no leader (LEADER_NOT_AVAILABLE), as Kafka answers.

use std::collections::BTreeMap;
use std::sync::Arc;

use samsa_cluster::metadata::image::{BrokerRegistration, PartitionRegistration, TopicImage};
use samsa_cluster::metadata::MetadataImage;
use uuid::Uuid;

use crate::node::Node as ThisNode;
use crate::topics::{is_internal_topic, Topic};

/// A live broker's endpoint for clients.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    pub id: i32,
    pub host: String,
    pub port: i32,
    pub rack: Option<String>,
}

/// A registered broker's endpoint on `listener`, if it has one.
fn endpoint(b: &BrokerRegistration, listener: &str) -> Option<Node> {
    let e = b.listeners.iter().find(|e| e.name == listener)?;
    Some(Node {
        id: b.id,
        host: e.host.clone(),
        port: e.port as i32,
        rack: b.rack.clone(),
    })
}

/// A snapshot of what this broker knows of the cluster, for one request.
pub struct ClusterView<'a> {
    node: &'a ThisNode,
    pub image: Arc<MetadataImage>,
    /// The live brokers with their endpoints on the listener clients use (the first
    /// advertised client listener), by id.
    live: BTreeMap<i32, Node>,
    /// The name of that listener.
    listener: String,
}

/// A topic as clients see it.
#[derive(Clone)]
pub enum TopicView {
    /// From the metadata image.
    Image(Arc<TopicImage>),
    /// Only this node knows it; every partition is led here.
    Local(Arc<Topic>),
}

/// A partition as clients see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionView {
    pub index: i32,
    /// The live leader, or `None` (LEADER_NOT_AVAILABLE).
    pub leader: Option<i32>,
    pub leader_epoch: i32,
    pub replicas: Vec<i32>,
    pub isr: Vec<i32>,
    /// Replicas on brokers that are not live.
    pub offline: Vec<i32>,
    pub elr: Vec<i32>,
    pub last_known_elr: Vec<i32>,
}

impl TopicView {
    pub fn name(&self) -> &str {
        match self {
            TopicView::Image(t) => &t.name,
            TopicView::Local(t) => &t.name,
        }
    }
    pub fn id(&self) -> Uuid {
        match self {
            TopicView::Image(t) => t.id,
            TopicView::Local(t) => t.id,
        }
    }
    pub fn is_internal(&self) -> bool {
        is_internal_topic(self.name())
    }
    pub fn partition_count(&self) -> i32 {
        match self {
            TopicView::Image(t) => t.partitions().len() as i32,
            TopicView::Local(t) => t.partition_count,
        }
    }
}

impl<'a> ClusterView<'a> {
    /// The cluster as brokers see each other: endpoints of the inter-broker listener.
    pub fn new(node: &'a ThisNode) -> ClusterView<'a> {
        ClusterView::for_listener(node, &node.config.inter_broker_listener_name())
    }

    /// The cluster as a client of `listener` sees it: every broker's endpoint of the listener
    /// of that name (Kafka answers Metadata with the endpoints of the listener the request came
    /// in on, so a TLS client is never sent to a plaintext port).
    pub fn for_listener(node: &'a ThisNode, listener: &str) -> ClusterView<'a> {
        let image = node.controller.image();
        let candidates: Vec<_> = node
            .config
            .advertised_listeners()
            .into_iter()
            .filter(|l| !node.is_controller_listener(&l.name))
            .collect();
        // A listener that is not advertised (advertised.listeners naming fewer than listeners)
        // gets the first advertised one's endpoints, as before listeners were told apart.
        let advertised = candidates
            .iter()
            .find(|l| l.name.eq_ignore_ascii_case(listener))
            .or(candidates.first())
            .cloned();
        let listener = advertised.as_ref().map(|l| l.name.as_str()).unwrap_or("");
        let mut live: BTreeMap<i32, Node> = image
            .brokers()
            .values()
            .filter(|b| !b.fenced)
            .filter_map(|b| Some((b.id, endpoint(b, listener)?)))
            .collect();
        // Before its first registration is committed a node knows no live broker: it answers
        // with itself alone, as its configuration advertises it.
        if image.brokers().values().all(|b| b.fenced) {
            if let Some(l) = &advertised {
                live.insert(
                    node.node_id,
                    Node {
                        id: node.node_id,
                        host: l.host.clone(),
                        port: l.port as i32,
                        rack: node.config.get("broker.rack").filter(|r| !r.is_empty()),
                    },
                );
            }
        }
        ClusterView {
            node,
            image,
            live,
            listener: listener.to_string(),
        }
    }

    /// Broker `id`'s endpoint, if it is live.
    pub fn node(&self, id: i32) -> Option<&Node> {
        self.live.get(&id)
    }

    pub fn is_live(&self, id: i32) -> bool {
        self.live.contains_key(&id)
    }

    /// Every live broker, by id.
    pub fn live_brokers(&self) -> impl Iterator<Item = &Node> {
        self.live.values()
    }

    /// Every registered broker that is fenced, with its endpoint on the same listener, by id
    /// (DescribeCluster's `include_fenced_brokers`, as Kafka lists every registered broker).
    pub fn fenced_brokers(&self) -> Vec<Node> {
        self.image
            .brokers()
            .values()
            .filter(|b| b.fenced && !self.live.contains_key(&b.id))
            .filter_map(|b| endpoint(b, &self.listener))
            .collect()
    }

    /// The id Metadata and DescribeCluster name as the controller: clients cannot reach KRaft
    /// controllers, so Kafka names a live broker; Samsa names the active controller when it is
    /// a live broker too (combined nodes), else the live broker with the lowest id.
    pub fn controller_id(&self) -> i32 {
        let active = self.node.controller.status().leader_id;
        match active.filter(|&id| self.is_live(id)) {
            Some(id) => id,
            None => self.live.keys().next().copied().unwrap_or(-1),
        }
    }

    /// The topic `name`: this node's own if it has one of that name that the image does not
    /// manage, else the image's.
    pub fn topic(&self, name: &str) -> Option<TopicView> {
        if let Some(t) = self.node.topics.get(name).filter(|t| !t.managed) {
            return Some(TopicView::Local(t));
        }
        self.image
            .topic_by_name(name)
            .map(|t| TopicView::Image(t.clone()))
    }

    pub fn topic_by_id(&self, id: &Uuid) -> Option<TopicView> {
        if let Some(t) = self.node.topics.get_by_id(id).filter(|t| !t.managed) {
            return Some(TopicView::Local(t));
        }
        self.image
            .topic_by_id(id)
            .map(|t| TopicView::Image(t.clone()))
    }

    /// Every topic, in no particular order.
    pub fn topics(&self) -> Vec<TopicView> {
        let local: Vec<TopicView> = self
            .node
            .topics
            .all()
            .into_iter()
            .filter(|t| !t.managed)
            .map(TopicView::Local)
            .collect();
        let mut all = Vec::with_capacity(self.image.topic_count() + local.len());
        all.extend(
            self.image
                .topics()
                .filter(|t| self.node.topics.get(&t.name).is_none_or(|l| l.managed))
                .map(|t| TopicView::Image(t.clone())),
        );
        all.extend(local);
        all
    }

    /// Partition `index` of `topic`, if the topic has it.
    pub fn partition(&self, topic: &TopicView, index: i32) -> Option<PartitionView> {
        match topic {
            TopicView::Image(t) => t.partition(index).map(|p| self.image_partition(p)),
            TopicView::Local(t) => {
                let p = t.partition(index)?;
                let me = self.node.node_id;
                Some(PartitionView {
                    index,
                    leader: Some(me),
                    leader_epoch: p.leader_epoch(),
                    replicas: vec![me],
                    isr: vec![me],
                    offline: Vec::new(),
                    elr: Vec::new(),
                    last_known_elr: Vec::new(),
                })
            }
        }
    }

    /// Every partition of `topic`, in index order.
    pub fn partitions(&self, topic: &TopicView) -> Vec<PartitionView> {
        match topic {
            TopicView::Image(t) => t
                .partitions()
                .iter()
                .map(|p| self.image_partition(p))
                .collect(),
            TopicView::Local(t) => (0..t.partition_count)
                .filter_map(|i| self.partition(topic, i))
                .collect(),
        }
    }

    fn image_partition(&self, p: &PartitionRegistration) -> PartitionView {
        let live = |id: i32| self.is_live(id);
        PartitionView {
            index: p.partition_id,
            leader: Some(p.leader).filter(|&l| l >= 0 && live(l)),
            leader_epoch: p.leader_epoch,
            replicas: p.replicas.to_vec(),
            isr: p.isr.to_vec(),
            offline: p.replicas.iter().copied().filter(|&r| !live(r)).collect(),
            elr: p.elr.to_vec(),
            last_known_elr: p.last_known_elr.to_vec(),
        }
    }
}

/// KIP-951: where the leader of a partition this broker does not lead is, for the
/// `current_leader` fields of Produce (v10+) and Fetch (v12+) errors and the `node_endpoints`
/// that come with them (Produce v10+, Fetch v16+), so that a client can go there without first
/// asking for metadata. Built on first use: a request without such errors costs nothing.
pub struct LeaderHints<'a> {
    node: &'a ThisNode,
    /// The listener whose endpoints the client is given.
    listener: &'a str,
    view: Option<ClusterView<'a>>,
    endpoints: BTreeMap<i32, Node>,
}

impl<'a> LeaderHints<'a> {
    pub fn new(node: &'a ThisNode, listener: &'a str) -> LeaderHints<'a> {
        LeaderHints {
            node,
            listener,
            view: None,
            endpoints: BTreeMap::new(),
        }
    }

    /// The live leader of `topic`'s partition `index` and its leader epoch, if the image
    /// knows one; its endpoint is remembered for [`LeaderHints::endpoints`].
    pub fn leader(&mut self, topic: &str, index: i32) -> Option<(i32, i32)> {
        let this = self.node;
        let listener = self.listener;
        let view = self
            .view
            .get_or_insert_with(|| ClusterView::for_listener(this, listener));
        let p = view.image.topic_by_name(topic)?.partition(index)?;
        let node = view.node(p.leader)?;
        self.endpoints
            .entry(node.id)
            .or_insert_with(|| node.clone());
        Some((p.leader, p.leader_epoch))
    }

    /// The endpoints of the leaders named so far, by id.
    pub fn endpoints(&self) -> impl Iterator<Item = &Node> {
        self.endpoints.values()
    }
}
