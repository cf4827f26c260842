#!/usr/bin/env python3
"""Runs franz-go's own kgo integration suite (pkg/kgo/*_test.go of github.com/twmb/franz-go,
the version franz-go.sh installs) against Samsa or the reference Kafka started here, with
`go test -json`, and reports one test per test and subtest.

The suite reads its broker from the environment: KGO_SEEDS (the bootstrap), KGO_TEST_RF (the
replication factor of the topics it creates), KGO_TEST_RECORDS (how many records its ETL tests
push through), KGO_TEST_SCRAM_SEEDS/KGO_TEST_SCRAM and KGO_TEST_OAUTH_SEEDS (a SASL_PLAINTEXT
listener with SCRAM-SHA-256 and unsecured OAUTHBEARER, as franz-go's CI sets up its Kafka;
scripts/reference/kafka has no such listener, so on Kafka those three tests skip themselves).

The tests decide themselves what the broker supports, from its ApiVersions: those that need
KIP-848 (ConsumerGroupHeartbeat v1) or share groups at ShareFetch/ShareAcknowledge v2 skip
themselves. On Samsa each skip must be listed in franz-go-skip.txt with its reason (a skip the
file does not explain is a failure); on Kafka skips are reported with the test's own words.

Called by scripts/compat/franz-go.sh, which installs the module first."""
import argparse
import os
import sys

from go_clients import SASL_PASSWORD, SASL_USER, run_go_suite

HERE = os.path.dirname(os.path.abspath(__file__))
FRANZ_GO_VERSION = "v1.22.3"

# The broker settings franz-go's CI gives its Kafka beside the defaults (test.properties has
# the replication factors): its share-group ETL releases and kills enough that a record can
# reach the default delivery count limit of 5 and be archived.
BROKER_PROPS = {
    "group.share.delivery.count.limit": "10",
    "share.coordinator.state.topic.num.partitions": "5",
}
# How many records the ETL tests (TestGroupETL, TestTxnEtl, TestShareGroupETL, ...) produce
# and consume: a fifth of franz-go's default 500000, because TestShareGroupETL must finish
# within 4 minutes, which Kafka 4.4 missed with 500000 on this loaded two-core machine (Samsa
# skips that test); fewer with --quick. Every other test is the same whatever the number;
# --records 500000 runs franz-go's default.
RECORDS_FULL = 100000
RECORDS_QUICK = 10000


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--module-dir", required=True, help="the franz-go module, writable")
    p.add_argument("--samsa", default=os.environ.get("TEST_SAMSA_BIN", "target/debug/samsa"))
    p.add_argument("--cluster", type=int, default=0, help="this many nodes instead of one (KGO_TEST_RF=3)")
    p.add_argument("--kafka", action="store_true", help="against the reference Kafka 4.4 instead of Samsa")
    p.add_argument("--quick", action="store_true", help="KGO_TEST_RECORDS=%d instead of %d" % (RECORDS_QUICK, RECORDS_FULL))
    p.add_argument("--records", type=int, help="KGO_TEST_RECORDS")
    p.add_argument("--run", help="go test -run REGEXP (a subset of the tests)")
    args = p.parse_args()
    records = args.records or (RECORDS_QUICK if args.quick else RECORDS_FULL)

    def suite_env(broker, nodes):
        env = {"KGO_SEEDS": broker.bootstrap, "KGO_TEST_RF": str(min(nodes, 3)), "KGO_TEST_RECORDS": str(records)}
        if broker.sasl:
            env.update({"KGO_TEST_SCRAM_SEEDS": broker.sasl, "KGO_TEST_SCRAM": "%s:%s" % (SASL_USER, SASL_PASSWORD),
                        "KGO_TEST_OAUTH_SEEDS": broker.sasl})
        return env

    return run_go_suite("franz-go", FRANZ_GO_VERSION, args, args.module_dir, "./pkg/kgo/", BROKER_PROPS, suite_env,
                        os.path.join(HERE, "franz-go-skip.txt"), sasl=True, extra={"records": records})


if __name__ == "__main__":
    sys.exit(main())
