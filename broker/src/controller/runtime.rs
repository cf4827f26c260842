//! The controller's driver: the one thread that owns this node's KRaft quorum state machine
//! (`samsa_cluster::quorum::Quorum`), its metadata log on disk (`MetadataLogStore`) and the
//! metadata image built from the committed records. It moves the quorum's messages as Kafka's
//! RPCs (`wire`, `peers`, `listener`), executes its actions in order against the disk, and
//! publishes each new committed image to the rest of the broker.
//!
//! Everything that decides lives in the state machine; this file only does what it is told:
//! - `PersistState` and `Truncate` are durable before the next action runs, `Flush` is an
//!   fsync whose completion is reported back at once (the thread owns the disk, so flushes
//!   complete in order);
//! - a request received from a peer is handed to the quorum with an id of our choosing, and
//!   the quorum's response with that id goes back on the connection it came from;
//! - a record batch is applied to the image only once committed, in log order, exactly once;
//! - a failure to write the metadata log stops the node: a controller that cannot keep its
//!   log must not vote or lead (Kafka halts the process the same way).

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use samsa_cluster::metadata::{MetadataImage, MetadataRecord};
use samsa_cluster::quorum::{
    Action, Durable, Message, PersistedState, ProposeError, Quorum, QuorumConfig,
    QuorumDescription, Record, Role, SnapshotId,
};
use samsa_cluster::NodeId;
use tokio::sync::{mpsc, oneshot, watch};
use uuid::Uuid;

use super::active::{
    Active, ControllerRequest, ControllerResult, ElectionCounts, ReplyError, NOT_CONTROLLER,
};
use super::store::{Loaded, MetadataLogConfig, MetadataLogStore, StoreError};
use super::{wire, QuorumStateFile};

/// `tracing::info!`, or `tracing::debug!` when `$alone` (a quorum of one node, which has no
/// peer to know about).
macro_rules! info_unless_alone {
    ($alone:expr, $($event:tt)*) => {
        if $alone {
            tracing::debug!($($event)*)
        } else {
            tracing::info!($($event)*)
        }
    };
}
use crate::net::peer::Peer;

/// What the controller needs to start.
pub struct ControllerSettings {
    pub node_id: NodeId,
    pub cluster_id: String,
    /// The log directory holding `__cluster_metadata-0`.
    pub log_dir: PathBuf,
    /// Every voter and its controller listener (this node's own address included); empty for
    /// a broker that knows only bootstrap servers.
    pub voters: BTreeMap<NodeId, SocketAddr>,
    /// `controller.quorum.bootstrap.servers` by the ids the quorum gives them (-2, -3, ...):
    /// where an observer asks for the leader, whose address it learns from the answer.
    pub bootstrap: BTreeMap<NodeId, SocketAddr>,
    /// Where this node listens for the other controllers, and how those connections are
    /// secured (TLS, SASL); `None` for a quorum of one.
    pub listen: Option<(
        std::net::TcpListener,
        Arc<crate::security::ListenerSecurity>,
    )>,
    /// How this node's connections to controllers are secured.
    pub peer_security: Arc<crate::security::outbound::PeerSecurity>,
    /// The controller listener's name (`controller.listener.names`' first), for DescribeQuorum.
    pub listener_name: String,
    pub quorum: QuorumConfig,
    pub log: MetadataLogConfig,
    /// `metadata.log.max.record.bytes.between.snapshots`: committed record bytes after which a
    /// new snapshot is written.
    pub snapshot_after_bytes: u64,
    /// `metadata.log.max.snapshot.interval.ms`: a snapshot at least this often while new
    /// records are committed (0: only by size).
    pub snapshot_interval_ms: u64,
    /// The active controller's settings (session timeout, defaults for new topics). Its
    /// `node_id` is set from [`Self::node_id`].
    pub controller: samsa_cluster::controller::ControllerConfig,
    /// What the active controller asks about config keys (the broker's config definitions);
    /// `None` accepts every config.
    pub config_validator: Option<Box<dyn samsa_cluster::controller::ConfigValidator>>,
    /// This node's configuration, whose dynamic layers the committed image holds: what
    /// DescribeConfigs answers on the controller listener (KIP-919's `--bootstrap-controller`
    /// tools).
    pub configs: Arc<crate::config::dynamic::DynamicConfigs>,
}

#[derive(Debug, Clone)]
pub struct VoterEndpoint {
    pub node_id: NodeId,
    pub listener: String,
    pub host: String,
    pub port: u16,
}

/// The quorum's state as the broker reads it without asking the controller thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QuorumStatus {
    pub role: Role,
    pub epoch: i32,
    pub leader_id: Option<NodeId>,
    pub high_watermark: i64,
    /// The offset after the last record applied to the published image.
    pub applied_offset: i64,
    /// The quorum's kraft.version: 1 when its voters are in the log (KIP-853).
    pub kraft_version: i16,
}

/// Why a proposal was not committed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ProposalError {
    /// NOT_CONTROLLER (41): this node does not lead, or stopped leading before the commit.
    #[error("this node is not the active controller (leader: {leader_id:?})")]
    NotController { leader_id: Option<NodeId> },
    #[error("{0}")]
    Invalid(String),
}

/// Where a controller request went: decided here, or to be sent to the leader.
pub enum Routed {
    Done(ControllerResult),
    /// To the controller listener of `leader_id`, the quorum's leader as this node knows it.
    Forward {
        leader_id: NodeId,
        peer: Peer,
    },
}

/// The metadata quorum's voters as this node knows them, whether it leads or not: each voter's
/// controller endpoints, and the leader (DescribeCluster on the controller listener, KIP-919).
#[derive(Debug, Clone, Default)]
pub struct Controllers {
    pub endpoints: Vec<VoterEndpoint>,
    pub leader_id: Option<NodeId>,
}

