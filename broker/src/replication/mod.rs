//! Replication on this broker: the replica fetchers that copy the partitions it follows from
//! their leaders ([`fetcher`]), and, for the partitions it leads, the ISR changes it asks the
//! controller for (AlterPartition) when a follower falls behind or catches up. The decisions
//! are the sans-IO state machines of `samsa_cluster::replication`; the leader's side lives in
//! each [`crate::partition::Partition`] and in the Fetch handler, which serves followers.

pub mod fetcher;

use std::sync::Arc;
use std::time::Duration;

use samsa_cluster::controller::{AlterPartitionData, AlterPartitionRequest, AlterPartitionTopic};
use samsa_cluster::partition_change::IsrMember;
use samsa_cluster::replication::leader::{AlterIsr, AlterIsrFailure};

use crate::controller::active::{ControllerReply, ControllerRequest, ReplyError};
use crate::node::Node;
use crate::partition::Partition;

/// How long an AlterPartition may take before the leader stops waiting (and asks again at its
/// next ISR check: the controller may still take it).
const ALTER_PARTITION_TIMEOUT: Duration = Duration::from_secs(10);

/// Sends a leader's ISR change to the active controller. A change the controller commits
/// reaches the partition through the metadata image. On a sure refusal the leader goes back to
/// its committed ISR; on no answer or any other error the change stays in flight (it may have
/// been committed, or be yet) and the leader sends it again at its next ISR check.
pub async fn alter_isr(node: &Node, partition: &Arc<Partition>, alter: AlterIsr) {
    let Some(broker_epoch) = node.membership.borrow().broker_epoch else {
        partition.alter_isr_failed(&alter, AlterIsrFailure::Refused);
        return;
    };
    // Against the ISR committed before this change (the image may bring the new one first).
    let expanded = alter.new_isr.len()
        > partition.with_replica(|r| match r {
            crate::partition::Replica::Leader(l) => l.isr().committed().len(),
            crate::partition::Replica::Follower { .. } => usize::MAX,
        });
    let new_isr = partition.with_replica(|r| match r {
        crate::partition::Replica::Leader(l) => {
            isr_members(&alter.new_isr, node.node_id, broker_epoch, l)
        }
        // No longer the leader: the controller refuses the change for its leader epoch.
        crate::partition::Replica::Follower { .. } => alter
            .new_isr
            .iter()
            .map(|&b| IsrMember {
                broker_id: b,
                broker_epoch: -1,
            })
            .collect(),
    });
    let request = ControllerRequest::AlterPartition(AlterPartitionRequest {
        broker_id: node.node_id,
        broker_epoch,
        version: crate::controller::partition_rpcs::ALTER_PARTITION_VERSION,
        topics: vec![AlterPartitionTopic {
            topic_id: partition.topic_id,
            topic_name: partition.tp.topic.clone(),
            partitions: vec![AlterPartitionData {
                partition_index: partition.tp.partition,
                leader_epoch: alter.leader_epoch,
                partition_epoch: alter.partition_epoch,
                new_isr,
                leader_recovery_state: 0,
            }],
        }],
    });
    let answer = node
        .controller
        .request_retrying(request, ALTER_PARTITION_TIMEOUT)
        .await;
    let code = match &answer {
        Ok(ControllerReply::AlterPartition(topics)) => topics
            .iter()
            .flat_map(|t| t.partitions.iter())
            .map(|p| p.error_code)
            .next()
            .unwrap_or(-1),
        Ok(_) => -1,
        Err(ReplyError { code, .. }) => *code,
    };
    if code == 0 {
        node.metrics.isr_changed(expanded);
        tracing::info!(partition = %partition.tp, isr = ?alter.new_isr, "the controller changed the ISR");
    } else {
        tracing::info!(partition = %partition.tp, isr = ?alter.new_isr, code, "the controller did not change the ISR (or its answer was lost); asking again later");
        partition.alter_isr_failed(&alter, AlterIsrFailure::from_error_code(code));
    }
}

/// Checks the ISR of every partition this broker leads every `replica.lag.time.max.ms / 2`
/// (Kafka's `isr-expiration` task) until the broker stops.
pub async fn run_isr_checks(node: Arc<Node>) {
    let lag_ms = node.config.long("replica.lag.time.max.ms").max(2) as u64;
    let mut tick = tokio::time::interval(Duration::from_millis(lag_ms / 2));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        if node.is_shutting_down() {
            return;
        }
        let now = crate::util::now_ms() as u64;
        for topic in node.topics.all() {
            for p in &topic.partitions {
                if let Some(alter) = p.check_isr(now) {
                    tracing::info!(partition = %p.tp, isr = ?alter.new_isr, "asking the controller to change the ISR (a follower fell behind, or a change's answer was lost)");
                    let (b, p) = (node.clone(), p.clone());
                    tokio::spawn(async move { alter_isr(&b, &p, alter).await });
                }
            }
        }
    }
}

/// The members of an ISR change as the leader names them to the controller (KIP-903): each
/// with the broker epoch its fetches named (this broker, `node_id` at `own_epoch`, with its
/// own), so that the controller refuses a member that has registered again since: a restarted
/// follower may have lost what its former incarnation's fetches said it held. -1 (not checked)
/// for a member whose fetches named none, as Kafka's leader sends it.
pub fn isr_members(
    new_isr: &[i32],
    node_id: i32,
    own_epoch: i64,
    leader: &samsa_cluster::replication::leader::LeaderPartition,
) -> Vec<IsrMember> {
    new_isr
        .iter()
        .map(|&b| IsrMember {
            broker_id: b,
            broker_epoch: if b == node_id {
                own_epoch
            } else {
                leader.follower(b).map_or(-1, |f| f.broker_epoch)
            },
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use samsa_cluster::replication::leader::{FetchedBy, LeaderConfig, LeaderPartition};

    use super::*;

    #[test]
    fn isr_members_carry_the_broker_epoch_their_fetches_named() {
        let config = LeaderConfig {
            replica_lag_time_max_ms: 30_000,
        };
        let mut l = LeaderPartition::new(1, config, vec![1, 2, 3, 4], vec![1], 0, 0, 0, 0, 0);
        // 2 fetched as its incarnation of epoch 40; 3 before Fetch v15 (no epoch); 4 never.
        l.on_follower_fetch_of(2, 0, -1, 10, FetchedBy::eligible(40))
            .unwrap();
        l.on_follower_fetch_of(3, 0, -1, 10, FetchedBy::eligible(-1))
            .unwrap();
        let members = isr_members(&[1, 2, 3, 4], 1, 17, &l);
        let epochs: Vec<(i32, i64)> = members
            .iter()
            .map(|m| (m.broker_id, m.broker_epoch))
            .collect();
        assert_eq!(epochs, [(1, 17), (2, 40), (3, -1), (4, -1)]);
        // A later fetch of 2's next incarnation names its new epoch.
        l.on_follower_fetch_of(2, 0, -1, 20, FetchedBy::eligible(55))
            .unwrap();
        assert_eq!(isr_members(&[2], 1, 17, &l)[0].broker_epoch, 55);
    }
}
