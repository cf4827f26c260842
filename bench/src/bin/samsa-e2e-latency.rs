//! `samsa-e2e-latency`: produce at a fixed rate while a consumer tails the partition, and report
//! delivery latency (send to acknowledgement) and end-to-end latency (send to consume).
//!
//! Why not rdkafka_performance: its rate limiter sends one message per `1/rate` and polls
//! between messages, which with linger.ms=0 tops out near 20,000 records/s on a loaded 2-core
//! machine even against the discard sink, so it cannot hold 50,000 records/s. This tool sends,
//! every time it wakes, all the records that are due (still librdkafka underneath, through the
//! rdkafka crate), so the rate holds and latency is the broker's, not the generator's.
//!
//! Latency is measured from each record's scheduled send time, not from when the loop got to
//! it, so a stalled producer shows up in the figures instead of hiding them (coordinated
//! omission). The first `--warmup-seconds` are left out: records queued before the client's
//! connection and metadata are ready wait for them.
//!
//! For the failover bench (scripts/bench/replication) it also runs as the application whose
//! acknowledgements are timed while a broker dies: `--idempotence` turns on
//! enable.idempotence, `--no-consumer` leaves the tailing consumer out, and `--deliveries PATH`
//! writes every delivery report (`D <scheduled_us> <acked_us> ok|<error>`) and every error the
//! client reported to the application through its error callback (`E <at_us> <error>: <reason>`),
//! times in microseconds since the Unix epoch, so that the bench can find the longest time
//! without an acknowledgement and what the application was told meanwhile.
//!
//! Usage: samsa-e2e-latency --bootstrap HOST:PORT --topic T [--rate N] [--seconds S]
//!        [--warmup-seconds W] [--size B] [--acks all|1] [--linger-ms L] [--idempotence]
//!        [--no-consumer] [--deliveries PATH] [-X key=value ...]
//! (`-X` sets a librdkafka property of the producer, as rdkafka_performance's `-X` does, e.g.
//! `-X debug=msg,protocol` to see why a record waited.)
//! Prints one line: `E2E rate=.. produced=.. delivered=.. consumed=.. msgs_per_s=.. failed=..
//! delivery_errors=.. client_errors=.. unacknowledged=.. produce_p50_ms=.. produce_p99_ms=..
//! produce_p999_ms=.. e2e_p50_ms=.. e2e_p99_ms=.. e2e_p999_ms=..` (unacknowledged: records
//! still waiting for a delivery report when the flush gave up), also when it then fails.

use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::Context;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::message::Message;
use rdkafka::producer::{BaseRecord, DeliveryResult, Producer, ProducerContext, ThreadedProducer};
use rdkafka::topic_partition_list::{Offset, TopicPartitionList};
use rdkafka::ClientContext;

/// Most records one run may schedule: bounds the latency sample buffers.
const RECORDS_MAX: u64 = 50_000_000;
/// Every payload starts with the scheduled send time, microseconds since the Unix epoch.
const STAMP_BYTES: usize = 8;

fn now_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}

fn stamp_of(payload: Option<&[u8]>) -> Option<u64> {
    let p = payload?;
    Some(u64::from_be_bytes(p.get(..STAMP_BYTES)?.try_into().ok()?))
}

/// Latency samples (µs), kept only for records scheduled after the warm-up.
struct Samples {
    after_us: u64,
    values: Mutex<Vec<u64>>,
}

impl Samples {
    fn new(after_us: u64, capacity: usize) -> Self {
        Self {
            after_us,
            values: Mutex::new(Vec::with_capacity(capacity)),
        }
    }

    fn add(&self, stamp: u64) {
        if stamp >= self.after_us {
            let v = now_us().saturating_sub(stamp);
            self.values.lock().expect("samples lock").push(v);
        }
    }

    /// p50, p99 and p99.9 in milliseconds.
    fn percentiles(&self) -> Option<[f64; 3]> {
        let mut v = self.values.lock().expect("samples lock").clone();
        if v.is_empty() {
            return None;
        }
        v.sort_unstable();
        let at = |p: f64| v[((v.len() as f64 * p) as usize).min(v.len() - 1)] as f64 / 1000.0;
        Some([at(0.50), at(0.99), at(0.999)])
    }
}