/// DescribeQuorum's answer: the leader's own view, or where to ask for it.
pub enum Describe {
    /// The description and every voter's controller endpoint (node id, listener name, host,
    /// port) for DescribeQuorum v2's `nodes`.
    Local(QuorumDescription, Vec<VoterEndpoint>),
    /// Forward to the leader's controller listener, and wait at most this long: the quorum's
    /// own request timeout, not the forwarding connection's longer patience (which lets the
    /// leader commit what a broker asked), so a paused leader costs a describe seconds, and
    /// the answer says to retry.
    Forward(Peer, Duration),
    NoLeader,
    /// Asked of a controller that does not lead: Kafka's controllers answer
    /// NOT_LEADER_OR_FOLLOWER rather than forward (only brokers forward DescribeQuorum).
    NotLeader,
}

/// Where the quorum's answer to a peer's request goes, with the controller address of the
/// leader it names, when known (for Fetch's `NodeEndpoints`).
pub(super) type InboundReply = oneshot::Sender<(Message, Option<SocketAddr>)>;

pub(super) enum Command {
    /// A request from the peer `from`, with an id this runtime chose; the quorum's answer goes
    /// to `reply`, with the controller address of the leader it names, when known.
    Inbound {
        from: NodeId,
        message: Message,
        reply: InboundReply,
    },
    /// A peer's answer to one of our requests, with the leader's endpoint if it named one.
    Response {
        from: NodeId,
        message: Message,
        leader: Option<(NodeId, SocketAddr)>,
    },
    Describe(oneshot::Sender<Describe>),
    /// The voters' endpoints and the leader, answered by any node.
    Controllers(oneshot::Sender<Controllers>),
    Propose {
        records: Vec<MetadataRecord>,
        reply: oneshot::Sender<Result<i64, ProposalError>>,
    },
    /// A request for the active controller (from this node's broker or a peer's).
    Request {
        request: ControllerRequest,
        reply: oneshot::Sender<Routed>,
    },
    /// AddRaftVoter / RemoveRaftVoter (KIP-853).
    ChangeVoters {
        change: VoterChange,
        reply: oneshot::Sender<VoterChangeRouted>,
    },
    Shutdown,
}

/// A change of a dynamic voter set.
#[derive(Debug, Clone)]
pub enum VoterChange {
    Add(samsa_cluster::quorum::VoterNode),
    Remove {
        id: NodeId,
        directory_id: Option<Uuid>,
    },
}

/// Where a voter change went: decided here (the leader answers once the change is committed,
/// or why not), or to be sent to the leader's controller listener.
pub enum VoterChangeRouted {
    Done(Result<(), ReplyError>),
    Forward(Peer, Duration),
}

/// A record batch's header, and a record's framing, on disk (magic v2).
const BATCH_OVERHEAD_BYTES: u64 = 61;
const RECORD_OVERHEAD_BYTES: u64 = 8;

