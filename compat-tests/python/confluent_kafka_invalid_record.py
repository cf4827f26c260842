"""confluent-kafka (librdkafka) meeting INVALID_RECORD: a record without a key sent to a
compacted topic is refused, and librdkafka reports it as a permanent error (not retried until
message.timeout.ms, two minutes here); a keyed record sent afterwards is written.
Usage: confluent_kafka_invalid_record.py BOOTSTRAP"""
import sys

from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import AdminClient, NewTopic

bootstrap = sys.argv[1]
topic = "ck-compacted-keyless"


def check(cond, msg):
    if not cond:
        print("FAILED: " + msg, file=sys.stderr)
        sys.exit(1)


admin = AdminClient({"bootstrap.servers": bootstrap})
for t, f in admin.create_topics([NewTopic(topic, 1, 1, config={"cleanup.policy": "compact"})]).items():
    f.result(30)

reports = []
p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "message.timeout.ms": 120000})
p.produce(topic, value=b"no key", on_delivery=lambda err, msg: reports.append(err))
# The refusal comes back with the first answer; a retried error would hold it for two minutes.
check(p.flush(30) == 0, "the keyless record was still in flight after 30 s: retried?")
check(len(reports) == 1 and reports[0] is not None, "a keyless record was accepted: %r" % (reports,))
err = reports[0]
check(err.code() == KafkaError.INVALID_RECORD, "expected INVALID_RECORD, got %r" % (err,))
check(not err.retriable(), "INVALID_RECORD reported as retriable")
print("failed fast:", err.name(), err.str())

reports.clear()
p.produce(topic, key=b"k", value=b"keyed", on_delivery=lambda err, msg: reports.append(err))
check(p.flush(30) == 0 and reports == [None], "the keyed record after it: %r" % (reports,))
print("ok")
