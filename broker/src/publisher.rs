//! The metadata publisher (Kafka's `BrokerMetadataPublisher`): makes this broker's local
//! state follow the committed metadata image. For every topic of the image it creates the
//! logs of the partitions placed on this node and gives each its leadership and leader epoch;
//! a topic the image removed is deleted here, with its logs, and so is a partition a
//! reassignment moved off this node (once the image is complete, as for topics).
//!
//! Topics only this node knows (internal topics, topics created before the metadata log held
//! topics) are never touched. A topic of the image that is missing from it is deleted only
//! once the image is known complete: it was seen in an earlier image of this run, or the
//! broker has caught up with the quorum (unfenced once), so that a node replaying an old
//! snapshot at start does not delete what a later record still holds.
//!
//! Besides the node's topics, the image is followed by the services a node runs: the
//! authorizer's ACLs, the replica fetchers, and the coordinators that follow the leadership
//! of their internal topics ([`Followers`]). A [`Broker`] has all of them; an in-process test
//! of one coordinator runs the publisher over a [`Node`] and that coordinator alone.

use std::collections::HashSet;
use std::sync::{Arc, Weak};

use samsa_cluster::metadata::image::CONFIG_RESOURCE_TOPIC;
use samsa_cluster::metadata::MetadataImage;
use uuid::Uuid;

use crate::broker::Broker;
use crate::group::GroupCoordinator;
use crate::node::Node;
use crate::partition::Leadership;
use crate::replication::fetcher::ReplicaFetchers;
use crate::share::ShareCoordinator;
use crate::topics::ImageTopic;
use crate::txn::TransactionCoordinator;

/// The services that follow the image besides the node's topics; each is `None` when the
/// node runs without it.
#[derive(Default, Clone, Copy)]
pub struct Followers<'a> {
    /// Takes the image's ACLs.
    pub authorizer: Option<&'a crate::acl::Authorizer>,
    /// Start and stop copying the partitions this node follows. Without them a partition that
    /// becomes a follower here copies nothing (a test of one node has no other leader).
    pub replica_fetchers: Option<&'a ReplicaFetchers>,
    /// The group coordinator loads its groups, and the share groups among them into the share
    /// coordinator, from the `__consumer_offsets` partitions this node leads.
    pub groups_and_shares: Option<(&'a GroupCoordinator, &'a ShareCoordinator)>,
    /// The transaction coordinator loads its transactions from the `__transaction_state`
    /// partitions this node leads.
    pub txn: Option<&'a TransactionCoordinator>,
}

/// What the publisher's thread holds (weakly: the thread ends once it is dropped): a node and
/// the services that follow its image.
pub trait Publishes: Send + Sync + 'static {
    fn node(&self) -> &Arc<Node>;
    fn followers(&self) -> Followers<'_>;
}

impl Publishes for Broker {
    fn node(&self) -> &Arc<Node> {
        &self.node
    }

    fn followers(&self) -> Followers<'_> {
        Followers {
            authorizer: self.authorizer.as_ref(),
            replica_fetchers: Some(&self.replica_fetchers),
            groups_and_shares: Some((&self.groups, &self.shares)),
            txn: Some(&self.txn),
        }
    }
}

/// What the publisher remembers between images.
#[derive(Default)]
pub struct Published {
    /// Every topic id some published image held during this run.
    seen: HashSet<Uuid>,
    /// The image published last: topics it holds unchanged (the same `Arc`, the same
    /// configs) are not looked at again.
    last: Option<Arc<MetadataImage>>,
    /// Whether the partitions took the roles the image gives them (leader, follower). Not
    /// before this incarnation is registered and caught up (see [`publish`]).
    roles: bool,
}