/// The broker's handle on its controller thread.
pub struct Controller {
    tx: mpsc::UnboundedSender<Command>,
    image: watch::Receiver<Arc<MetadataImage>>,
    status: watch::Receiver<QuorumStatus>,
    /// Why the controller stopped, if it failed.
    failure: watch::Receiver<Option<String>>,
    voters: BTreeMap<NodeId, SocketAddr>,
    /// Leader elections this node decided while active (for the metrics endpoint).
    elections: Arc<ElectionCounts>,
    thread: parking_lot::Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl Controller {
    /// Opens the metadata log and starts the controller thread (and its listener, if any).
    pub fn start(settings: ControllerSettings) -> Result<Controller, StoreError> {
        let (store, loaded) = MetadataLogStore::open(&settings.log_dir, settings.log.clone())?;
        let (tx, rx) = mpsc::unbounded_channel();
        let image = loaded
            .snapshot
            .as_ref()
            .map(|s| image_from_snapshot(&s.records))
            .transpose()
            .map_err(|why| StoreError::Corrupt {
                path: store.dir().to_path_buf(),
                why,
            })?
            .unwrap_or_default();
        let (image_tx, image_rx) = watch::channel(Arc::new(image.clone()));
        let status = QuorumStatus {
            role: Role::Unattached,
            epoch: 0,
            leader_id: None,
            high_watermark: loaded.log_start_offset,
            applied_offset: loaded.log_start_offset,
            kraft_version: i16::from(settings.quorum.dynamic.is_some()),
        };
        let (status_tx, status_rx) = watch::channel(status);
        let (failure_tx, failure_rx) = watch::channel(None);
        let next_inbound_id = Arc::new(AtomicU64::new(1));
        let voters = settings.voters.clone();
        let elections = Arc::new(ElectionCounts::default());
        let elections2 = elections.clone();
        let tx2 = tx.clone();
        let ids = next_inbound_id.clone();
        let served = super::listener::Served {
            node_id: settings.node_id,
            cluster_id: settings.cluster_id.clone().into(),
            image: image_rx.clone(),
            status: status_rx.clone(),
            configs: settings.configs.clone(),
        };
        let thread = std::thread::Builder::new()
            .name("controller".into())
            .spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("a tokio runtime for the controller");
                // A panic here (a broken invariant) stops the controller like a write
                // failure does: the broker hears of it and shuts down instead of serving on
                // without a controller.
                let guard = FailOnDrop(Some(failure_tx.clone()));
                rt.block_on(async move {
                    let mut runtime = Runtime::new(
                        settings, store, loaded, image, tx2, image_tx, status_tx, elections2,
                    );
                    if let Some((listener, security)) = runtime.listen.take() {
                        super::listener::spawn(listener, security, runtime.tx.clone(), ids, served);
                    }
                    if let Err(e) = runtime.run(rx).await {
                        // The node stops voting and leading; the broker sees `failure` and
                        // shuts down (a controller that cannot keep its log must not go on).
                        tracing::error!(error = %e, "the metadata log cannot be written: the controller stops");
                        failure_tx.send_replace(Some(e.to_string()));
                    }
                });
                guard.disarm();
            })
            .map_err(|e| StoreError::Io {
                path: PathBuf::from("controller thread"),
                what: "start",
                source: e,
            })?;
        Ok(Controller {
            tx,
            image: image_rx,
            status: status_rx,
            failure: failure_rx,
            voters,
            elections,
            thread: parking_lot::Mutex::new(Some(thread)),
        })
    }

    /// The latest committed metadata image.
    pub fn image(&self) -> Arc<MetadataImage> {
        self.image.borrow().clone()
    }

    /// Waits for images as they are committed.
    pub fn subscribe(&self) -> watch::Receiver<Arc<MetadataImage>> {
        self.image.clone()
    }

    pub fn status(&self) -> QuorumStatus {
        *self.status.borrow()
    }

    /// Waits until the quorum has a leader (or `timeout` passes) and returns the status.
    pub async fn wait_for_leader(&self, timeout: Duration) -> QuorumStatus {
        let mut rx = self.status.clone();
        let _ = tokio::time::timeout(timeout, rx.wait_for(|s| s.leader_id.is_some())).await;
        self.status()
    }

    /// Resolves when the controller has stopped on a failure, with the reason.
    pub async fn failed(&self) -> String {
        let mut rx = self.failure.clone();
        let why = match rx.wait_for(|f| f.is_some()).await {
            Ok(f) => f.clone(),
            Err(_) => None,
        };
        match why {
            Some(why) => why,
            None => std::future::pending().await,
        }
    }

    /// The preferred and unclean leader elections this node decided as the active controller.
    pub fn elections(&self) -> &ElectionCounts {
        &self.elections
    }

    /// Voters and their controller listeners, as configured (empty on a broker given only
    /// `controller.quorum.bootstrap.servers`).
    pub fn voters(&self) -> &BTreeMap<NodeId, SocketAddr> {
        &self.voters
    }

    /// Adds or removes a voter (KIP-853): decided by the leader, once committed.
    pub async fn change_voters(&self, change: VoterChange) -> VoterChangeRouted {
        let (reply, rx) = oneshot::channel();
        let gone = || {
            VoterChangeRouted::Done(Err(ReplyError::new(
                NOT_CONTROLLER,
                "the controller stopped".into(),
            )))
        };
        if self
            .tx
            .send(Command::ChangeVoters { change, reply })
            .is_err()
        {
            return gone();
        }
        rx.await.unwrap_or_else(|_| gone())
    }

    pub async fn describe(&self) -> Describe {
        let (reply, rx) = oneshot::channel();
        if self.tx.send(Command::Describe(reply)).is_err() {
            return Describe::NoLeader;
        }
        rx.await.unwrap_or(Describe::NoLeader)
    }

    /// Appends `records` as one atomic batch; resolves with its last offset once committed.
    pub async fn propose(&self, records: Vec<MetadataRecord>) -> Result<i64, ProposalError> {
        let (reply, rx) = oneshot::channel();
        let gone = || ProposalError::NotController { leader_id: None };
        self.tx
            .send(Command::Propose { records, reply })
            .map_err(|_| gone())?;
        rx.await.map_err(|_| gone())?
    }

    /// Asks the active controller, wherever it is: decided here when this node leads, else
    /// sent to the leader's controller listener as the Kafka RPC. A forwarded request whose
    /// leader is replaced before it answers fails at once with NOT_CONTROLLER, so that the
    /// caller asks the new one (a leader that stopped answering, paused or cut off, would
    /// otherwise hold it for the forwarding timeout, and a broker's heartbeat with it: Kafka's
    /// brokers follow the active controller the quorum names in the same way).
    pub async fn request(&self, request: ControllerRequest) -> ControllerResult {
        let gone = || {
            Err(ReplyError::new(
                NOT_CONTROLLER,
                "the controller stopped".to_string(),
            ))
        };
        let (reply, rx) = oneshot::channel();
        if self
            .tx
            .send(Command::Request {
                request: request.clone(),
                reply,
            })
            .is_err()
        {
            return gone();
        }
        match rx.await {
            Ok(Routed::Done(r)) => r,
            Ok(Routed::Forward { leader_id, peer }) => {
                let (key, version, body) = super::broker_rpcs::to_kafka(&request);
                let answer = peer.send(key, version, body);
                let mut status = self.status.clone();
                let replaced = status.wait_for(|s| s.leader_id.is_some_and(|l| l != leader_id));
                tokio::select! {
                    answer = answer => match answer {
                        Ok(Ok(resp)) => super::broker_rpcs::response_from_kafka(resp),
                        Ok(Err(e)) => Err(ReplyError::new(NOT_CONTROLLER, e.to_string())),
                        Err(_) => gone(),
                    },
                    _ = replaced => Err(ReplyError::new(
                        NOT_CONTROLLER,
                        format!("the metadata quorum's leader is no longer node {leader_id}, which the request was sent to"),
                    )),
                }
            }
            Err(_) => gone(),
        }
    }

    /// [`request`](Self::request), asked again while the quorum has no leader (NOT_CONTROLLER
    /// for the whole request) until `timeout` passes, as Kafka's forwarding manager retries.
    ///
    /// Bounded by `timeout` as a whole: a leader that cannot commit (a majority of voters
    /// gone) answers REQUEST_TIMED_OUT then, as Kafka's forwarding does; the change may still
    /// be committed later, as in Kafka.
    pub async fn request_retrying(
        &self,
        request: ControllerRequest,
        timeout: Duration,
    ) -> ControllerResult {
        let attempts = async {
            loop {
                match self.request(request.clone()).await {
                    Err(ReplyError {
                        code: NOT_CONTROLLER,
                        ..
                    }) => {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                    other => return other,
                }
            }
        };
        match tokio::time::timeout(timeout, attempts).await {
            Ok(answer) => answer,
            Err(_) => Err(ReplyError::new(
                kafka_protocol::ResponseError::RequestTimedOut.code(),
                format!(
                    "the metadata quorum did not take the change within {} ms (no active controller, or a majority of the controller.quorum.voters unreachable)",
                    timeout.as_millis()
                ),
            )),
        }
    }

    /// Stops the controller thread (a leader first hands over with EndQuorumEpoch) and waits
    /// for it, so that the metadata log's lock is released when this returns.
    pub fn shutdown(&self) {
        let _ = self.tx.send(Command::Shutdown);
        if let Some(t) = self.thread.lock().take() {
            let _ = t.join();
        }
    }
}

