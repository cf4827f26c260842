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
  holder          (internal) a member that acquires records, prints their offsets and waits
"""
import json
import os
import signal
import subprocess
import sys
import time

from confluent_kafka import AcknowledgeType, Producer, ShareConsumer
from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource,
                                   NewTopic)

bootstrap, scenario = sys.argv[1], sys.argv[2]
admin = AdminClient({"bootstrap.servers": bootstrap})


def check(cond, msg):
    if not cond:
        print("FAILED: " + msg, file=sys.stderr)
        sys.exit(1)


def create_topic(name, partitions=1):
    for _, f in admin.create_topics([NewTopic(name, partitions, 1)]).items():
        f.result(30)


def group_configs(group, **configs):
    entries = [ConfigEntry(k.replace("_", "."), str(v), incremental_operation=AlterConfigOpType.SET)
               for k, v in configs.items()]
    res = ConfigResource(ConfigResource.Type.GROUP, group, incremental_configs=entries)
    for _, f in admin.incremental_alter_configs([res]).items():
        f.result(30)


def produce(topic, n, prefix="v"):
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for i in range(n):
        p.produce(topic, value=(prefix + "%d" % i).encode())
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
    produce("sg-two", 2000)
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
    produce("sg-two", 2000, prefix="w")
    poll_until(cs, lambda: len(seen) >= 4000, 60, on)
    for c in cs:
        c.close()
    check(len(seen) == 4000, "every record delivered: %d of 4000" % len(seen))
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


{
    "before-restart": before_restart,
    "after-restart": after_restart,
    "two-consumers": two_consumers,
    "killed-member": killed_member,
    "delivery-limit": delivery_limit,
    "reject": reject,
    "read-committed": read_committed,
    "holder": holder,
}[scenario]()
