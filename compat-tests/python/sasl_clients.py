"""SASL with real Python clients: kafka-python and confluent-kafka (librdkafka) authenticate with
PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 over SASL_PLAINTEXT and SASL_SSL, produce and read back;
wrong passwords and unknown users are refused with an authentication error, while the other
clients keep working.

    sasl_clients.py SASL_PLAINTEXT_ADDR SASL_SSL_ADDR CA_PEM

PLAIN's users come from the broker's JAAS config (alice/alice-secret, bob/bob-secret); SCRAM's
from AlterUserScramCredentials (alice/alice-scram, bob/bob-scram), made by the test first.
"""
import sys
import time
import uuid

import confluent_kafka
import kafka
from kafka.errors import KafkaError

SASL_PLAINTEXT, SASL_SSL, CA = sys.argv[1], sys.argv[2], sys.argv[3]
PASSWORDS = {"PLAIN": {"alice": "alice-secret", "bob": "bob-secret"},
             "SCRAM-SHA-256": {"alice": "alice-scram", "bob": "bob-scram"},
             "SCRAM-SHA-512": {"alice": "alice-scram", "bob": "bob-scram"}}


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def kafka_python_config(addr, tls, mechanism, user, password):
    c = dict(bootstrap_servers=addr, security_protocol="SASL_SSL" if tls else "SASL_PLAINTEXT",
             sasl_mechanism=mechanism, sasl_plain_username=user, sasl_plain_password=password,
             request_timeout_ms=15000)
    if tls:
        c["ssl_cafile"] = CA
        c["ssl_check_hostname"] = True
    return c


def kafka_python_round_trip(addr, tls, mechanism, user):
    topic = "kp-%s-%s" % (mechanism.lower(), uuid.uuid4().hex[:8])
    cfg = kafka_python_config(addr, tls, mechanism, user, PASSWORDS[mechanism][user])
    p = kafka.KafkaProducer(acks="all", **cfg)
    values = [("%s %s %d" % (user, mechanism, i)).encode() for i in range(5)]
    for v in values:
        p.send(topic, v).get(timeout=30)
    p.close()
    c = kafka.KafkaConsumer(topic, auto_offset_reset="earliest", consumer_timeout_ms=15000, **cfg)
    got = []
    for m in c:  # stops after consumer_timeout_ms without a record
        got.append(m.value)
        if len(got) == len(values):
            break
    c.close()
    if got != values:
        fail("kafka-python %s over %s as %s: read back %r" % (mechanism, "SASL_SSL" if tls else "SASL_PLAINTEXT", user, got))


def kafka_python_refused(addr, tls, mechanism, user, password):
    try:
        # kafka-python retries a refused authentication until its bootstrap timeout.
        p = kafka.KafkaProducer(bootstrap_timeout_ms=5000, max_block_ms=5000,
                                **kafka_python_config(addr, tls, mechanism, user, password))
        p.send("refused-topic", b"x").get(timeout=15)
        p.close()
    except KafkaError as e:
        text = repr(e)
        # kafka-python 3 reports a refused authentication at bootstrap as 'Unable to bootstrap'.
        if "Authentication" not in text and "SASL" not in text and "bootstrap" not in text:
            fail("kafka-python %s as %s with a wrong password: unexpected error %s" % (mechanism, user, text))
        return
    fail("kafka-python %s as %s with a wrong password was served" % (mechanism, user))


def confluent_config(addr, tls, mechanism, user, password):
    c = {"bootstrap.servers": addr, "security.protocol": "sasl_ssl" if tls else "sasl_plaintext",
         "sasl.mechanisms": mechanism, "sasl.username": user, "sasl.password": password}
    if tls:
        c["ssl.ca.location"] = CA
    return c


def confluent_round_trip(addr, tls, mechanism, user):
    topic = "ck-%s-%s" % (mechanism.lower(), uuid.uuid4().hex[:8])
    cfg = confluent_config(addr, tls, mechanism, user, PASSWORDS[mechanism][user])
    p = confluent_kafka.Producer(dict(cfg, **{"acks": "all", "message.timeout.ms": 30000}))
    errors = []
    values = [("%s %s %d" % (user, mechanism, i)).encode() for i in range(5)]
    for v in values:
        p.produce(topic, v, on_delivery=lambda err, msg: errors.append(err) if err else None)
    if p.flush(30) != 0 or errors:
        fail("confluent-kafka %s as %s: delivery failed: %r" % (mechanism, user, errors))
    c = confluent_kafka.Consumer(dict(cfg, **{"group.id": "g-" + topic, "auto.offset.reset": "earliest"}))
    c.subscribe([topic])
    got = []
    deadline = time.time() + 30
    while len(got) < len(values) and time.time() < deadline:
        m = c.poll(1.0)
        if m is None:
            continue
        if m.error():
            fail("confluent-kafka %s as %s: consume error %s" % (mechanism, user, m.error()))
        got.append(m.value())
    c.close()
    if got != values:
        fail("confluent-kafka %s as %s: read back %r" % (mechanism, user, got))


def confluent_refused(addr, tls, mechanism, user, password):
    seen = []
    cfg = confluent_config(addr, tls, mechanism, user, password)
    cfg["error_cb"] = lambda err: seen.append(err)
    p = confluent_kafka.Producer(cfg)
    deadline = time.time() + 20
    while time.time() < deadline and not any(e.code() == confluent_kafka.KafkaError._AUTHENTICATION for e in seen):
        p.poll(0.2)
    if not any(e.code() == confluent_kafka.KafkaError._AUTHENTICATION for e in seen):
        fail("confluent-kafka %s as %s with a wrong password: no authentication error, saw %r" % (mechanism, user, seen))
    if not any("Authentication failed" in e.str() for e in seen):
        fail("confluent-kafka %s: the broker's reason did not reach the client: %r" % (mechanism, [e.str() for e in seen]))


def confluent_oauthbearer(addr, tls):
    """librdkafka's own unsecured JWT (KIP-255): the broker's unsecured validator names the
    principal from its sub claim."""
    topic = "ck-oauth-" + uuid.uuid4().hex[:8]
    cfg = {"bootstrap.servers": addr, "security.protocol": "sasl_ssl" if tls else "sasl_plaintext",
           "sasl.mechanisms": "OAUTHBEARER", "enable.sasl.oauthbearer.unsecure.jwt": True,
           "sasl.oauthbearer.config": "principal=alice lifeSeconds=600"}
    if tls:
        cfg["ssl.ca.location"] = CA
    p = confluent_kafka.Producer(dict(cfg, **{"message.timeout.ms": 30000}))
    errors = []
    p.produce(topic, b"bearer", on_delivery=lambda err, msg: errors.append(err) if err else None)
    if p.flush(30) != 0 or errors:
        fail("confluent-kafka OAUTHBEARER: delivery failed: %r" % errors)
    print("ok: OAUTHBEARER over %s" % ("SASL_SSL" if tls else "SASL_PLAINTEXT"))


for tls, addr in [(False, SASL_PLAINTEXT), (True, SASL_SSL)]:
    confluent_oauthbearer(addr, tls)
    for mechanism in ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]:
        confluent_round_trip(addr, tls, mechanism, "alice")
        kafka_python_round_trip(addr, tls, mechanism, "bob")
        confluent_refused(addr, tls, mechanism, "alice", "not-her-password")
        confluent_refused(addr, tls, mechanism, "mallory", "whatever")
        kafka_python_refused(addr, tls, mechanism, "bob", "not-his-password")
        print("ok: %s over %s" % (mechanism, "SASL_SSL" if tls else "SASL_PLAINTEXT"))
