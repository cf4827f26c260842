"""A pytest plugin (`-p samsa_secured_fixture`) that lets kafka-python's SASL and SSL integration
tests (test_sasl_integration.py, test_ssl_integration.py) run against a Samsa broker started by
run_kafka_python.py instead of the Java Kafka their fixtures start.

Those files ask for a broker with `KafkaFixture.instance(0, transport=..., sasl_mechanism=...)`
(through conftest.py's kafka_broker_factory, or directly), and skip themselves or drop the
transport when KAFKA_URI names an external broker. This plugin replaces `KafkaFixture.instance`
so that it returns an external fixture for Samsa's listener of that transport, named in
SAMSA_LISTENERS (`PLAINTEXT=127.0.0.1:9092,SSL=...,SASL_PLAINTEXT=...`), with the CA that signed
Samsa's certificate in SAMSA_SSL_DIR/ca-cert. The tests themselves run unchanged: the clients
they build come from the fixture's own `_enrich_client_params` (user alice, password
alice-secret, which the broker's JAAS config and SCRAM credentials hold).
"""
import os


def _listeners():
    out = {}
    for item in os.environ.get("SAMSA_LISTENERS", "").split(","):
        if "=" in item:
            name, addr = item.split("=", 1)
            host, port = addr.rsplit(":", 1)
            out[name.strip().upper()] = (host, int(port))
    return out


def pytest_configure(config):
    from test.integration import fixtures

    listeners = _listeners()
    if not listeners:
        return
    KafkaFixture = fixtures.KafkaFixture

    class SamsaFixture(KafkaFixture):
        """Samsa's listener for one transport, as an external broker fixture."""

        def start(self):
            pass

        def get_topic_names(self):
            from kafka import KafkaAdminClient

            admin = KafkaAdminClient(**self._enrich_client_params({}, client_id="samsa-fixture"))
            try:
                return admin.list_topics()
            finally:
                admin.close()

    def instance(cls, broker_id, transport="PLAINTEXT", sasl_mechanism=None, tmp_dir=None, **_):
        transport = transport.upper()
        if transport not in listeners:
            raise RuntimeError("Samsa was not started with a %s listener" % transport)
        host, port = listeners[transport]
        fixture = SamsaFixture(host, port, broker_id, external=True, transport=transport,
                               sasl_mechanism=sasl_mechanism, tmp_dir=tmp_dir)
        fixture.ssl_dir = os.environ.get("SAMSA_SSL_DIR")
        return fixture

    KafkaFixture.instance = classmethod(instance)