/// Every delivery report and client error, in the order the client gave them (`--deliveries`).
#[derive(Default)]
struct Journal {
    lines: Mutex<Vec<String>>,
}

impl Journal {
    fn push(&self, line: String) {
        self.lines.lock().expect("journal lock").push(line);
    }

    fn write(&self, path: &str) -> anyhow::Result<()> {
        let mut out = std::io::BufWriter::new(
            std::fs::File::create(path).with_context(|| format!("create {path}"))?,
        );
        for line in self.lines.lock().expect("journal lock").iter() {
            writeln!(out, "{line}")?;
        }
        out.flush().with_context(|| format!("write {path}"))
    }
}

struct Delivery {
    samples: Arc<Samples>,
    failed: Arc<AtomicBool>,
    delivery_errors: Arc<AtomicU64>,
    client_errors: Arc<AtomicU64>,
    /// Delivery reports, successful or not.
    reports: Arc<AtomicU64>,
    journal: Option<Arc<Journal>>,
}

impl ClientContext for Delivery {
    /// librdkafka's own log lines (warnings, and what `-X debug=...` asks for) on stderr,
    /// stamped in microseconds since the Unix epoch like the journal.
    fn log(&self, level: rdkafka::config::RDKafkaLogLevel, fac: &str, message: &str) {
        eprintln!("{} %{} {fac} {message}", now_us(), level as i32);
    }

    fn error(&self, error: KafkaError, reason: &str) {
        self.client_errors.fetch_add(1, Ordering::Relaxed);
        if let Some(j) = &self.journal {
            let text = format!("{error}: {reason}").replace('\n', " ");
            j.push(format!("E {} {text}", now_us()));
        }
    }
}

impl ProducerContext for Delivery {
    type DeliveryOpaque = ();

    fn delivery(&self, result: &DeliveryResult<'_>, _: ()) {
        let acked_us = now_us();
        self.reports.fetch_add(1, Ordering::Relaxed);
        let (stamp, outcome) = match result {
            Ok(m) => {
                if let Some(stamp) = stamp_of(m.payload()) {
                    self.samples.add(stamp);
                }
                (stamp_of(m.payload()), None)
            }
            Err((e, m)) => {
                self.failed.store(true, Ordering::Relaxed);
                self.delivery_errors.fetch_add(1, Ordering::Relaxed);
                (
                    stamp_of(m.payload()),
                    Some(e.to_string().replace(char::is_whitespace, "_")),
                )
            }
        };
        if let Some(j) = &self.journal {
            let outcome = outcome.as_deref().unwrap_or("ok");
            j.push(format!("D {} {acked_us} {outcome}", stamp.unwrap_or(0)));
        }
    }
}

struct Options {
    bootstrap: String,
    topic: String,
    rate: u64,
    seconds: f64,
    warmup_seconds: f64,
    size: usize,
    acks: String,
    linger_ms: u32,
    idempotence: bool,
    consumer: bool,
    deliveries: Option<String>,
    producer_config: Vec<(String, String)>,
}