impl Drop for Controller {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// Reports a failure if the controller thread ends by a panic.
struct FailOnDrop(Option<watch::Sender<Option<String>>>);

impl FailOnDrop {
    fn disarm(mut self) {
        self.0 = None;
    }
}

impl Drop for FailOnDrop {
    fn drop(&mut self) {
        if let Some(tx) = self.0.take() {
            if std::thread::panicking() {
                tx.send_replace(Some(
                    "the controller thread panicked (see the log above)".into(),
                ));
            }
        }
    }
}

/// A proposal waiting for its commit: what to do with the outcome.
struct Pending {
    epoch: i32,
    done: Box<dyn FnOnce(Result<i64, ProposalError>) + Send>,
}

struct Runtime {
    node_id: NodeId,
    cluster_id: String,
    quorum: Quorum,
    store: MetadataLogStore,
    /// The quorum's connections to each other voter, to the bootstrap servers, and to leaders
    /// learned from them.
    peers: BTreeMap<NodeId, Peer>,
    /// Separate connections for requests forwarded to the leader (a broker's registration
    /// waits for a commit, which waits for the followers' fetches: on the quorum's own
    /// connection, answered in order, it would hold those fetches up behind it).
    forward: BTreeMap<NodeId, Peer>,
    /// Every controller address this node knows: the voters' (its own included), the
    /// bootstrap servers', and leaders' named in Fetch responses (KIP-853's NodeEndpoints).
    addresses: BTreeMap<NodeId, SocketAddr>,
    client_id: String,
    timeout: Duration,
    listen: Option<(
        std::net::TcpListener,
        Arc<crate::security::ListenerSecurity>,
    )>,
    peer_security: Arc<crate::security::outbound::PeerSecurity>,
    endpoints: Vec<VoterEndpoint>,
    tx: mpsc::UnboundedSender<Command>,
    /// Requests from peers the quorum has not answered yet, by the id we gave them.
    inbound: HashMap<u64, (u64, InboundReply)>,
    /// The committed image and the offset of the first record not yet applied to it.
    image: MetadataImage,
    applied_offset: i64,
    bytes_since_snapshot: u64,
    snapshot_after_bytes: u64,
    snapshot_interval_ms: u64,
    /// When the last snapshot was written or installed (or the node started).
    last_snapshot_at: u64,
    image_tx: watch::Sender<Arc<MetadataImage>>,
    status_tx: watch::Sender<QuorumStatus>,
    proposals: BTreeMap<i64, Pending>,
    active: Active,
    clock: Clock,
    /// The voter set's version last connected to (kraft.version 1).
    voters_seen: u64,
    /// The controller listener's name, to pick each voter's endpoint by.
    listener_name: String,
}

/// The latest voter set a metadata log directory holds: in its log, else its latest snapshot,
/// else what it was formatted with.
fn latest_voters(loaded: &Loaded) -> Option<samsa_cluster::quorum::VoterSet> {
    use samsa_cluster::quorum::ControlType;
    for b in loaded.batches.iter().rev().filter(|b| b.control) {
        for r in b.records.iter().rev() {
            let voters =
                r.key.as_deref().and_then(ControlType::from_key) == Some(ControlType::KRaftVoters);
            if let (true, Some(v)) = (voters, &r.value) {
                if let Ok(set) = samsa_cluster::quorum::decode_voters(v) {
                    return Some(set);
                }
            }
        }
    }
    loaded
        .snapshot
        .as_ref()
        .and_then(|s| super::snapshot::voters_of(&s.bytes))
        .or_else(|| loaded.bootstrap_voters.clone())
}

/// Where to reach a voter: its endpoint on the controller listener's name, else its first.
fn voter_address(v: &samsa_cluster::quorum::VoterNode, listener: &str) -> Option<SocketAddr> {
    let e = v
        .endpoints
        .iter()
        .find(|e| e.name.eq_ignore_ascii_case(listener))
        .or(v.endpoints.first())?;
    crate::net::peer::resolve(&e.host, e.port)
}

/// Milliseconds on a monotonic clock that starts at the wall-clock time of the process start,
/// so that the quorum's timers never jump and its batches carry plausible append times.
struct Clock {
    start: Instant,
    start_ms: u64,
}

impl Clock {
    fn new() -> Clock {
        Clock {
            start: Instant::now(),
            start_ms: crate::util::now_ms().max(0) as u64,
        }
    }
    fn now(&self) -> u64 {
        self.start_ms + self.start.elapsed().as_millis() as u64
    }
}

fn image_from_snapshot(records: &[Bytes]) -> Result<MetadataImage, String> {
    let mut image = MetadataImage::new();
    for (i, r) in records.iter().enumerate() {
        let record = MetadataRecord::decode(r).map_err(|e| format!("snapshot record {i}: {e}"))?;
        image
            .apply(&record)
            .map_err(|e| format!("snapshot record {i}: {e}"))?;
    }
    Ok(image)
}

impl Runtime {
    #[allow(clippy::too_many_arguments)]
    fn new(
        settings: ControllerSettings,
        store: MetadataLogStore,
        loaded: Loaded,
        image: MetadataImage,
        tx: mpsc::UnboundedSender<Command>,
        image_tx: watch::Sender<Arc<MetadataImage>>,
        status_tx: watch::Sender<QuorumStatus>,
        elections: Arc<ElectionCounts>,
    ) -> Runtime {
        let clock = Clock::new();
        let mut addresses: BTreeMap<NodeId, SocketAddr> = settings.voters.clone();
        addresses.extend(settings.bootstrap.iter().map(|(&id, &a)| (id, a)));
        let mut quorum_config = settings.quorum.clone();
        let mut is_voter = settings.voters.contains_key(&settings.node_id);
        if quorum_config.dynamic.is_some() {
            // kraft.version 1: the voters come from the log, the latest snapshot, or what this
            // directory was formatted with; their addresses from the set.
            quorum_config.dynamic = Some(loaded.bootstrap_voters.clone());
            quorum_config.snapshot_voters = super::snapshot::voters_of;
            if let Some(set) = latest_voters(&loaded) {
                is_voter = set.contains_key(&settings.node_id);
                for v in set.values() {
                    if let Some(addr) = voter_address(v, &settings.listener_name) {
                        addresses.insert(v.id, addr);
                    }
                }
            }
        }
        let mut state = loaded
            .quorum_state
            .map_or(PersistedState::default(), |s| PersistedState {
                epoch: s.leader_epoch,
                voted_id: (s.voted_id >= 0).then_some(s.voted_id),
                leader_id: (s.leader_id >= 0).then_some(s.leader_id),
            });
        // An observer that followed a leader it has no address for (learned from a bootstrap
        // server in its last run) asks the bootstrap servers again rather than wait out a
        // fetch timeout; a voter's state is kept as it was (it knows every voter's address).
        if !is_voter && state.leader_id.is_some_and(|l| !addresses.contains_key(&l)) {
            state.leader_id = None;
        }
        let applied_offset = loaded.log_start_offset;
        let durable = Durable {
            state,
            snapshot: loaded.snapshot.map(|s| (s.id, s.bytes)),
            batches: loaded.batches,
        };
        let seed = u64::from_le_bytes(Uuid::new_v4().as_bytes()[..8].try_into().unwrap());
        let quorum = Quorum::new(quorum_config, durable, clock.now(), seed);
        let client_id = format!("samsa-controller-{}", settings.node_id);
        let timeout = Duration::from_millis(
            settings.quorum.request_timeout_ms + settings.quorum.fetch_max_wait_ms,
        );
        // A quorum of one (a single node) logs its quorum's life at debug level: it elects
        // itself at once, and nothing there is for its user to act on.
        info_unless_alone!(
            settings.voters.keys().all(|&id| id == settings.node_id) && settings.bootstrap.is_empty(),
            node_id = settings.node_id,
            voters = ?settings.quorum.voters,
            bootstrap_servers = ?settings.bootstrap,
            log_start_offset = loaded.log_start_offset,
            log_end_offset = loaded.log_end_offset,
            "metadata quorum starting"
        );
        let mut runtime = Runtime {
            node_id: settings.node_id,
            cluster_id: settings.cluster_id,
            quorum,
            store,
            peers: BTreeMap::new(),
            forward: BTreeMap::new(),
            addresses: BTreeMap::new(),
            client_id,
            timeout,
            listen: settings.listen,
            peer_security: settings.peer_security,
            endpoints: settings
                .voters
                .iter()
                .map(|(&node_id, addr)| VoterEndpoint {
                    node_id,
                    listener: settings.listener_name.clone(),
                    host: addr.ip().to_string(),
                    port: addr.port(),
                })
                .collect(),
            tx,
            inbound: HashMap::new(),
            image,
            applied_offset,
            bytes_since_snapshot: 0,
            snapshot_after_bytes: settings.snapshot_after_bytes.max(1),
            snapshot_interval_ms: settings.snapshot_interval_ms,
            last_snapshot_at: clock.now(),
            image_tx,
            status_tx,
            proposals: BTreeMap::new(),
            voters_seen: 0,
            listener_name: settings.listener_name.clone(),
            active: Active::new(
                samsa_cluster::controller::ControllerConfig {
                    node_id: settings.node_id,
                    ..settings.controller
                },
                settings.config_validator,
                elections,
            ),
            clock,
        };
        for (id, addr) in addresses {
            runtime.connect(id, addr);
        }
        runtime.sync_voters();
        runtime
    }

