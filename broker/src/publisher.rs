//! The metadata publisher (Kafka's `BrokerMetadataPublisher`): makes this broker's local
//! state follow the committed metadata image. For every topic of the image it creates the
//! logs of the partitions placed on this node and gives each its leadership and leader epoch;
//! a topic the image removed is deleted here, with its logs.
//!
//! Until the image holds this run's registration of the broker, it leads nothing the image
//! says it leads (see [`may_lead`]).
//!
//! Topics only this node knows (internal topics, topics created before the metadata log held
//! topics) are never touched. A topic of the image that is missing from it is deleted only
//! once the image is known complete: it was seen in an earlier image of this run, or the
//! broker has caught up with the quorum (unfenced once), so that a node replaying an old
//! snapshot at start does not delete what a later record still holds.

use std::collections::HashSet;
use std::sync::{Arc, Weak};

use samsa_cluster::metadata::image::CONFIG_RESOURCE_TOPIC;
use samsa_cluster::metadata::MetadataImage;
use uuid::Uuid;

use crate::partition::Leadership;
use crate::server::Broker;
use crate::topics::ImageTopic;

/// What the publisher remembers between images.
#[derive(Default)]
pub struct Published {
    /// Every topic id some published image held during this run.
    seen: HashSet<Uuid>,
    /// The image published last: topics it holds unchanged (the same `Arc`, the same
    /// configs) are not looked at again.
    last: Option<Arc<MetadataImage>>,
    /// Whether that image was published with this broker's leaderships (see [`may_lead`]).
    led: bool,
}

/// Whether this broker may lead what `image` says it leads: once the image holds this run's
/// registration (Kafka's brokers publish nothing before they registered and caught up). Before
/// that, the image is the last run's: a node restarted within its session timeout would lead
/// again at the epoch it led before, from a log that may have lost its unflushed tail to a power
/// cut while its followers kept it, and records written there anew under the same epoch would
/// differ from the followers' without any fetch noticing (a follower's last epoch ends where
/// the leader's log does). Registering as a new incarnation takes the broker out of every
/// leadership and ISR first, in the same batch, so the image that holds the registration no
/// longer names it leader; a later election does, at a new epoch.
fn may_lead(broker: &Broker, image: &MetadataImage) -> bool {
    let Some(epoch) = broker.membership.borrow().broker_epoch else {
        return false;
    };
    image
        .broker(broker.node_id)
        .is_some_and(|r| r.epoch == epoch)
}

/// The local form of the image's topics for node `node_id`, leaving out those that are the
/// same in `last`; without `lead`, a partition the image says `node_id` leads has no leader
/// here.
pub fn image_topics(
    image: &MetadataImage,
    last: Option<&MetadataImage>,
    node_id: i32,
    lead: bool,
) -> Vec<ImageTopic> {
    let configs = |i: &MetadataImage, name: &str| i.configs(CONFIG_RESOURCE_TOPIC, name).cloned();
    image
        .topics()
        .filter(|t| {
            last.and_then(|l| l.topic_by_id(&t.id).map(|o| (l, o)))
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
                            leader: if p.leader == node_id && !lead {
                                -1
                            } else {
                                p.leader
                            },
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

/// Makes the broker's topics match `image`. `complete`: the image holds every committed
/// record up to the quorum's high watermark as this broker last learnt it (deletions of
/// topics never seen in this run wait for it).
pub fn publish(
    broker: &Arc<Broker>,
    image: &Arc<MetadataImage>,
    complete: bool,
    state: &mut Published,
) {
    crate::follow::configs_and_acls(broker, image);
    let lag_ms = broker.config.long("replica.lag.time.max.ms").max(1) as u64;
    let now_ms = crate::util::now_ms() as u64;
    let mut transitions = Vec::new();
    let lead = may_lead(broker, image);
    if lead != state.led {
        state.last = None; // every partition again, with or without its leaderships
        state.led = lead;
    }
    for t in image_topics(image, state.last.as_deref(), broker.node_id, lead) {
        state.seen.insert(t.id);
        match broker.topics.install(&t, broker.node_id, lag_ms, now_ms) {
            Ok(changed) => transitions.extend(changed),
            Err(e) => {
                tracing::warn!(topic = %t.name, id = %t.id, error = %e, "cannot install the metadata image's topic here")
            }
        }
    }
    if !transitions.is_empty() {
        broker.replica_fetchers.apply(broker, transitions);
    }
    for (name, id) in broker.topics.managed() {
        if image.topic_by_id(&id).is_some() || !(complete || state.seen.contains(&id)) {
            continue;
        }
        if let Err(e) = broker.topics.remove_managed(&id) {
            tracing::warn!(topic = %name, id = %id, error = %e, "cannot delete a topic the metadata image removed");
        }
    }
    state.last = Some(image.clone());
    // The coordinators follow the leadership of their internal topics' partitions.
    broker.groups.follow_leadership(broker);
    broker.txn.follow_leadership(broker);
    broker.published.send_replace(image.clone());
}

/// Waits (at most `timeout`) until the publisher has published the image the controller has
/// now, or a later one; returns whether it did. (The image changes every
/// `metadata.max.idle.interval.ms` at least, with the controller's no-op records, so "the
/// image of now" is compared afresh each time the publisher publishes.)
pub async fn caught_up(broker: &Broker, timeout: std::time::Duration) -> bool {
    let mut published = broker.published.subscribe();
    let waited = tokio::time::timeout(timeout, async {
        loop {
            if Arc::ptr_eq(&published.borrow_and_update(), &broker.controller.image()) {
                return true;
            }
            if published.changed().await.is_err() {
                return false;
            }
        }
    });
    waited.await.unwrap_or(false)
}

/// Runs the publisher on its own thread until the broker is gone or shuts down.
pub fn spawn(broker: &Arc<Broker>, mut state: Published) -> std::io::Result<()> {
    let weak: Weak<Broker> = Arc::downgrade(broker);
    let mut images = broker.controller.subscribe();
    let mut membership = broker.membership.subscribe();
    let mut shutdown = broker.shutdown_signal();
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
                loop {
                    tokio::select! {
                        changed = images.changed() => if changed.is_err() { return },
                        changed = membership.changed() => if changed.is_err() { return },
                        _ = shutdown.changed() => return,
                    }
                    let Some(broker) = weak.upgrade() else { return };
                    if broker.is_shutting_down() {
                        return;
                    }
                    complete |= broker
                        .membership
                        .borrow()
                        .broker_epoch
                        .is_some_and(|_| !broker.membership.borrow().fenced);
                    let image = images.borrow_and_update().clone();
                    publish(&broker, &image, complete, &mut state);
                    if complete && !strays_released {
                        broker.topics.release_strays();
                        strays_released = true;
                    }
                }
            });
        })
        .map(|_| ())
}