fn parse() -> anyhow::Result<Options> {
    let mut o = Options {
        bootstrap: String::new(),
        topic: String::new(),
        rate: 1000,
        seconds: 3.0,
        warmup_seconds: 1.0,
        size: 100,
        acks: "all".into(),
        linger_ms: 0,
        idempotence: false,
        consumer: true,
        deliveries: None,
        producer_config: Vec::new(),
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut value = || args.next().with_context(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--bootstrap" => o.bootstrap = value()?,
            "--topic" => o.topic = value()?,
            "--rate" => o.rate = value()?.parse()?,
            "--seconds" => o.seconds = value()?.parse()?,
            "--warmup-seconds" => o.warmup_seconds = value()?.parse()?,
            "--size" => o.size = value()?.parse()?,
            "--acks" => o.acks = value()?,
            "--linger-ms" => o.linger_ms = value()?.parse()?,
            "--idempotence" => o.idempotence = true,
            "--no-consumer" => o.consumer = false,
            "--deliveries" => o.deliveries = Some(value()?),
            "-X" => {
                let kv = value()?;
                let (k, v) = kv
                    .split_once('=')
                    .with_context(|| format!("-X takes key=value, not {kv}"))?;
                o.producer_config.push((k.into(), v.into()));
            }
            other => anyhow::bail!("unknown argument {other}"),
        }
    }
    anyhow::ensure!(
        !o.bootstrap.is_empty() && !o.topic.is_empty(),
        "--bootstrap and --topic are required"
    );
    anyhow::ensure!(o.rate >= 1, "--rate must be at least 1");
    anyhow::ensure!(
        o.size >= STAMP_BYTES,
        "--size must hold the {STAMP_BYTES}-byte timestamp"
    );
    let total = (o.rate as f64 * (o.seconds + o.warmup_seconds)) as u64;
    anyhow::ensure!(
        total <= RECORDS_MAX,
        "{total} records exceed the limit of {RECORDS_MAX} per run"
    );
    Ok(o)
}

/// Starts the consumer that tails partition 0 from its current end, read before anything is
/// produced, so that it sees every record of the run; until `done`, it adds a sample per record
/// and at the end returns how many it read. Until the topic exists (a Metadata request creates
/// it where auto-creation is on) the end offset is retried, within a bound.
fn tail(
    o: &Options,
    samples: Arc<Samples>,
    done: Arc<AtomicBool>,
) -> anyhow::Result<std::thread::JoinHandle<u64>> {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", &o.bootstrap)
        // librdkafka wants a group id even for assign(); nothing is committed or joined.
        .set("group.id", "samsa-e2e-latency")
        .set("enable.auto.commit", "false")
        .set("fetch.wait.max.ms", "100")
        .set("allow.auto.create.topics", "true")
        .create()
        .context("create the consumer")?;
    let deadline = Instant::now() + Duration::from_secs(15);
    let high = loop {
        let _ = consumer.fetch_metadata(Some(&o.topic), Duration::from_secs(5));
        match consumer.fetch_watermarks(&o.topic, 0, Duration::from_secs(5)) {
            Ok((_, high)) => break high,
            Err(e) if Instant::now() >= deadline => {
                return Err(e).context("read the partition's end offset")
            }
            Err(_) => std::thread::sleep(Duration::from_millis(200)),
        }
    };
    let mut assignment = TopicPartitionList::new();
    assignment.add_partition_offset(&o.topic, 0, Offset::Offset(high))?;
    consumer.assign(&assignment)?;
    Ok(std::thread::spawn(move || {
        let mut n = 0u64;
        while !done.load(Ordering::Relaxed) {
            if let Some(Ok(m)) = consumer.poll(Duration::from_millis(50)) {
                if let Some(stamp) = stamp_of(m.payload()) {
                    samples.add(stamp);
                }
                n += 1;
            }
        }
        n
    }))
}