    /// kraft.version 1: connects to voters the set names that this node has no address for
    /// (or another one), and describes the set's endpoints in DescribeQuorum.
    fn sync_voters(&mut self) {
        let version = self.quorum.voters_version();
        if version == self.voters_seen {
            return;
        }
        self.voters_seen = version;
        let Some((_, set)) = self.quorum.voter_set() else {
            return;
        };
        let set = set.clone();
        let mut endpoints = Vec::new();
        for v in set.values() {
            if let Some(addr) = voter_address(v, &self.listener_name) {
                if self.addresses.get(&v.id) != Some(&addr) {
                    tracing::info!(voter = v.id, address = %addr, "a voter of the metadata quorum");
                    self.connect(v.id, addr);
                }
            }
            endpoints.extend(v.endpoints.iter().map(|e| VoterEndpoint {
                node_id: v.id,
                listener: e.name.clone(),
                host: e.host.clone(),
                port: e.port,
            }));
        }
        self.endpoints = endpoints;
    }

    fn change_voters(&mut self, change: VoterChange, reply: oneshot::Sender<VoterChangeRouted>) {
        if self.quorum.role() != Role::Leader {
            let routed = match self.quorum.leader_id().and_then(|l| self.forward.get(&l)) {
                Some(p) => VoterChangeRouted::Forward(p.clone(), self.timeout * 4),
                None => VoterChangeRouted::Done(Err(ReplyError::new(
                    NOT_CONTROLLER,
                    "the metadata quorum has no leader; retry".into(),
                ))),
            };
            let _ = reply.send(routed);
            return;
        }
        let now = self.clock.now();
        let result = match &change {
            VoterChange::Add(v) => self.quorum.add_voter(now, v.clone()),
            VoterChange::Remove { id, directory_id } => {
                self.quorum.remove_voter(now, *id, *directory_id)
            }
        };
        match result {
            Ok(offset) => {
                tracing::info!(?change, offset, "metadata quorum voter change appended");
                let epoch = self.quorum.epoch();
                self.proposals.insert(
                    offset,
                    Pending {
                        epoch,
                        done: Box::new(move |r: Result<i64, ProposalError>| {
                            let answer = r
                                .map(|_| ())
                                .map_err(|e| ReplyError::new(NOT_CONTROLLER, e.to_string()));
                            let _ = reply.send(VoterChangeRouted::Done(answer));
                        }),
                    },
                );
            }
            Err(e) => {
                let _ = reply.send(VoterChangeRouted::Done(Err(ReplyError::new(
                    e.code(),
                    e.to_string(),
                ))));
            }
        }
    }

