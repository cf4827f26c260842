"""Share groups (KIP-932) with confluent-kafka's ShareConsumer (librdkafka's share consumer)
against Samsa. Usage: share_groups.py BOOTSTRAP SCENARIO

Scenarios:
  two-consumers   two members of one group on a one-partition topic both receive records, every
                  record is delivered, and no accepted record reaches both
  killed-member   a member SIGKILLed while holding records: the other gets them once their locks
                  expire (the broker runs with a 2 s lock), with a higher delivery count
  delivery-limit  a record RELEASEd on every delivery is delivered exactly
                  share.delivery.count.limit times, then never again
  reject          a REJECTed record is never delivered again; the others are
  read-committed  a read_committed share group never sees records of an aborted transaction
  before-restart  acquires 30 records, accepts offsets 0-9, rejects 10, holds the rest, and exits
                  without closing (the test then SIGKILLs and restarts the broker)
  after-restart   offsets 11-29 are delivered once each (those held before with delivery count 2)
                  and 0-10 never
  dlq             a REJECTed record and one RELEASEd until the delivery limit are written once each
                  to the group's dead-letter topic (auto-created), with the KIP-1191 headers and
                  the original key, value and headers; a topic without
                  errors.deadletterqueue.group.enable=true receives none
  dlq-before-restart  rejects five records and exits at once (the broker is then SIGKILLed)
  dlq-after-restart   the dead-letter topic holds each of the five exactly once
  survivor        one member reads records 1-20 of topic sg-live while the test kills and restarts
                  the broker halfway: it joins again and misses none
  holder          (internal) a member that acquires records, prints their offsets and waits
"""
import json
import os
import signal
import subprocess
import sys
import time

from confluent_kafka import (OFFSET_BEGINNING, AcknowledgeType, Consumer, Producer, ShareConsumer,
                             TopicPartition)
from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource,
                                   NewTopic)

bootstrap, scenario = sys.argv[1], sys.argv[2]
admin = AdminClient({"bootstrap.servers": bootstrap})


def check(cond, msg):
    if not cond:
        print("FAILED: " + msg, file=sys.stderr)
        sys.exit(1)


# Against a cluster the tests replicate their topics (SG_REPLICATION_FACTOR).
REPLICATION_FACTOR = int(os.environ.get("SG_REPLICATION_FACTOR", "1"))


def create_topic(name, partitions=1):
    for _, f in admin.create_topics([NewTopic(name, partitions, REPLICATION_FACTOR)]).items():
        f.result(30)


def group_configs(group, **configs):
    entries = [ConfigEntry(k.replace("_", "."), str(v), incremental_operation=AlterConfigOpType.SET)
               for k, v in configs.items()]
    res = ConfigResource(ConfigResource.Type.GROUP, group, incremental_configs=entries)
    for _, f in admin.incremental_alter_configs([res]).items():
        f.result(30)


def produce(topic, n, prefix="v", per_batch=None):
    """`per_batch`: flush after that many records, so that no batch holds more."""
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for i in range(n):
        p.produce(topic, value=(prefix + "%d" % i).encode())
        if per_batch and (i + 1) % per_batch == 0:
            check(p.flush(30) == 0, "all produced")
    check(p.flush(30) == 0, "all produced")


def consumer(group, explicit=False):
    conf = {"bootstrap.servers": bootstrap, "group.id": group}
    if explicit:
        conf["share.acknowledgement.mode"] = "explicit"
    c = ShareConsumer(conf)
    return c


def poll_until(consumers, done, seconds, on_message):
    """Polls each consumer in turn until done() or the time is up."""
    end = time.time() + seconds
    while time.time() < end and not done():
        for i, c in enumerate(consumers):
            for m in c.poll(0.5):
                if m.error():
                    print("consumer error: %s" % m.error(), file=sys.stderr)
                    continue
                on_message(i, c, m)


