//! The replication throttle of a reassignment, as `kafka-reassign-partitions.sh --throttle`
//! sets it and `--verify` clears it (KIP-73): the two broker rates on every broker of the move
//! (its replicas before and after), and the topic's throttled-replicas lists: on the leader
//! side the replicas the partition has now (any of them may lead while it moves), on the
//! follower side the replicas it gains. Entries for other partitions are kept.

use std::collections::BTreeSet;

use super::client::{Client, Node};
use super::topic::{alter_configs as alter, RESOURCE_BROKER, RESOURCE_TOPIC};

pub const LEADER_RATE: &str = "leader.replication.throttled.rate";
pub const FOLLOWER_RATE: &str = "follower.replication.throttled.rate";
pub const LEADER_REPLICAS: &str = "leader.replication.throttled.replicas";
pub const FOLLOWER_REPLICAS: &str = "follower.replication.throttled.replicas";

/// `list` with `partition:broker` for each of `brokers` added (a `*` list stays `*`; pairs
/// already there are not repeated).
pub fn add_replicas(list: Option<&str>, partition: i32, brokers: &[i32]) -> String {
    let list = list.unwrap_or("").trim();
    if list == "*" {
        return list.to_string();
    }
    let mut entries: Vec<String> = list
        .split(',')
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .map(str::to_string)
        .collect();
    for b in brokers {
        let e = format!("{partition}:{b}");
        if !entries.contains(&e) {
            entries.push(e);
        }
    }
    entries.join(",")
}

/// Sets the throttle of moving `partition` of `topic` from `current` to `target` replicas at
/// `rate` bytes/s: the rates on each broker of either (sent to that broker, as Kafka's admin
/// client sends a broker's configs), the topic's lists extended (`overrides`: the topic's
/// configs now). Returns the brokers whose rates were set.
pub fn set(
    client: &mut Client,
    topic: &str,
    partition: i32,
    current: &[i32],
    target: &[i32],
    rate: i64,
    overrides: &[(String, Option<String>)],
) -> anyhow::Result<Vec<i32>> {
    let brokers: BTreeSet<i32> = current.iter().chain(target).copied().collect();
    let rate = rate.to_string();
    for &b in &brokers {
        alter(
            client,
            Node::Id(b),
            RESOURCE_BROKER,
            &b.to_string(),
            &[(LEADER_RATE, &rate), (FOLLOWER_RATE, &rate)],
            &[],
        )?;
    }
    let value = |key: &str| {
        overrides
            .iter()
            .find(|(k, _)| k == key)
            .and_then(|(_, v)| v.as_deref())
    };
    let adding: Vec<i32> = target
        .iter()
        .copied()
        .filter(|b| !current.contains(b))
        .collect();
    let leader_list = add_replicas(value(LEADER_REPLICAS), partition, current);
    let follower_list = add_replicas(value(FOLLOWER_REPLICAS), partition, &adding);
    alter(
        client,
        Node::Any,
        RESOURCE_TOPIC,
        topic,
        &[
            (LEADER_REPLICAS, &leader_list),
            (FOLLOWER_REPLICAS, &follower_list),
        ],
        &[],
    )?;
    Ok(brokers.into_iter().collect())
}

/// Removes the throttle once no move is left, as Kafka's `--verify` does: the topic's two lists
/// and the two rates of every broker (Kafka cannot tell which brokers an earlier move
/// throttled, and neither can this).
pub fn clear(client: &mut Client, topic: &str, brokers: &[i32]) -> anyhow::Result<()> {
    for &b in brokers {
        alter(
            client,
            Node::Id(b),
            RESOURCE_BROKER,
            &b.to_string(),
            &[],
            &[LEADER_RATE, FOLLOWER_RATE],
        )?;
    }
    alter(
        client,
        Node::Any,
        RESOURCE_TOPIC,
        topic,
        &[],
        &[LEADER_REPLICAS, FOLLOWER_REPLICAS],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replicas_are_added_to_a_list_once_and_a_star_stays() {
        assert_eq!(add_replicas(None, 0, &[1, 2]), "0:1,0:2");
        assert_eq!(add_replicas(Some(""), 0, &[]), "");
        assert_eq!(add_replicas(Some("1:3"), 0, &[1, 3]), "1:3,0:1,0:3");
        assert_eq!(add_replicas(Some("0:1, 1:3"), 0, &[1]), "0:1,1:3");
        assert_eq!(add_replicas(Some("*"), 0, &[1]), "*");
    }
}