    /// Records `addr` as node `id`'s controller address and opens connections to it (none to
    /// this node itself). A bootstrap id gets no forwarding connection: it never leads.
    fn connect(&mut self, id: NodeId, addr: SocketAddr) {
        if self.addresses.insert(id, addr) == Some(addr) {
            return;
        }
        if id == self.node_id {
            return;
        }
        self.peers.insert(
            id,
            Peer::spawn(
                addr,
                self.client_id.clone(),
                self.timeout,
                self.peer_security.clone(),
            ),
        );
        if id >= 0 {
            // Long enough for the leader to commit what it was asked.
            let patience = self.timeout * 4;
            let client_id = format!("{}-forward", self.client_id);
            self.forward.insert(
                id,
                Peer::spawn(addr, client_id, patience, self.peer_security.clone()),
            );
        }
    }

    async fn run(&mut self, mut rx: mpsc::UnboundedReceiver<Command>) -> Result<(), StoreError> {
        self.drain()?;
        loop {
            let deadline = self
                .quorum
                .next_deadline()
                .min(self.active.next_deadline().unwrap_or(u64::MAX));
            let now = self.clock.now();
            let sleep = Duration::from_millis(deadline.saturating_sub(now).min(60_000));
            tokio::select! {
                cmd = rx.recv() => {
                    let Some(cmd) = cmd else { return Ok(()) };
                    if !self.command(cmd)? {
                        if !self.peers.is_empty() {
                            // Let the connection tasks send the EndQuorumEpoch of a resigning
                            // leader before the runtime (and they) go.
                            tokio::time::sleep(Duration::from_millis(100)).await;
                        }
                        return Ok(());
                    }
                }
                _ = tokio::time::sleep(sleep) => {
                    let now = self.clock.now();
                    self.quorum.tick(now);
                    self.drain()?;
                    let records = self.active.tick(now);
                    self.propose_own(now, records);
                    self.sweep_inbound(now);
                }
            }
            self.drain()?;
        }
    }