def two_consumers():
    create_topic("sg-two")
    group_configs("sg-two-g", share_auto_offset_reset="earliest")
    # Batches of 100: a share fetch acquires whole batches (batch_optimized, as Kafka), so one
    # batch of 2000 would go to one consumer whole.
    produce("sg-two", 2000, per_batch=100)
    cs = [consumer("sg-two-g") for _ in range(2)]
    for c in cs:
        c.subscribe(["sg-two"])
    seen = {}
    got_by = [0, 0]

    def on(i, c, m):
        seen.setdefault(m.offset(), []).append(i)
        got_by[i] += 1

    # The first consumer may take many records at once: produce more while both poll, so that
    # both are seen fetching.
    poll_until(cs, lambda: len(seen) >= 2000, 60, on)
    produce("sg-two", 2000, prefix="w", per_batch=100)
    total = 4000
    poll_until(cs, lambda: len(seen) >= total, 60, on)
    # Which member's fetch finds new records first is timing: should one have taken them all,
    # produce a little more, a few times, while both poll.
    for attempt in range(5):
        if all(got_by):
            break
        produce("sg-two", 500, prefix="x%d-" % attempt, per_batch=100)
        total += 500
        poll_until(cs, lambda: len(seen) >= total, 60, on)
    # ListGroups shows the share group; a classic consumer cannot use its id.
    # (list_consumer_groups keeps consumer groups only: ask ListGroups itself.)
    listed = admin.list_groups(timeout=10)
    check(any(g.id == "sg-two-g" for g in listed),
          "ListGroups shows the share group: %r" % [(g.id, g.protocol_type) for g in listed])
    classic = Consumer({"bootstrap.servers": bootstrap, "group.id": "sg-two-g", "session.timeout.ms": 6000})
    classic.subscribe(["sg-two"])
    errors = []
    end = time.time() + 10
    while time.time() < end and not errors:
        m = classic.poll(0.5)
        if m is not None and m.error():
            errors.append(m.error())
    classic.close()
    check(any("INCONSISTENT_GROUP_PROTOCOL" in str(e) for e in errors),
          "a classic consumer in the share group's id is refused: %r" % errors)
    for c in cs:
        c.close()
    check(len(seen) == total, "every record delivered: %d of %d" % (len(seen), total))
    twice = {o: who for o, who in seen.items() if len(who) > 1}
    check(not twice, "records delivered more than once (implicit ACCEPT): %r" % list(twice.items())[:5])
    check(all(n > 0 for n in got_by), "both consumers received records: %r" % got_by)
    print("two-consumers: %r records each" % got_by)


def holder():
    group, topic = sys.argv[3], sys.argv[4]
    c = consumer(group, explicit=True)
    c.subscribe([topic])
    end = time.time() + 30
    while time.time() < end:
        msgs = [m for m in c.poll(1.0) if not m.error()]
        if msgs:
            print(json.dumps([m.offset() for m in msgs]), flush=True)
            break
    time.sleep(600)


def killed_member():
    create_topic("sg-kill")
    group_configs("sg-kill-g", share_auto_offset_reset="earliest", share_record_lock_duration_ms=2000)
    produce("sg-kill", 20)
    child = subprocess.Popen([sys.executable, __file__, bootstrap, "holder", "sg-kill-g", "sg-kill"],
                             stdout=subprocess.PIPE, text=True)
    try:
        line = child.stdout.readline()
        check(line.strip(), "the holder acquired records")
        held = json.loads(line)
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.kill()
        child.wait()
    killed_at = time.time()
    c = consumer("sg-kill-g")
    c.subscribe(["sg-kill"])
    got = {}

    def on(i, c, m):
        got[m.offset()] = m.delivery_count()

    poll_until([c], lambda: len(got) >= 20, 30, on)
    c.close()
    check(len(got) == 20, "all 20 records delivered after the kill: %d" % len(got))
    for o in held:
        check(got[o] == 2, "offset %d held by the killed member: delivery count %r, not 2" % (o, got[o]))
    print("killed-member: %d held records redelivered after %.1f s" % (len(held), time.time() - killed_at))


