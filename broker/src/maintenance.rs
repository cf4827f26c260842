//! Background work on the control runtime: retention, `flush.ms`,
//! compaction and the log-directory checkpoints. Anything that touches files runs on the
//! blocking pool so the control runtime's timers stay on time.

use std::sync::Arc;
use std::time::Duration;

use crate::node::Node;

/// The longest time between two maintenance passes: how late `flush.ms` and a log start offset
/// moved by DeleteRecords may be acted on, and the grain of the other intervals.
pub const TICK_MS_MAX: u64 = 1_000;

pub async fn run(node: Arc<Node>) {
    // Kafka's log.flush.scheduler.interval.ms says how often logs are checked for flush.ms
    // (never, by default); Samsa checks every tick, so only a shorter interval changes it.
    let tick_ms =
        (node.config.long("log.flush.scheduler.interval.ms").max(10) as u64).min(TICK_MS_MAX);
    let checkpoint_every_ms = node
        .config
        .long("log.flush.offset.checkpoint.interval.ms")
        .max(100) as u64;
    let cleaner = node.config.bool("log.cleaner.enable");
    let retention_every_ms = node.config.long("log.retention.check.interval.ms").max(1) as u64;
    let mut since_checkpoint = 0u64;
    let mut since_cleaner = 0u64;
    let mut since_retention = 0u64;
    let mut interval = tokio::time::interval(Duration::from_millis(tick_ms));
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        interval.tick().await;
        since_checkpoint += tick_ms;
        since_cleaner += tick_ms;
        since_retention += tick_ms;
        // log.cleaner.backoff.ms is a dynamic broker config: read it at every tick.
        let cleaner_every_ms = node
            .dynamic_configs
            .effective()
            .long("log.cleaner.backoff.ms")
            .max(10) as u64;
        let checkpoint = since_checkpoint >= checkpoint_every_ms;
        let clean = cleaner && since_cleaner >= cleaner_every_ms;
        let retention = since_retention >= retention_every_ms;
        if checkpoint {
            since_checkpoint = 0;
        }
        if clean {
            since_cleaner = 0;
        }
        if retention {
            since_retention = 0;
        }
        let b = node.clone();
        let work = tokio::task::spawn_blocking(move || pass(&b, clean, retention, checkpoint));
        if let Err(e) = work.await {
            tracing::error!("maintenance pass panicked: {e}");
        }
    }
}

/// One pass over every partition; `retention` also deletes segments past retention.ms and
/// retention.bytes, `clean` runs the compactor on compacted topics.
fn pass(node: &Node, clean: bool, retention: bool, checkpoint: bool) {
    let now = crate::util::now_ms();
    for topic in node.topics.all() {
        for p in &topic.partitions {
            // The log start offset and flush.ms: cheap checks of segment metadata, so every
            // tick.
            if let Err(e) = p.with_log(|log| log.maintenance(now)) {
                tracing::warn!(partition = %p.tp, "maintenance failed: {e}");
            }
            // Retention on Kafka's own interval (log.retention.check.interval.ms).
            if retention {
                if let Err(e) = p.with_log(|log| log.retention(now)) {
                    tracing::warn!(partition = %p.tp, "retention failed: {e}");
                }
            }
            if clean {
                let compacts = p.with_log(|log| log.config().cleanup_policy.compacts());
                if compacts {
                    if let Err(e) = p.with_log(|log| log.compact(now)) {
                        tracing::warn!(partition = %p.tp, "compaction failed: {e}");
                    }
                }
            }
        }
    }
    if checkpoint {
        if let Err(e) = write_checkpoints(node) {
            tracing::warn!("cannot write checkpoints: {e}");
        }
    }
}

/// Flushes every log and writes the log-directory checkpoints.
pub fn write_checkpoints(node: &Node) -> anyhow::Result<()> {
    let mut entries = Vec::new();
    for topic in node.topics.all() {
        for p in &topic.partitions {
            entries.push((p.tp.clone(), p.checkpoint()?));
        }
    }
    node.topics.log_dir().write_checkpoints(&entries)?;
    Ok(())
}
