//! For in-process tests (this crate's and `broker/tests/`): a node opened on a log directory
//! that has joined its cluster (registered with the controller and unfenced), as `samsa` has
//! before it serves, so that topics created through the controller can be placed on it.
//!
//! Two forms: [`open_joined`], a whole [`Broker`] (for tests that drive handlers), and
//! [`NodeHarness`], a [`Node`] with only the coordinators a test asks for, the publisher making
//! them follow the metadata image and their timers running. Dropping either leaves the cluster
//! (a controlled shutdown) and lets the node go, so that the same directory can be opened
//! again.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use crate::broker::Broker;
use crate::config::BrokerConfig;
use crate::group::GroupCoordinator;
use crate::net::IoEngine;
use crate::node::Node;
use crate::publisher::{Followers, Publishes};
use crate::share::ShareCoordinator;
use crate::txn::TransactionCoordinator;

/// A task run beside the node's lifecycle until it leaves the cluster.
type Task = Pin<Box<dyn Future<Output = ()> + Send>>;

/// The thread that keeps a node's registration (`lifecycle::run`) and runs the tasks given
/// with it, until [`leave`](Member::leave).
struct Member {
    leave: watch::Sender<bool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Member {
    /// Starts the thread, then waits (at most 10 s) until the controller has unfenced the node
    /// and the publisher has given its partitions their roles. The thread runs either way: the
    /// caller holds the `Member` so that its drop ends it, even when joining failed.
    fn join(node: &Arc<Node>, tasks: Vec<Task>) -> std::io::Result<(Member, bool)> {
        let (leave, leaving) = watch::channel(false);
        let member = node.clone();
        let thread = std::thread::Builder::new()
            .name("test-membership".into())
            .spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("a runtime for the membership");
                let membership = member.membership.clone();
                rt.block_on(async move {
                    let tasks: Vec<_> = tasks.into_iter().map(tokio::spawn).collect();
                    crate::lifecycle::run(member, membership, leaving).await;
                    for t in tasks {
                        t.abort();
                        let _ = t.await;
                    }
                });
            })?;
        let member = Member {
            leave,
            thread: Some(thread),
        };
        let mut joined = node.membership.subscribe();
        let unfenced = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?
            .block_on(async {
                tokio::time::timeout(
                    Duration::from_secs(10),
                    joined.wait_for(|m| m.broker_epoch.is_some() && !m.fenced),
                )
                .await
                .is_ok_and(|r| r.is_ok())
                    && crate::metadata_wait::serving(node, Duration::from_secs(10)).await
            });
        Ok((member, unfenced))
    }

    /// Leaves the cluster (a controlled shutdown) and waits for the thread and its tasks.
    fn leave(&mut self) {
        self.leave.send_replace(true);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

pub struct JoinedBroker {
    broker: Option<Arc<Broker>>,
    member: Member,
}

/// Opens a broker on `config` and waits (at most 10 s) until the controller has unfenced it.
pub fn open_joined(config: BrokerConfig) -> anyhow::Result<JoinedBroker> {
    let broker = Broker::open(config, IoEngine::Epoll)?;
    let (member, unfenced) = Member::join(&broker.node, Vec::new())?;
    let joined = JoinedBroker {
        broker: Some(broker),
        member,
    };
    anyhow::ensure!(unfenced, "the broker was not unfenced within 10 s");
    Ok(joined)
}

impl std::ops::Deref for JoinedBroker {
    type Target = Arc<Broker>;
    fn deref(&self) -> &Arc<Broker> {
        self.broker.as_ref().expect("present until dropped")
    }
}

impl Drop for JoinedBroker {
    fn drop(&mut self) {
        self.member.leave();
        if let Some(b) = self.broker.take() {
            b.node.controller.shutdown();
        }
    }
}

/// The coordinators a [`NodeHarness`] builds over its node.
#[derive(Debug, Clone, Copy, Default)]
pub struct Services {
    /// The group coordinator, with a share coordinator beside it (it loads the share groups
    /// of `__consumer_offsets` into one).
    pub groups: bool,
    /// The transaction coordinator, built with the group coordinator (which it implies) for
    /// the markers of transactional offsets.
    pub txn: bool,
    /// The share coordinator (share-partition state in `__share_group_state`), with or without
    /// the group coordinator.
    pub shares: bool,
}

/// A node and the coordinators a test asked for: what the publisher follows the image with.
struct OnNode {
    node: Arc<Node>,
    groups: Option<Arc<GroupCoordinator>>,
    shares: Option<Arc<ShareCoordinator>>,
    txn: Option<Arc<TransactionCoordinator>>,
}

impl Publishes for OnNode {
    fn node(&self) -> &Arc<Node> {
        &self.node
    }

    fn followers(&self) -> Followers<'_> {
        Followers {
            groups_and_shares: self.groups.as_deref().zip(self.shares.as_deref()),
            txn: self.txn.as_deref(),
            ..Followers::default()
        }
    }
}

