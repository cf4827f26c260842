"""confluent-kafka transactions against Samsa: commit / abort / commit seen by read_committed and
read_uncommitted consumers; a consume-transform-produce loop with send_offsets_to_transaction
(committed offsets move only when the transaction commits); a second producer with the same
transactional id fencing the first.
Usage: confluent_kafka_txn.py BOOTSTRAP"""
import sys
import time

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

bootstrap = sys.argv[1]


def check(cond, msg):
    if not cond:
        print("FAILED: " + msg, file=sys.stderr)
        sys.exit(1)


def txn_producer(txn_id):
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id, "linger.ms": 2})
    p.init_transactions(30)
    return p


def reader(topic, partitions, isolation, group="ck-txn-reader"):
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                  "isolation.level": isolation})
    c.assign([TopicPartition(topic, p, 0) for p in partitions])
    return c


def drain(c, expected, quiet=1.0, timeout=60):
    out = []
    deadline = time.time() + timeout
    last = time.time()
    while time.time() < deadline:
        if len(out) >= expected and time.time() - last > quiet:
            break
        m = c.poll(0.1)
        if m is None:
            continue
        check(m.error() is None, "consume error: %s" % m.error())
        out.append((m.partition(), m.value().decode()))
        last = time.time()
    return out


admin = AdminClient({"bootstrap.servers": bootstrap})
futures = admin.create_topics([NewTopic(t, num_partitions=2, replication_factor=1)
                               for t in ["ck-txn", "ck-in", "ck-out", "ck-fence"]])
for f in futures.values():
    f.result(30)

# --- commit, abort, commit -------------------------------------------------------------
p = txn_producer("ck-txn-1")
for prefix, commit in [("c1", True), ("ab", False), ("c2", True)]:
    p.begin_transaction()
    for i in range(10):
        p.produce("ck-txn", value=("%s-%d" % (prefix, i)).encode(), partition=i % 2)
    if commit:
        p.commit_transaction(30)
    else:
        p.flush(30)
        p.abort_transaction(30)

got = drain(reader("ck-txn", [0, 1], "read_committed"), 20)
values = sorted(v for _, v in got)
check(values == sorted(["c1-%d" % i for i in range(10)] + ["c2-%d" % i for i in range(10)]),
      "read_committed sees exactly the committed records: %r" % values)
for part in (0, 1):
    in_order = [v for p_, v in got if p_ == part]
    check(in_order == sorted(in_order, key=lambda v: (v[:2], int(v.split("-")[1]))),
          "partition %d is in order: %r" % (part, in_order))
everything = drain(reader("ck-txn", [0, 1], "read_uncommitted"), 30)
check(len(everything) == 30, "read_uncommitted sees all 30 records, got %d" % len(everything))

# --- consume-transform-produce with send_offsets_to_transaction --------------------------
plain = Producer({"bootstrap.servers": bootstrap})
for i in range(60):
    plain.produce("ck-in", value=("in-%d" % i).encode(), partition=i % 2)
plain.flush(30)

consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "ck-ctp", "enable.auto.commit": False,
                     "auto.offset.reset": "earliest", "isolation.level": "read_committed",
                     "session.timeout.ms": 6000})
consumer.subscribe(["ck-in"])
producer = txn_producer("ck-ctp-1")


def process(limit, commit):
    batch = consumer.consume(num_messages=limit, timeout=5)
    batch = [m for m in batch if m.error() is None]
    if not batch:
        return 0
    producer.begin_transaction()
    for m in batch:
        producer.produce("ck-out", value=b"out:" + m.value(), partition=m.partition())
    producer.send_offsets_to_transaction(consumer.position(consumer.assignment()),
                                         consumer.consumer_group_metadata(), 30)
    if commit:
        producer.commit_transaction(30)
    else:
        producer.abort_transaction(30)
    return len(batch)


def committed_total():
    tps = consumer.committed([TopicPartition("ck-in", p) for p in (0, 1)], timeout=10)
    return sum(max(tp.offset, 0) for tp in tps)


done = 0
deadline = time.time() + 60
while done < 20 and time.time() < deadline:
    done += process(10, True)
check(done >= 20, "processed %d records in a minute" % done)
before = committed_total()
check(before == done, "committed offsets follow committed transactions: %d vs %d" % (before, done))

# An aborted transaction moves no committed offset; rewind to the committed position after it.
aborted = process(10, False)
check(aborted > 0, "something to abort")
check(committed_total() == before, "an aborted transaction's offsets are discarded")
for tp in consumer.committed([TopicPartition("ck-in", p) for p in (0, 1)], timeout=10):
    consumer.seek(tp)

deadline = time.time() + 60
while done < 60 and time.time() < deadline:
    done += process(25, True)
check(done == 60, "processed %d of 60" % done)
check(committed_total() == 60, "every input offset committed")
out = drain(reader("ck-out", [0, 1], "read_committed"), 60)
values = sorted(v for _, v in out)
check(values == sorted("out:in-%d" % i for i in range(60)),
      "read_committed output has every input exactly once (%d records)" % len(values))
consumer.close()

# --- fencing ----------------------------------------------------------------------------
first = txn_producer("ck-fence-id")
first.begin_transaction()
first.produce("ck-fence", value=b"zombie", partition=0)
first.flush(30)
second = txn_producer("ck-fence-id")
try:
    first.commit_transaction(30)
    check(False, "a fenced producer must not commit")
except KafkaException as e:
    err = e.args[0]
    check(err.fatal(), "fencing is fatal for the old producer: %s" % err)
second.begin_transaction()
second.produce("ck-fence", value=b"winner", partition=0)
second.commit_transaction(30)
fenced = drain(reader("ck-fence", [0], "read_committed"), 1)
check([v for _, v in fenced] == ["winner"], "only the new producer's record is visible: %r" % fenced)
print("ok")