/// The local form of the image's topics for node `node_id`, leaving out those that are the
/// same in `last` unless `retry` names them (their last install failed).
pub fn image_topics(
    image: &MetadataImage,
    last: Option<&MetadataImage>,
    node_id: i32,
    retry: impl Fn(&Uuid) -> bool,
) -> Vec<ImageTopic> {
    let configs = |i: &MetadataImage, name: &str| i.configs(CONFIG_RESOURCE_TOPIC, name).cloned();
    image
        .topics()
        .filter(|t| {
            retry(&t.id)
                || last
                    .and_then(|l| l.topic_by_id(&t.id).map(|o| (l, o)))
                    .is_none_or(|(l, o)| {
                        !Arc::ptr_eq(o, t) || configs(l, &t.name) != configs(image, &t.name)
                    })
        })
        .map(|t| ImageTopic {
            name: t.name.to_string(),
            id: t.id,
            partition_count: t.partitions().len() as i32,
            hosted: t
                .partitions()
                .iter()
                .filter(|p| p.replicas.contains(&node_id))
                .map(|p| {
                    (
                        p.partition_id,
                        Leadership {
                            leader: p.leader,
                            leader_epoch: p.leader_epoch,
                            partition_epoch: p.partition_epoch,
                            replicas: p.replicas.to_vec(),
                            isr: p.isr.to_vec(),
                        },
                    )
                })
                .collect(),
            overrides: configs(image, &t.name).unwrap_or_default(),
        })
        .collect()
}

/// Makes the node's topics, and `followers`, match `image`. `complete`: this incarnation of the
/// broker is registered and unfenced, so the image holds every committed record up to the
/// quorum's high watermark as this broker last learnt it (deletions of topics never seen in
/// this run wait for it).
///
/// Until then the partitions are opened but take no role: no leadership and no fetching. The
/// image this node had on disk may be old, and may still make it the leader of an epoch whose
/// ISR has grown since (a change it never learnt of): leading it again would move the high
/// watermark over a smaller ISR than the controller's, and a replica of that ISR would lack
/// committed records (found by the replication simulation). The controller takes a new
/// incarnation out of every ISR and leadership when it registers, and unfences it once it has
/// caught up with that; Kafka likewise starts its publishers only after that catch-up.
pub fn publish(
    node: &Arc<Node>,
    followers: &Followers,
    image: &Arc<MetadataImage>,
    complete: bool,
    state: &mut Published,
) {
    crate::follow::configs_and_acls(node, followers.authorizer, image);
    let lag_ms = node.config.long("replica.lag.time.max.ms").max(1) as u64;
    let now_ms = crate::util::now_ms() as u64;
    let mut transitions = Vec::new();
    // The first complete image is looked at whole: the roles held back before apply now.
    let last = if complete && !state.roles {
        state.roles = true;
        None
    } else {
        state.last.clone()
    };
    let retry = |id: &Uuid| node.topics.install_failure(id).is_some();
    for mut t in image_topics(image, last.as_deref(), node.node_id, retry) {
        state.seen.insert(t.id);
        // Kafka's `TopicConfigHandler`: the throttled-replicas lists, for this broker.
        node.replication_quotas.set_topic(
            &t.name,
            t.overrides
                .get("leader.replication.throttled.replicas")
                .map(String::as_str),
            t.overrides
                .get("follower.replication.throttled.replicas")
                .map(String::as_str),
            node.node_id,
        );
        if !state.roles {
            for (_, leadership) in &mut t.hosted {
                leadership.leader = -1;
            }
        }
        match node
            .topics
            .install(&t, node.node_id, lag_ms, now_ms, state.roles)
        {
            Ok(changed) => {
                node.topics.note_install(t.id, None);
                transitions.extend(changed)
            }
            Err(e) => {
                tracing::warn!(topic = %t.name, id = %t.id, error = %e, "cannot install the metadata image's topic here");
                node.topics.note_install(t.id, Some(e.to_string()));
            }
        }
    }
    if let Some(fetchers) = followers
        .replica_fetchers
        .filter(|_| !transitions.is_empty())
    {
        fetchers.apply(node, transitions);
    }
    for (name, id) in node.topics.managed() {
        if image.topic_by_id(&id).is_some() || !(complete || state.seen.contains(&id)) {
            continue;
        }
        node.replication_quotas.remove_topic(&name);
        if let Err(e) = node.topics.remove_managed(&id) {
            tracing::warn!(topic = %name, id = %id, error = %e, "cannot delete a topic the metadata image removed");
        } else if let Some((groups, _)) = followers.groups_and_shares {
            groups.delete_topic_offsets(node, &name);
        }
    }
    state.last = Some(image.clone());
    // The coordinators follow the leadership of their internal topics' partitions.
    if let Some((groups, shares)) = followers.groups_and_shares {
        groups.follow_leadership(node, shares);
    }
    if let Some(txn) = followers.txn {
        txn.follow_leadership(node);
    }
    node.published.send_replace((image.clone(), state.roles));
}