fn main() -> anyhow::Result<()> {
    let o = parse()?;
    let total = (o.rate as f64 * (o.seconds + o.warmup_seconds)) as u64;
    let start_us = now_us() + 200_000;
    let after_us = start_us + (o.warmup_seconds * 1e6) as u64;
    let produce_samples = Arc::new(Samples::new(after_us, total as usize));
    let e2e_samples = Arc::new(Samples::new(after_us, total as usize));
    let failed = Arc::new(AtomicBool::new(false));
    let delivery_errors = Arc::new(AtomicU64::new(0));
    let client_errors = Arc::new(AtomicU64::new(0));
    let reports = Arc::new(AtomicU64::new(0));
    let journal = o.deliveries.as_ref().map(|_| Arc::new(Journal::default()));

    let done = Arc::new(AtomicBool::new(false));
    let consumed = if o.consumer {
        Some(tail(&o, e2e_samples.clone(), done.clone())?)
    } else {
        None
    };

    // A threaded producer serves delivery reports on its own thread as they arrive, so the
    // send loop's sleeps do not delay them.
    let mut config = ClientConfig::new();
    config
        .set("bootstrap.servers", &o.bootstrap)
        .set("acks", &o.acks)
        .set("linger.ms", o.linger_ms.to_string())
        .set("enable.idempotence", o.idempotence.to_string());
    for (k, v) in &o.producer_config {
        config.set(k, v);
    }
    // The rdkafka crate takes librdkafka's log level from the `log` crate's, which is off here:
    // warnings always, everything when debug contexts are asked for.
    let debug = o.producer_config.iter().any(|(k, _)| k == "debug");
    config.set_log_level(if debug {
        rdkafka::config::RDKafkaLogLevel::Debug
    } else {
        rdkafka::config::RDKafkaLogLevel::Warning
    });
    let producer: ThreadedProducer<Delivery> = config
        .create_with_context(Delivery {
            samples: produce_samples.clone(),
            failed: failed.clone(),
            delivery_errors: delivery_errors.clone(),
            client_errors: client_errors.clone(),
            reports: reports.clone(),
            journal: journal.clone(),
        })
        .context("create the producer")?;

    let mut payload = vec![b'x'; o.size];
    let interval_us = 1e6 / o.rate as f64;
    let began = Instant::now();
    let mut sent = 0u64;
    let mut sending = || -> anyhow::Result<()> {
        while sent < total {
            let due = start_us + (sent as f64 * interval_us) as u64;
            let now = now_us();
            if due > now {
                std::thread::sleep(Duration::from_micros((due - now).min(1000)));
                continue;
            }
            payload[..STAMP_BYTES].copy_from_slice(&due.to_be_bytes());
            let record = BaseRecord::to(&o.topic).partition(0).payload(&payload[..]);
            match producer.send::<(), _>(record) {
                Ok(()) => sent += 1,
                Err((e, _)) => {
                    // A full local queue: give the client a moment, then retry this record.
                    if e.rdkafka_error_code() != Some(rdkafka::types::RDKafkaErrorCode::QueueFull) {
                        anyhow::bail!("produce failed: {e}");
                    }
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
        }
        producer
            .flush(Duration::from_secs(30))
            .context("flush the producer")
    };
    // On a failure (a flush that timed out: records never acknowledged) the journal and the
    // summary line are still written, with the error after them: they are what explains it.
    let sent_all = sending();
    if let (Some(path), Some(j)) = (&o.deliveries, &journal) {
        j.write(path)?;
    }
    let took = began.elapsed().as_secs_f64();
    let delivered = produce_samples.values.lock().expect("samples lock").len() as u64;
    // Let the consumer catch up with what was delivered, within a bound.
    let deadline = Instant::now() + Duration::from_secs(10);
    while consumed.is_some()
        && (e2e_samples.values.lock().expect("samples lock").len() as u64) < delivered
        && Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(20));
    }
    done.store(true, Ordering::Relaxed);
    let consumed = consumed.map_or(0, |c| c.join().expect("consumer thread"));

    let fmt = |p: Option<[f64; 3]>, prefix: &str| match p {
        Some([a, b, c]) => {
            format!("{prefix}_p50_ms={a:.3} {prefix}_p99_ms={b:.3} {prefix}_p999_ms={c:.3}")
        }
        None => format!("{prefix}_p50_ms=- {prefix}_p99_ms=- {prefix}_p999_ms=-"),
    };
    println!(
        "E2E rate={} produced={} delivered_after_warmup={} consumed={} msgs_per_s={:.0} failed={} \
         delivery_errors={} client_errors={} unacknowledged={} {} {}",
        o.rate,
        sent,
        delivered,
        consumed,
        sent as f64 / took,
        failed.load(Ordering::Relaxed),
        delivery_errors.load(Ordering::Relaxed),
        client_errors.load(Ordering::Relaxed),
        sent.saturating_sub(reports.load(Ordering::Relaxed)),
        fmt(produce_samples.percentiles(), "produce"),
        fmt(e2e_samples.percentiles(), "e2e"),
    );
    sent_all
}