def delivery_limit():
    create_topic("sg-limit")
    group_configs("sg-limit-g", share_auto_offset_reset="earliest", share_delivery_count_limit=3)
    produce("sg-limit", 1)
    c = consumer("sg-limit-g", explicit=True)
    c.subscribe(["sg-limit"])
    counts = []
    end = time.time() + 20
    while time.time() < end:
        for m in c.poll(0.5):
            if m.error():
                continue
            counts.append(m.delivery_count())
            c.acknowledge(m, AcknowledgeType.RELEASE)
        c.commit_sync()
        if len(counts) >= 3:
            # Poll a while longer: it must not come back.
            if time.time() + 3 < end:
                end = time.time() + 3
    c.close()
    check(counts == [1, 2, 3], "delivered with counts %r, expected [1, 2, 3]" % counts)
    print("delivery-limit: delivered %d times, then archived" % len(counts))


def reject():
    create_topic("sg-reject")
    group_configs("sg-reject-g", share_auto_offset_reset="earliest")
    produce("sg-reject", 10)
    c = consumer("sg-reject-g", explicit=True)
    c.subscribe(["sg-reject"])
    deliveries = []
    end = time.time() + 20
    while time.time() < end and len(set(deliveries)) < 10:
        for m in c.poll(0.5):
            if m.error():
                continue
            deliveries.append(m.offset())
            c.acknowledge(m, AcknowledgeType.REJECT if m.offset() == 3 else AcknowledgeType.RELEASE
                          if deliveries.count(m.offset()) == 1 and m.offset() == 5 else AcknowledgeType.ACCEPT)
        c.commit_sync()
    # Offset 5 released once comes back once; offset 3 rejected never does.
    end = time.time() + 3
    while time.time() < end:
        for m in c.poll(0.5):
            if not m.error():
                deliveries.append(m.offset())
                c.acknowledge(m, AcknowledgeType.ACCEPT)
        c.commit_sync()
    c.close()
    check(deliveries.count(3) == 1, "rejected offset 3 delivered %d times" % deliveries.count(3))
    check(deliveries.count(5) == 2, "released offset 5 delivered %d times" % deliveries.count(5))
    check(sorted(set(deliveries)) == list(range(10)), "every offset delivered: %r" % deliveries)
    print("reject: %r" % deliveries)


def read_committed():
    create_topic("sg-txn")
    group_configs("sg-txn-g", share_auto_offset_reset="earliest", share_isolation_level="read_committed")
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": "sg-txn-p"})
    p.init_transactions(30)
    for outcome in ["commit", "abort", "commit"]:
        p.begin_transaction()
        for i in range(5):
            p.produce("sg-txn", value=("%s-%d" % (outcome, i)).encode())
        p.flush(30)
        if outcome == "commit":
            p.commit_transaction(30)
        else:
            p.abort_transaction(30)
    c = consumer("sg-txn-g")
    c.subscribe(["sg-txn"])
    values = []

    def on(i, c, m):
        values.append(m.value().decode())

    poll_until([c], lambda: len(values) >= 10, 20, on)
    # Nothing more may come.
    poll_until([c], lambda: False, 2, on)
    c.close()
    check(len(values) == 10 and all(v.startswith("commit-") for v in values),
          "read_committed share consumer saw %r" % values)
    print("read-committed: %d committed records, no aborted one" % len(values))


def before_restart():
    create_topic("sg-restart")
    group_configs("sg-restart-g", share_auto_offset_reset="earliest")
    produce("sg-restart", 30)
    c = consumer("sg-restart-g", explicit=True)
    c.subscribe(["sg-restart"])
    got = []
    end = time.time() + 20
    while time.time() < end and not got:
        got = [m for m in c.poll(1.0) if not m.error()]
    check(len(got) == 30, "one poll acquired all 30 records: %d" % len(got))
    for m in got:
        if m.offset() < 10:
            c.acknowledge(m, AcknowledgeType.ACCEPT)
        elif m.offset() == 10:
            c.acknowledge(m, AcknowledgeType.REJECT)
    c.commit_sync()
    print("before-restart: accepted 0-9, rejected 10, holding 11-29", flush=True)
    os._exit(0)


