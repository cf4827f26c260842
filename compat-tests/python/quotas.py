"""Client quotas (KIP-13, KIP-219) as librdkafka (confluent-kafka) meets them: runs the clients a
JSON plan names side by side, one thread each, and prints one JSON line of what each achieved.
The quotas themselves are set by the caller (confluent-kafka's admin client has no
AlterClientQuotas).

Usage: quotas.py BOOTSTRAP PLAN_JSON, PLAN_JSON a list of clients:
  {"kind": "produce", "client_id": ..., "topic": ..., "partitions": [0, ...] or null,
   "rate": bytes/s offered (paced; null: as fast as the client takes them),
   "record_bytes": ..., "seconds": ..., "warmup": seconds not measured,
   "config": {more librdkafka settings}}
  {"kind": "consume", ... the same, reading "topic" partition 0 from the beginning}
Each result: {"client_id", "kind", "bytes" and "records" delivered or consumed within
[warmup, seconds], "rate" (bytes/s over that span), "records_total", "throttles" (throttle_cb
events with a throttle time above 0), "throttle_ms_total", "throttled_by" (broker ids)}.
Producers are measured by their delivery reports, consumers by the records they receive."""
import json
import sys
import threading
import time

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

bootstrap, plan = sys.argv[1], json.loads(sys.argv[2])


class Tally:
    """What one client achieved, counted by whichever thread sees it."""

    def __init__(self, spec, start):
        self.spec, self.start = spec, start
        self.lock = threading.Lock()
        self.bytes = self.records = self.records_total = 0
        self.throttles, self.throttle_ms, self.throttled_by = 0, 0, set()
        self.errors = []

    def measured_span(self):
        return self.start + self.spec["warmup"], self.start + self.spec["seconds"]

    def count(self, size, at):
        lo, hi = self.measured_span()
        with self.lock:
            self.records_total += 1
            if lo <= at < hi:
                self.bytes += size
                self.records += 1

    def throttle(self, event):
        if event.throttle_time > 0:
            with self.lock:
                self.throttles += 1
                self.throttle_ms += int(event.throttle_time * 1000)
                self.throttled_by.add(event.broker_id)

    def result(self):
        lo, hi = self.measured_span()
        return dict(client_id=self.spec["client_id"], kind=self.spec["kind"], bytes=self.bytes,
                    records=self.records, rate=self.bytes / (hi - lo),
                    records_total=self.records_total, throttles=self.throttles,
                    throttle_ms_total=self.throttle_ms, throttled_by=sorted(self.throttled_by),
                    errors=self.errors[:5])


def config(spec, tally):
    c = {"bootstrap.servers": bootstrap, "client.id": spec["client_id"],
         "throttle_cb": tally.throttle}
    c.update(spec.get("config", {}))
    return c


def produce(spec, tally):
    """Offers `rate` bytes/s (records of `record_bytes`, round robin over `partitions`) until
    `seconds`; a full local queue drops the offer (the offer only has to exceed the quota)."""
    def delivered(err, msg):
        if err is None:
            tally.count(len(msg.value()), time.monotonic())
        elif err.code() != KafkaError._PURGE_QUEUE and err.code() != KafkaError._PURGE_INFLIGHT:
            tally.errors.append(str(err))

    p = Producer(config(spec, tally))
    value = b"q" * spec["record_bytes"]
    partitions = spec.get("partitions") or [None]
    rate, end = spec.get("rate"), tally.start + spec["seconds"]
    sent = 0
    while True:
        now = time.monotonic()
        if now >= end:
            break
        if rate is not None and sent * spec["record_bytes"] > (now - tally.start) * rate:
            p.poll(0.005)
            continue
        part = partitions[sent % len(partitions)]
        try:
            if part is None:
                p.produce(spec["topic"], value, on_delivery=delivered)
            else:
                p.produce(spec["topic"], value, partition=part, on_delivery=delivered)
            sent += 1
        except BufferError:
            p.poll(0.01)
            continue
        p.poll(0)
    # What is still queued or in flight is not waited for: the span is over.
    p.purge(in_queue=True, in_flight=True, blocking=False)
    p.flush(5)


def consume(spec, tally):
    """Reads partition 0 of `topic` from the beginning as fast as it can until `seconds`."""
    c = Consumer(dict(config(spec, tally), **{"group.id": spec["client_id"],
                                              "enable.auto.commit": False,
                                              "enable.partition.eof": False}))
    c.assign([TopicPartition(spec["topic"], 0, 0)])
    end = tally.start + spec["seconds"]
    while time.monotonic() < end:
        for m in c.consume(num_messages=1000, timeout=0.05):
            if m.error():
                tally.errors.append(str(m.error()))
            else:
                tally.count(len(m.value()), time.monotonic())
    c.close()


failed = []


def run(spec, tally):
    try:
        (produce if spec["kind"] == "produce" else consume)(spec, tally)
    except Exception as e:  # noqa: BLE001 - reported, and the script fails
        failed.append(f"{spec['client_id']}: {type(e).__name__}: {e}")


start = time.monotonic()
tallies = [Tally(spec, start) for spec in plan]
threads = [threading.Thread(target=run, args=(s, t)) for s, t in zip(plan, tallies)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(json.dumps([t.result() for t in tallies]))
if failed:
    sys.exit("FAILED: " + "; ".join(failed))