/// How often topics whose logs could not be created here are tried again.
const INSTALL_RETRY: std::time::Duration = std::time::Duration::from_secs(5);
/// How long the publisher waits without a new image before giving its freed memory back.
const GIVE_BACK_AFTER: std::time::Duration = std::time::Duration::from_millis(200);

/// Publishes the image the node has now (before anything is served), then follows it on the
/// publisher's thread ([`spawn`]).
pub fn start<T: Publishes>(owner: &Arc<T>) -> std::io::Result<std::thread::JoinHandle<()>> {
    let mut published = Published::default();
    let node = owner.node();
    publish(
        node,
        &owner.followers(),
        &node.controller.image(),
        false,
        &mut published,
    );
    spawn(owner, published)
}

/// Runs the publisher on its own thread until `owner` (the broker) is gone or the node shuts
/// down.
pub fn spawn<T: Publishes>(
    owner: &Arc<T>,
    mut state: Published,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    let weak: Weak<T> = Arc::downgrade(owner);
    let node = owner.node();
    let mut images = node.controller.subscribe();
    let mut membership = node.membership.subscribe();
    let mut shutdown = node.shutdown_signal();
    std::thread::Builder::new()
        .name("metadata-publisher".into())
        .spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime for the metadata publisher");
            rt.block_on(async move {
                let mut complete = false;
                let mut strays_released = false;
                let mut retry = tokio::time::interval(INSTALL_RETRY);
                retry.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                // Once the images stop coming for a moment, the memory their publishing freed
                // goes back to the kernel (creating 10,000 partitions otherwise left about
                // 30 MB resident in this thread's heap).
                let mut give_back_at: Option<tokio::time::Instant> = None;
                loop {
                    tokio::select! {
                        _ = async { tokio::time::sleep_until(give_back_at.expect("armed")).await },
                            if give_back_at.is_some() => {
                            give_back_at = None;
                            crate::alloc_count::give_back_this_threads_memory();
                            continue;
                        }
                        changed = images.changed() => if changed.is_err() { return },
                        changed = membership.changed() => if changed.is_err() { return },
                        _ = shutdown.changed() => return,
                        // Topics whose logs could not be created here are tried again (the
                        // disk may have room now), as the image alone never changes for them.
                        _ = retry.tick() => {
                            let Some(owner) = weak.upgrade() else { return };
                            if !owner.node().topics.has_install_failures() {
                                continue;
                            }
                        }
                    }
                    let Some(owner) = weak.upgrade() else { return };
                    let node = owner.node();
                    if node.is_shutting_down() {
                        return;
                    }
                    // One borrow: a second one taken while the first is held deadlocks
                    // once the membership thread waits to write between the two (the watch's
                    // lock favours a waiting writer over new readers).
                    let joined = {
                        let m = node.membership.borrow();
                        m.broker_epoch.is_some() && !m.fenced
                    };
                    complete |= joined;
                    let image = images.borrow_and_update().clone();
                    publish(node, &owner.followers(), &image, complete, &mut state);
                    give_back_at = Some(tokio::time::Instant::now() + GIVE_BACK_AFTER);
                    if complete && !strays_released {
                        node.topics.release_strays();
                        strays_released = true;
                    }
                }
            });
        })
}