def after_restart():
    c = consumer("sg-restart-g")
    c.subscribe(["sg-restart"])
    got = {}

    def on(i, c, m):
        got.setdefault(m.offset(), []).append(m.delivery_count())

    poll_until([c], lambda: len(got) >= 19, 60, on)
    poll_until([c], lambda: False, 2, on)
    c.close()
    check(sorted(got) == list(range(11, 30)), "offsets after the restart: %r" % sorted(got))
    check(all(counts == [2] for counts in got.values()),
          "each held record delivered once more, with delivery count 2: %r" % got)
    print("after-restart: offsets 11-29 once each, delivery count 2")


def read_topic(topic, expect, seconds=20):
    """Every record of `topic` (all partitions), waiting until there are at least `expect`."""
    md = admin.list_topics(topic, timeout=10).topics[topic]
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused", "enable.auto.commit": False})
    c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in md.partitions])
    out = []
    end = time.time() + seconds
    while time.time() < end and len(out) < expect:
        m = c.poll(0.5)
        if m is not None and not m.error():
            out.append(m)
    # Anything more that is there.
    end = time.time() + 1
    while time.time() < end:
        m = c.poll(0.2)
        if m is not None and not m.error():
            out.append(m)
    c.close()
    return out


def headers_of(m):
    return {k: (v.decode() if v is not None else None) for k, v in (m.headers() or [])}


def dlq():
    create_topic("sg-dlq")
    group_configs("sg-dlq-g", share_auto_offset_reset="earliest", share_delivery_count_limit=2,
                  errors_deadletterqueue_topic_name="dlq.sg-dlq",
                  errors_deadletterqueue_copy_record_enable="true")
    p = Producer({"bootstrap.servers": bootstrap})
    for i in range(10):
        p.produce("sg-dlq", key=b"k%d" % i, value=b"v%d" % i, headers=[("h", b"x%d" % i)])
    check(p.flush(30) == 0, "produced")
    c = consumer("sg-dlq-g", explicit=True)
    c.subscribe(["sg-dlq"])
    deliveries = []
    end = time.time() + 30
    while time.time() < end and (len(set(deliveries)) < 10 or deliveries.count(5) < 2):
        for m in c.poll(0.5):
            if m.error():
                continue
            deliveries.append(m.offset())
            t = {2: AcknowledgeType.REJECT, 5: AcknowledgeType.RELEASE}.get(m.offset(), AcknowledgeType.ACCEPT)
            c.acknowledge(m, t)
        c.commit_sync()
    c.close()
    check(deliveries.count(5) == 2, "offset 5 delivered %d times (limit 2)" % deliveries.count(5))
    letters = read_topic("dlq.sg-dlq", 2)
    check(len(letters) == 2, "two dead letters: %r" % [headers_of(m) for m in letters])
    by_offset = {headers_of(m)["__dlq.errors.offset"]: m for m in letters}
    check(sorted(by_offset) == ["2", "5"], "dead letters of offsets 2 and 5: %r" % sorted(by_offset))
    for off, cause, count in [("2", "REJECTED", "1"), ("5", "DELIVERY_COUNT_LIMIT", "2")]:
        m = by_offset[off]
        h = headers_of(m)
        check(h["__dlq.errors.topic"] == "sg-dlq" and h["__dlq.errors.partition"] == "0"
              and h["__dlq.errors.group"] == "sg-dlq-g" and h["__dlq.errors.cause"] == cause
              and h["__dlq.errors.delivery.count"] == count and h["__dlq.errors.message"],
              "headers of the dead letter of offset %s: %r" % (off, h))
        check(m.key() == b"k" + off.encode() and m.value() == b"v" + off.encode() and h["h"] == "x" + off,
              "the dead letter of offset %s copies key, value and headers: %r %r %r" % (off, m.key(), m.value(), h))
    # A topic that does not allow dead letters receives none.
    create_topic("dlq.not-allowed")
    create_topic("sg-dlq2")
    group_configs("sg-dlq2-g", share_auto_offset_reset="earliest",
                  errors_deadletterqueue_topic_name="dlq.not-allowed")
    produce("sg-dlq2", 1)
    c = consumer("sg-dlq2-g", explicit=True)
    c.subscribe(["sg-dlq2"])
    rejected = False
    end = time.time() + 20
    while time.time() < end and not rejected:
        for m in c.poll(0.5):
            if not m.error():
                c.acknowledge(m, AcknowledgeType.REJECT)
                rejected = True
        c.commit_sync()
    c.close()
    check(rejected, "a record was rejected")
    time.sleep(2)
    check(read_topic("dlq.not-allowed", 0, 2) == [], "no dead letter in a topic that does not allow them")
    print("dlq: offsets 2 (REJECTED) and 5 (DELIVERY_COUNT_LIMIT) dead-lettered once each")