    /// Returns false to stop.
    fn command(&mut self, cmd: Command) -> Result<bool, StoreError> {
        let now = self.clock.now();
        match cmd {
            Command::Inbound {
                from,
                message,
                reply,
            } => {
                let id = request_id(&message);
                tracing::trace!(from, id, message = ?message, "quorum request received");
                self.inbound.insert(id, (now, reply));
                self.quorum.receive(now, from, message);
            }
            Command::Response {
                from,
                message,
                leader,
            } => {
                if let Some((id, addr)) = leader {
                    if self.addresses.get(&id) != Some(&addr) {
                        tracing::info!(
                            leader_id = id,
                            address = %addr,
                            "learned the metadata quorum leader's address"
                        );
                        self.connect(id, addr);
                    }
                }
                self.quorum.receive(now, from, message)
            }
            Command::ChangeVoters { change, reply } => self.change_voters(change, reply),
            Command::Describe(reply) => {
                let answer = if self.quorum.role() == Role::Leader {
                    let mut d = self.quorum.describe();
                    // As Kafka's leader describes itself: fetched and caught up now (so a
                    // follower's lag, which tools take from the leader's times, is never
                    // negative).
                    for me in d.voters.iter_mut().filter(|r| r.node_id == self.node_id) {
                        me.last_fetch_ms = Some(now);
                        me.last_caught_up_ms = Some(now);
                    }
                    Describe::Local(d, self.endpoints.clone())
                } else {
                    match self.quorum.leader_id().and_then(|l| self.forward.get(&l)) {
                        Some(p) => Describe::Forward(p.clone(), self.timeout),
                        None => Describe::NoLeader,
                    }
                };
                let _ = reply.send(answer);
            }
            Command::Controllers(reply) => {
                let _ = reply.send(Controllers {
                    endpoints: self.endpoints.clone(),
                    leader_id: self.quorum.leader_id(),
                });
            }
            Command::Propose { records, reply } => {
                self.propose(now, &records, move |r| {
                    let _ = reply.send(r);
                });
            }
            Command::Request { request, reply } => {
                if !self.active.is_active() {
                    let leader = self.quorum.leader_id();
                    let routed = match leader.and_then(|l| Some((l, self.forward.get(&l)?))) {
                        Some((leader_id, peer)) => Routed::Forward {
                            leader_id,
                            peer: peer.clone(),
                        },
                        None => Routed::Done(Err(ReplyError::new(
                            NOT_CONTROLLER,
                            "the metadata quorum has no leader".into(),
                        ))),
                    };
                    let _ = reply.send(routed);
                    return Ok(true);
                }
                let next_offset = self.quorum.log_end_offset();
                match self.active.decide(now, next_offset, request) {
                    Err(e) => {
                        let _ = reply.send(Routed::Done(Err(e)));
                    }
                    Ok((records, answer)) if records.is_empty() => {
                        let _ = reply.send(Routed::Done(Ok(answer)));
                    }
                    Ok((records, answer)) => {
                        let ok = self.propose(now, &records, move |r| {
                            let _ = reply.send(Routed::Done(
                                r.map(|_| answer)
                                    .map_err(|e| ReplyError::new(NOT_CONTROLLER, e.to_string())),
                            ));
                        });
                        if !ok {
                            self.active
                                .rebuild(&self.image, self.applied_offset, &self.quorum);
                        }
                    }
                }
            }
            Command::Shutdown => {
                // A leader hands over at once rather than after the others' fetch timeout.
                if self.quorum.role() == Role::Leader {
                    self.quorum.resign(now);
                    self.drain()?;
                }
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Proposes `records` as one batch; `done` gets the outcome once it is decided. Returns
    /// whether the quorum took the batch.
    fn propose(
        &mut self,
        now: u64,
        records: &[MetadataRecord],
        done: impl FnOnce(Result<i64, ProposalError>) + Send + 'static,
    ) -> bool {
        let encoded: Vec<Record> = records.iter().map(|r| Record::value(r.encode())).collect();
        match self.quorum.propose(now, encoded) {
            Ok(last) => {
                let epoch = self.quorum.epoch();
                self.proposals.insert(
                    last,
                    Pending {
                        epoch,
                        done: Box::new(done),
                    },
                );
                true
            }
            Err(ProposeError::NotLeader { leader_id, .. }) => {
                done(Err(ProposalError::NotController { leader_id }));
                false
            }
            Err(e) => {
                done(Err(ProposalError::Invalid(e.to_string())));
                false
            }
        }
    }

    /// The active controller's records of its own (bootstrap, fencing, no-ops).
    fn propose_own(&mut self, now: u64, records: Vec<MetadataRecord>) {
        if records.is_empty() {
            return;
        }
        if !self.propose(now, &records, |r| {
            if let Err(e) = r {
                tracing::debug!(error = %e, "controller records not committed");
            }
        }) {
            self.active
                .rebuild(&self.image, self.applied_offset, &self.quorum);
        }
    }

    /// Requests from peers that the quorum never answered (it answers every one it gets;
    /// this only bounds the map if that ever changes).
    fn sweep_inbound(&mut self, now: u64) {
        let horizon = 60_000;
        self.inbound
            .retain(|_, (at, reply)| now.saturating_sub(*at) < horizon && !reply.is_closed());
    }

    /// Executes the quorum's actions until it has none.
    fn drain(&mut self) -> Result<(), StoreError> {
        while let Some(action) = self.quorum.poll_action() {
            self.execute(action)?;
        }
        self.sync_voters();
        Ok(())
    }

    fn execute(&mut self, action: Action) -> Result<(), StoreError> {
        match action {
            Action::Send { to, message } => self.send(to, message),
            Action::PersistState(s) => self.store.persist_quorum_state(&QuorumStateFile {
                leader_id: s.leader_id.unwrap_or(-1),
                leader_epoch: s.epoch,
                voted_id: s.voted_id.unwrap_or(-1),
                voted_directory_id: Uuid::nil(),
            })?,
            Action::Append(batches) => self.store.append(&batches)?,
            Action::Flush { .. } => {
                let flushed = self.store.flush()?;
                self.quorum.flushed(self.clock.now(), flushed);
            }
            Action::Truncate { end_offset } => {
                assert!(
                    end_offset >= self.applied_offset,
                    "truncating committed records: to {end_offset} below applied {}",
                    self.applied_offset
                );
                self.store.truncate_to(end_offset)?;
            }
            Action::InstallSnapshot { id, data } => self.install_snapshot(id, data)?,
            Action::DeleteBefore(id) => {
                self.store.delete_before(id)?;
            }
            Action::Committed { high_watermark } => self.apply_committed(high_watermark)?,
            Action::RoleChanged {
                role,
                epoch,
                leader_id,
            } => {
                info_unless_alone!(
                    self.addresses.keys().all(|&id| id == self.node_id),
                    node_id = self.node_id,
                    ?role,
                    epoch,
                    ?leader_id,
                    "metadata quorum role"
                );
                if role != Role::Leader {
                    for (_, p) in std::mem::take(&mut self.proposals) {
                        (p.done)(Err(ProposalError::NotController { leader_id }));
                    }
                    if self.active.is_active() {
                        self.active.deactivate();
                    }
                } else if !self.active.is_active() {
                    let now = self.clock.now();
                    let records =
                        self.active
                            .activate(now, &self.image, self.applied_offset, &self.quorum);
                    info_unless_alone!(
                        self.addresses.keys().all(|&id| id == self.node_id),
                        node_id = self.node_id,
                        epoch,
                        "this node is the active controller"
                    );
                    self.propose_own(now, records);
                }
                self.publish_status();
            }
        }
        Ok(())
    }

    fn publish_status(&self) {
        self.status_tx.send_replace(QuorumStatus {
            role: self.quorum.role(),
            epoch: self.quorum.epoch(),
            leader_id: self.quorum.leader_id(),
            high_watermark: self.quorum.high_watermark(),
            applied_offset: self.applied_offset,
            kraft_version: self.quorum.kraft_version(),
        });
    }

    fn send(&mut self, to: NodeId, message: Message) {
        tracing::trace!(to, message = ?message, "quorum message sent");
        if is_response(&message) {
            if let Some((_, reply)) = self.inbound.remove(&request_id(&message)) {
                let leader = match &message {
                    Message::FetchResponse(r) => {
                        r.leader_id.and_then(|l| self.addresses.get(&l).copied())
                    }
                    _ => None,
                };
                let _ = reply.send((message, leader));
            }
            return;
        }
        let Some(peer) = self.peers.get(&to) else {
            tracing::warn!(to, message = message.name(), "no address for controller");
            return;
        };
        let Some((key, version, body)) =
            wire::request_to_kafka(&message, self.node_id, to, &self.cluster_id)
        else {
            return;
        };
        let id = request_id(&message);
        let answer = peer.send(key, version, body);
        let tx = self.tx.clone();
        tokio::spawn(async move {
            match answer.await {
                Ok(Ok(body)) => match (
                    wire::fetch_leader_endpoint(&body),
                    wire::response_from_kafka(key, version, body, id),
                ) {
                    (leader, Ok(message)) => {
                        let _ = tx.send(Command::Response {
                            from: to,
                            message,
                            leader,
                        });
                    }
                    (_, Err(e)) => {
                        tracing::warn!(to, api = ?key, error = %e, "bad response from controller")
                    }
                },
                Ok(Err(e)) => {
                    tracing::debug!(to, api = ?key, error = %e, "controller request failed")
                }
                Err(_) => {}
            }
        });
    }

    /// Applies the newly committed batches to the image, publishes it, answers proposals.
    fn apply_committed(&mut self, high_watermark: i64) -> Result<(), StoreError> {
        let mut changed = false;
        let mut applied = self.applied_offset;
        let mut bytes = 0u64;
        for batch in self.quorum.committed_batches(applied) {
            debug_assert!(batch.base_offset >= applied, "batches are applied once");
            // About the batch's size on disk (Kafka counts committed batch bytes), so that
            // small records, like the no-ops written twice a second, still lead to snapshots.
            bytes += BATCH_OVERHEAD_BYTES + RECORD_OVERHEAD_BYTES * batch.records.len() as u64;
            if !batch.control {
                for (i, r) in batch.records.iter().enumerate() {
                    let Some(value) = &r.value else { continue };
                    bytes += value.len() as u64;
                    let offset = batch.base_offset + i as i64;
                    match MetadataRecord::decode(value) {
                        Ok(record) => {
                            if let Err(e) = self.image.apply(&record) {
                                // A committed record that does not apply is a bug in whoever
                                // proposed it; every node skips it the same way.
                                tracing::error!(offset, error = %e, "committed metadata record does not apply");
                            }
                            changed = true;
                        }
                        Err(e) => {
                            tracing::error!(offset, error = %e, "committed metadata record cannot be decoded")
                        }
                    }
                }
            }
            applied = batch.next_offset();
        }
        // The action's high watermark may be behind the quorum's by now (it moved again
        // before this action ran); what was applied is never past the quorum's.
        debug_assert!(applied <= self.quorum.high_watermark());
        let high_watermark = high_watermark.max(self.quorum.high_watermark());
        self.applied_offset = applied;
        self.bytes_since_snapshot += bytes;
        if changed {
            self.image_tx.send_replace(Arc::new(self.image.clone()));
        }
        // Proposals at or below the high watermark are decided: committed if their epoch's
        // batch is still there, lost otherwise.
        let decided: Vec<i64> = self
            .proposals
            .range(..high_watermark)
            .map(|(&o, _)| o)
            .collect();
        for offset in decided {
            let p = self.proposals.remove(&offset).expect("listed");
            let result = if self.quorum.epoch_at(offset) == Some(p.epoch) {
                Ok(offset)
            } else {
                Err(ProposalError::NotController {
                    leader_id: self.quorum.leader_id(),
                })
            };
            (p.done)(result);
        }
        self.publish_status();
        let due = self.bytes_since_snapshot >= self.snapshot_after_bytes
            || (self.snapshot_interval_ms > 0
                && self.bytes_since_snapshot > 0
                && self.clock.now().saturating_sub(self.last_snapshot_at)
                    >= self.snapshot_interval_ms);
        if due && self.applied_offset > self.quorum.log_start_offset() {
            self.snapshot()?;
        }
        Ok(())
    }

    /// Writes a snapshot of the image at the applied offset and lets the quorum drop the log
    /// below it.
    fn snapshot(&mut self) -> Result<(), StoreError> {
        let end_offset = self.applied_offset;
        let epoch = self
            .quorum
            .epoch_at(end_offset - 1)
            .expect("the applied offset is in the log");
        let id = SnapshotId { end_offset, epoch };
        let records: Vec<Bytes> = self.image.to_records().iter().map(|r| r.encode()).collect();
        let voters = self.quorum.voter_set_at(end_offset).cloned();
        self.store.write_snapshot_with_voters(
            id,
            &records,
            crate::util::now_ms(),
            voters.as_ref(),
        )?;
        let bytes = self.store.read_snapshot(id)?.bytes;
        let made = self.quorum.snapshot_created(end_offset, bytes);
        debug_assert_eq!(made, id);
        self.bytes_since_snapshot = 0;
        tracing::info!(
            end_offset,
            epoch,
            records = records.len(),
            "metadata snapshot written"
        );
        Ok(())
    }

    /// A snapshot fetched from the leader: store it, restart the log at its end and rebuild
    /// the image from it.
    fn install_snapshot(&mut self, id: SnapshotId, data: Bytes) -> Result<(), StoreError> {
        let snapshot = self.store.install_snapshot(id, data)?;
        self.image = image_from_snapshot(&snapshot.records).map_err(|why| StoreError::Corrupt {
            path: self.store.dir().to_path_buf(),
            why,
        })?;
        self.applied_offset = id.end_offset;
        self.bytes_since_snapshot = 0;
        self.image_tx.send_replace(Arc::new(self.image.clone()));
        tracing::info!(
            end_offset = id.end_offset,
            epoch = id.epoch,
            "metadata snapshot installed from the leader"
        );
        Ok(())
    }
}

fn is_response(m: &Message) -> bool {
    matches!(
        m,
        Message::VoteResponse(_)
            | Message::BeginQuorumEpochResponse(_)
            | Message::EndQuorumEpochResponse(_)
            | Message::FetchResponse(_)
            | Message::FetchSnapshotResponse(_)
    )
}

/// The id a request carries, or a response echoes.
pub(super) fn request_id(m: &Message) -> u64 {
    match m {
        Message::Vote(r) => r.id,
        Message::VoteResponse(r) => r.id,
        Message::BeginQuorumEpoch(r) => r.id,
        Message::BeginQuorumEpochResponse(r) => r.id,
        Message::EndQuorumEpoch(r) => r.id,
        Message::EndQuorumEpochResponse(r) => r.id,
        Message::Fetch(r) => r.id,
        Message::FetchResponse(r) => r.id,
        Message::FetchSnapshot(r) => r.id,
        Message::FetchSnapshotResponse(r) => r.id,
    }
}
