"""KIP-368 with librdkafka (confluent-kafka): a producer on a listener whose SASL sessions last
connections.max.reauth.ms (1.5 s in the test) re-authenticates on its connection and keeps
delivering for several session lifetimes without an error.

    sasl_reauth.py SASL_PLAINTEXT_ADDR
"""
import sys
import time
import uuid

import confluent_kafka

errors = []
p = confluent_kafka.Producer({
    "bootstrap.servers": sys.argv[1], "security.protocol": "sasl_plaintext",
    "sasl.mechanisms": "SCRAM-SHA-256", "sasl.username": "alice", "sasl.password": "alice-scram",
    "acks": "all", "error_cb": lambda e: errors.append(e),
})
topic = "reauth-" + uuid.uuid4().hex[:8]
delivered = []
failed = []
deadline = time.time() + 6
n = 0
while time.time() < deadline:
    p.produce(topic, b"%d" % n, on_delivery=lambda e, m: (failed if e else delivered).append(e or m.offset()))
    n += 1
    p.poll(0.1)
p.flush(30)
if failed or errors or len(delivered) != n:
    print("FAIL: %d produced, %d delivered, failures %r, errors %r" % (n, len(delivered), failed, errors), file=sys.stderr)
    sys.exit(1)
print("ok: %d records over 6 s of 1.5 s sessions" % n)