def dlq_before_restart():
    if REPLICATION_FACTOR > 1:
        # Replicated: the dead letters go to a partition led by another broker than the
        # share-partition's leader (and its successor, the next replica in the list).
        brokers = sorted(admin.list_topics(timeout=30).brokers)
        a, b, c = brokers[:3]
        for t, replicas, configs in [("sg-dlqr", [a, b, c], {}),
                                     ("dlq.sg-dlqr", [c, a, b],
                                      {"errors.deadletterqueue.group.enable": "true"})]:
            new = NewTopic(t, 1, replica_assignment=[replicas], config=configs)
            for _, f in admin.create_topics([new]).items():
                f.result(30)
    else:
        create_topic("sg-dlqr")
    group_configs("sg-dlqr-g", share_auto_offset_reset="earliest",
                  errors_deadletterqueue_topic_name="dlq.sg-dlqr")
    produce("sg-dlqr", 5)
    c = consumer("sg-dlqr-g", explicit=True)
    c.subscribe(["sg-dlqr"])
    got = []
    end = time.time() + 20
    while time.time() < end and len(got) < 5:
        for m in c.poll(0.5):
            if not m.error():
                got.append(m.offset())
                c.acknowledge(m, AcknowledgeType.REJECT)
        c.commit_sync()
    check(len(got) == 5, "five records rejected: %r" % got)
    print("dlq-before-restart: rejected 5", flush=True)
    os._exit(0)


def dlq_after_restart():
    # The dead letters pending at the crash are written after the share-partition is next used.
    c = consumer("sg-dlqr-g")
    c.subscribe(["sg-dlqr"])
    stray = []
    poll_until([c], lambda: False, 3, lambda i, c, m: stray.append(m.offset()))
    c.close()
    check(stray == [], "rejected records delivered again: %r" % stray)
    letters = read_topic("dlq.sg-dlqr", 5)
    offsets = sorted(int(headers_of(m)["__dlq.errors.offset"]) for m in letters)
    check(offsets == [0, 1, 2, 3, 4], "each rejected record dead-lettered exactly once: %r" % offsets)
    print("dlq-after-restart: 5 dead letters, none twice")


def survivor():
    c = consumer("sg-live-g")
    c.subscribe(["sg-live"])
    seen = set()
    print("polling", flush=True)
    poll_until([c], lambda: len(seen) >= 20, 90, lambda i, c, m: seen.add(m.value()))
    c.close()
    check(seen == {b"%d" % i for i in range(1, 21)}, "records read across the restart: %r" % sorted(seen))
    print("survivor: 20 records across a broker restart")


{
    "survivor": survivor,
    "dlq": dlq,
    "dlq-before-restart": dlq_before_restart,
    "dlq-after-restart": dlq_after_restart,
    "before-restart": before_restart,
    "after-restart": after_restart,
    "two-consumers": two_consumers,
    "killed-member": killed_member,
    "delivery-limit": delivery_limit,
    "reject": reject,
    "read-committed": read_committed,
    "holder": holder,
}[scenario]()