/// A [`Node`] opened on a log directory, registered and unfenced, with the coordinators of
/// [`Services`] over it: the publisher makes them follow the metadata image (they load their
/// internal topics' partitions as a broker's do) and their timer tasks run, as `samsa` runs
/// them. No client listener, authorizer or replica fetcher. Dropping it leaves the cluster,
/// stops the timers and the publisher and shuts the controller down, so that the same
/// directory can be opened again.
pub struct NodeHarness {
    on_node: Option<Arc<OnNode>>,
    member: Member,
    publisher: Option<std::thread::JoinHandle<()>>,
}

impl NodeHarness {
    /// Opens the node of `config` with `services` and waits (at most 10 s) until the
    /// controller has unfenced it and the publisher has given its partitions their roles.
    pub fn open(config: BrokerConfig, services: Services) -> anyhow::Result<NodeHarness> {
        let node = crate::start::open_node(config)?;
        let groups =
            (services.groups || services.txn).then(|| crate::start::group_coordinator(&node));
        let shares =
            (groups.is_some() || services.shares).then(|| Arc::new(ShareCoordinator::new()));
        let txn = match &groups {
            Some(g) if services.txn => Some(crate::start::txn_coordinator(&node, g.clone())?),
            _ => None,
        };
        let mut timers: Vec<Task> = Vec::new();
        if let Some(g) = &groups {
            timers.push(Box::pin(g.clone().run_timers(node.clone())));
        }
        if let Some(s) = &shares {
            timers.push(Box::pin(s.clone().run_timers(node.clone())));
        }
        if let Some(t) = &txn {
            timers.push(Box::pin(t.clone().run_timers(node.clone())));
        }
        let on_node = Arc::new(OnNode {
            node,
            groups,
            shares,
            txn,
        });
        let publisher = crate::publisher::start(&on_node)?;
        let (member, unfenced) = Member::join(&on_node.node, timers)?;
        let harness = NodeHarness {
            on_node: Some(on_node),
            member,
            publisher: Some(publisher),
        };
        anyhow::ensure!(unfenced, "the node was not unfenced within 10 s");
        Ok(harness)
    }

    fn on_node(&self) -> &OnNode {
        self.on_node.as_ref().expect("present until dropped")
    }

    pub fn node(&self) -> &Arc<Node> {
        &self.on_node().node
    }

    /// The group coordinator (panics when the harness was opened without it).
    pub fn groups(&self) -> &Arc<GroupCoordinator> {
        self.on_node()
            .groups
            .as_ref()
            .expect("opened with Services { groups: true }")
    }

    /// The transaction coordinator (panics when the harness was opened without it).
    pub fn txn(&self) -> &Arc<TransactionCoordinator> {
        self.on_node()
            .txn
            .as_ref()
            .expect("opened with Services { txn: true }")
    }

    /// The share coordinator (panics when the harness was opened without it or groups).
    pub fn shares(&self) -> &Arc<ShareCoordinator> {
        self.on_node()
            .shares
            .as_ref()
            .expect("opened with Services { shares: true } or { groups: true }")
    }
}

impl Drop for NodeHarness {
    fn drop(&mut self) {
        self.member.leave();
        if let Some(on_node) = self.on_node.take() {
            on_node.node.begin_shutdown();
            if let Some(p) = self.publisher.take() {
                let _ = p.join();
            }
            on_node.node.controller.shutdown();
        }
    }
}
