"""A consumer-group member in its own process (confluent-kafka, i.e. librdkafka), so that a
test can kill it with SIGKILL. It reports on stdout, one line per event, flushed at once:

  ASSIGNED p,p,...      its whole assignment after each rebalance ("-" for none)
  RECORD p o value      a record it consumed (it has "processed" it)
  COMMITTED p:o,...     offsets it committed synchronously (the next offset to read)
  HOLDING               it processed records and stopped before committing them

Usage: group_member.py BOOTSTRAP GROUP TOPIC [--session-ms N] [--instance ID]
                       [--commit auto|batch] [--hold-after N]

--commit batch commits each polled batch after printing it; --hold-after N stops before the
commit of the batch that reaches N records (the test kills it there: processed, not
committed). The member runs until it is killed or its stdin closes."""
import argparse
import sys
import threading
import time

from confluent_kafka import Consumer, KafkaException

parser = argparse.ArgumentParser()
parser.add_argument("bootstrap")
parser.add_argument("group")
parser.add_argument("topic")
parser.add_argument("--session-ms", type=int, default=4000)
parser.add_argument("--instance")
parser.add_argument("--commit", choices=["auto", "batch"], default="auto")
parser.add_argument("--hold-after", type=int, default=0)
args = parser.parse_args()


def say(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


conf = {
    "bootstrap.servers": args.bootstrap,
    "group.id": args.group,
    "session.timeout.ms": args.session_ms,
    "heartbeat.interval.ms": 500,
    "auto.offset.reset": "earliest",
    "enable.auto.commit": args.commit == "auto",
    "auto.commit.interval.ms": 500,
    "partition.assignment.strategy": "range",
}
if args.instance:
    conf["group.instance.id"] = args.instance
consumer = Consumer(conf)
assigned = set()


def on_assign(c, partitions):
    assigned.clear()
    assigned.update(p.partition for p in partitions)
    say("ASSIGNED " + (",".join(str(p) for p in sorted(assigned)) or "-"))


def on_revoke(c, partitions):
    assigned.clear()


consumer.subscribe([args.topic], on_assign=on_assign, on_revoke=on_revoke)

stop = threading.Event()


def watch_stdin():
    sys.stdin.read()
    stop.set()


threading.Thread(target=watch_stdin, daemon=True).start()

processed = 0
while not stop.is_set():
    msgs = consumer.consume(num_messages=20, timeout=0.2)
    batch = []
    for m in msgs:
        if m.error():
            say("ERROR " + str(m.error()))
            continue
        say("RECORD %d %d %s" % (m.partition(), m.offset(), m.value().decode()))
        batch.append(m)
    if not batch:
        continue
    processed += len(batch)
    if args.commit == "batch":
        if args.hold_after and processed >= args.hold_after:
            say("HOLDING")
            while True:
                time.sleep(3600)
        try:
            done = consumer.commit(asynchronous=False)
            say("COMMITTED " + ",".join("%d:%d" % (tp.partition, tp.offset) for tp in done))
        except KafkaException as e:
            say("ERROR commit " + str(e))
consumer.close()
