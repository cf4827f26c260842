#!/usr/bin/env python3
"""Runs the Sarama checks (compat-tests/go/sarama: producers, consumers, consumer groups,
offsets, the admin client, transactions, with github.com/IBM/sarama as pinned in its go.mod)
against Samsa or the reference Kafka started here, with `go test -json`, one report entry per
test and subtest.

The checks read SARAMA_BROKERS, SARAMA_RF, SARAMA_NODES and SARAMA_AUTHORIZER. Called by
scripts/compat/sarama.sh."""
import argparse
import os
import sys

from go_clients import ROOT, run_go_suite

HERE = os.path.dirname(os.path.abspath(__file__))
SARAMA_VERSION = "v1.61.1"
MODULE_DIR = os.path.join(ROOT, "compat-tests", "go", "sarama")

# Both brokers get scripts/reference/test.properties and these: an authorizer that allows
# where no ACL applies (TestAdminACLs creates ACLs on a name no other check uses), and the
# PLAINTEXT principal as a super user (three Kafka nodes with StandardAuthorizer cannot elect a
# controller otherwise: their controller listener's requests are ANONYMOUS too).
BROKER_PROPS = {
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "allow.everyone.if.no.acl.found": "true",
    "super.users": "User:ANONYMOUS",
}
# --quick: every check but the per-codec and per-assignor repetitions of the longest ones.
QUICK = "^(TestSyncProducer/(none|zstd)|TestAsyncProducer/(none|lz4)|TestConsumerGroup/(range|cooperative-sticky)" \
        "|TestPartitionConsumer|TestOffsetsByTime|TestMetadata|TestConsumerGroupResume|TestConsumerGroupStaticMembers|TestOffsetManager" \
        "|TestAdmin.*|TestTransactional.*|TestProducer.*|TestDefaultVersionProduceConsume)$"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--samsa", default=os.environ.get("TEST_SAMSA_BIN", "target/debug/samsa"))
    p.add_argument("--cluster", type=int, default=0, help="this many nodes instead of one (RF=3 topics)")
    p.add_argument("--kafka", action="store_true", help="against the reference Kafka 4.4 instead of Samsa")
    p.add_argument("--quick", action="store_true", help="one or two codecs and assignors instead of all")
    p.add_argument("--run", help="go test -run REGEXP (a subset of the checks)")
    args = p.parse_args()
    if args.quick and not args.run:
        args.run = QUICK

    def suite_env(broker, nodes):
        return {"SARAMA_BROKERS": broker.bootstrap, "SARAMA_RF": str(min(nodes, 3)), "SARAMA_NODES": str(nodes),
                "SARAMA_AUTHORIZER": "1"}

    return run_go_suite("sarama", SARAMA_VERSION, args, MODULE_DIR, "./", BROKER_PROPS, suite_env,
                        os.path.join(HERE, "sarama-skip.txt"), timeout="30m")


if __name__ == "__main__":
    sys.exit(main())
