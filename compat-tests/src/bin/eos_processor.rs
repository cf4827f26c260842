//! A consume-transform-produce processor with exactly-once semantics, run as a child process by
//! `tests/transactions.rs` so that it can be SIGKILLed mid-transaction.
//!
//! It reads `<input>` in consumer group `<group>` (static member `<group>-member`, read_committed),
//! and for each polled batch: begins a transaction, writes `out:<value>` to `<output>` for every
//! record (same partition), adds the consumed positions with `send_offsets_to_transaction`,
//! flushes, prints `open <records so far>` and waits `<pause_ms>` (the test kills it there,
//! mid-transaction with its output in the log), and commits, printing
//! `committed <records so far>`. A restarted process uses
//! the same transactional id: it fences its predecessor and carries on from the committed
//! offsets. It runs until killed.
//!
//! Usage: eos_processor BOOTSTRAP INPUT OUTPUT GROUP TRANSACTIONAL_ID PAUSE_MS

use std::io::Write;
use std::time::Duration;

use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::Message;
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
use rdkafka::topic_partition_list::{Offset, TopicPartitionList};

const BATCH_MAX: usize = 50;

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    anyhow::ensure!(
        args.len() == 7,
        "usage: eos_processor BOOTSTRAP INPUT OUTPUT GROUP TRANSACTIONAL_ID PAUSE_MS"
    );
    let (bootstrap, input, output, group, txn_id) =
        (&args[1], &args[2], &args[3], &args[4], &args[5]);
    let pause = Duration::from_millis(args[6].parse()?);
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("group.id", group)
        .set("group.instance.id", format!("{group}-member"))
        .set("session.timeout.ms", "6000")
        .set("isolation.level", "read_committed")
        .set("enable.auto.commit", "false")
        .set("auto.offset.reset", "earliest")
        .create()?;
    consumer.subscribe(&[input])?;
    let producer: BaseProducer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("transactional.id", txn_id)
        .set("transaction.timeout.ms", "10000")
        .set("linger.ms", "5")
        .create()?;
    producer.init_transactions(Duration::from_secs(30))?;
    let mut done = 0usize;
    loop {
        let mut batch = Vec::new();
        let deadline = std::time::Instant::now() + Duration::from_millis(200);
        while batch.len() < BATCH_MAX && std::time::Instant::now() < deadline {
            match consumer.poll(Duration::from_millis(50)) {
                Some(Ok(m)) => batch.push((
                    m.partition(),
                    m.offset(),
                    m.payload().unwrap_or_default().to_vec(),
                )),
                Some(Err(e)) => eprintln!("consume error: {e}"),
                None => {}
            }
        }
        if batch.is_empty() {
            continue;
        }
        producer.begin_transaction()?;
        let mut next: std::collections::BTreeMap<i32, i64> = std::collections::BTreeMap::new();
        for (partition, offset, value) in &batch {
            let mut out = b"out:".to_vec();
            out.extend_from_slice(value);
            loop {
                let rec: BaseRecord<'_, [u8], [u8]> = BaseRecord::to(output)
                    .partition(*partition)
                    .payload(&out[..]);
                match producer.send(rec) {
                    Ok(()) => break,
                    Err((e, _)) => {
                        eprintln!("send: {e}; retrying");
                        producer.poll(Duration::from_millis(50));
                    }
                }
            }
            next.insert(*partition, offset + 1);
        }
        let mut positions = TopicPartitionList::new();
        for (partition, offset) in next {
            positions.add_partition_offset(input, partition, Offset::Offset(offset))?;
        }
        let metadata = consumer
            .group_metadata()
            .ok_or_else(|| anyhow::anyhow!("no consumer group metadata"))?;
        producer.send_offsets_to_transaction(&positions, &metadata, Duration::from_secs(30))?;
        producer.flush(Duration::from_secs(30))?;
        println!("open {done}");
        std::io::stdout().flush()?;
        std::thread::sleep(pause);
        producer.commit_transaction(Duration::from_secs(30))?;
        done += batch.len();
        println!("committed {done}");
        std::io::stdout().flush()?;
    }
}
