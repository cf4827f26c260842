"""kafka-python's KafkaConsumer as a member of a consumer group, beside librdkafka members.
Reports on stdout, flushed at once:

  ASSIGNED p,p,...      its assignment whenever it changes ("-" for none)
  RECORD p o value      a record it consumed

Commits what it consumed after each poll. Runs until its stdin closes, then leaves the group
(close) and exits 0.

Usage: kafka_python_group.py BOOTSTRAP GROUP TOPIC"""
import sys
import threading

from kafka import KafkaConsumer

bootstrap, group, topic = sys.argv[1:4]


def say(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


consumer = KafkaConsumer(
    topic,
    bootstrap_servers=bootstrap,
    group_id=group,
    client_id="kafka-python-member",
    auto_offset_reset="earliest",
    enable_auto_commit=False,
    session_timeout_ms=6000,
    heartbeat_interval_ms=500,
)
stop = threading.Event()


def watch_stdin():
    sys.stdin.read()
    stop.set()


threading.Thread(target=watch_stdin, daemon=True).start()

last = None
while not stop.is_set():
    batches = consumer.poll(timeout_ms=200)
    now = sorted(tp.partition for tp in consumer.assignment())
    if now != last:
        last = now
        say("ASSIGNED " + (",".join(str(p) for p in now) or "-"))
    got = False
    for tp, records in batches.items():
        for r in records:
            say("RECORD %d %d %s" % (r.partition, r.offset, r.value.decode()))
            got = True
    if got:
        consumer.commit()
consumer.close()
say("CLOSED")
