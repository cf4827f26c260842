"""Many connections, many partitions: the clients of scripts/bench/bench.py's `producers_64`
and `produce.1KiB.acks_all.p10000.linger5` rows. Needs the confluent-kafka package; stdlib
otherwise.

  python many.py produce BOOTSTRAP TOPIC PROCESSES CONNECTIONS RECORDS SIZE

runs PROCESSES worker processes, each holding CONNECTIONS confluent-kafka (librdkafka) producers,
each producer its own client with its own connection to the broker, producing RECORDS records
of SIZE bytes to a partition of its own (acks=all, librdkafka's defaults otherwise, linger.ms=5).

Why this shape: 64 rdkafka_performance processes would be 64 processes with about ten threads
each on a 2-core machine, measuring the scheduler more than the broker; one rdkafka_performance
over many partitions is one connection. 8 processes x 8 clients gives the broker 64 connections
that each carry their own produce stream, with 8 interpreter processes' worth of client CPU.

Prints `MANY delivered=N failed=N seconds=S` (from the moment every client has its metadata to
the last acknowledgement).

  python many.py prime BOOTSTRAP

asks for a group coordinator until one answers (Kafka creates __consumer_offsets then).

  python many.py ready BOOTSTRAP TOPIC...

exits 0 once Metadata shows every partition of the topics with a leader (1 after 30 s).

  python many.py create BOOTSTRAP TOPIC PARTITIONS

creates the topic and prints `CREATED <s> <s> <steps>`: seconds until CreateTopics answered, and
until Metadata shows every partition with a leader (timed in this process, after its first
Metadata); steps is 2 when the broker refused them all at once (Kafka's controller: at most
10,000 records per operation), and half were created, then the rest added by CreatePartitions.
"""

import multiprocessing
import sys
import time


def worker(bootstrap, topic, index, connections, records, size, barrier, results):
    from confluent_kafka import Producer
    counts = {"ok": 0, "failed": 0}

    def delivered(err, _msg):
        counts["failed" if err else "ok"] += 1

    producers = [Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5,
                           "client.id": f"bench-many-{index}-{k}"}) for k in range(connections)]
    for p in producers:
        p.list_topics(topic, timeout=30)
    payload = b"x" * size
    barrier.wait(timeout=120)
    for _ in range(records):
        for k, p in enumerate(producers):
            while True:
                try:
                    p.produce(topic, payload, partition=index * connections + k, on_delivery=delivered)
                    break
                except BufferError:
                    p.poll(0.005)
        if _ % 64 == 0:
            for p in producers:
                p.poll(0)
    for p in producers:
        p.flush(120)
    results.put((counts["ok"], counts["failed"], time.time()))


def create(bootstrap, topic, partitions):
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic
    a = AdminClient({"bootstrap.servers": bootstrap})
    a.list_topics(timeout=30)
    t0 = time.time()
    steps = 1
    try:
        a.create_topics([NewTopic(topic, partitions, 1)], operation_timeout=300)[topic].result(300)
    except KafkaException as e:
        # Kafka's controller takes at most 10,000 records per operation (a topic record and
        # one per partition): it refuses 10,000 partitions at once with POLICY_VIOLATION. Then
        # half are created and CreatePartitions adds the rest, timed together.
        if e.args[0].code() != KafkaError.POLICY_VIOLATION:
            raise
        steps = 2
        a.create_topics([NewTopic(topic, partitions // 2, 1)], operation_timeout=300)[topic].result(300)
        a.create_partitions([NewPartitions(topic, partitions)],
                            operation_timeout=300)[topic].result(300)
    t1 = time.time()
    while time.time() - t0 < 300:
        t = a.list_topics(topic, timeout=30).topics[topic]
        if t.error is None and len(t.partitions) == partitions and \
                all(p.leader >= 0 and p.error is None for p in t.partitions.values()):
            break
        time.sleep(0.1)
    print(f"CREATED {t1 - t0:.3f} {time.time() - t0:.3f} {steps}", flush=True)


def ready(bootstrap, topics):
    """Exit status 0 once Metadata shows every partition of the topics with a leader (30 s)."""
    from confluent_kafka.admin import AdminClient
    a = AdminClient({"bootstrap.servers": bootstrap})
    deadline = time.time() + 30
    while time.time() < deadline:
        md = a.list_topics(timeout=10).topics
        if all(t in md and md[t].error is None and md[t].partitions and
               all(p.leader >= 0 and p.error is None for p in md[t].partitions.values())
               for t in topics):
            return 0
        time.sleep(0.05)
    return 1


def prime(bootstrap):
    """Asks for a group's coordinator until one answers (30 s at most): a fresh Kafka creates
    its __consumer_offsets topic (50 partitions) on the first FindCoordinator, which would
    otherwise happen inside the first measured scenario that has a group id."""
    from confluent_kafka.admin import AdminClient
    a = AdminClient({"bootstrap.servers": bootstrap})
    deadline = time.time() + 30
    while time.time() < deadline:
        try:
            a.describe_consumer_groups(["bench-prime"])["bench-prime"].result(10)
            return 0
        except Exception:  # noqa: BLE001 - COORDINATOR_NOT_AVAILABLE while it is created
            time.sleep(0.1)
    return 1


def main(argv):
    if argv[0] == "prime":
        sys.exit(prime(argv[1]))
    if argv[0] == "ready":
        sys.exit(ready(argv[1], argv[2:]))
    if argv[0] == "create":
        return create(argv[1], argv[2], int(argv[3]))
    argv = argv[1:]
    bootstrap, topic = argv[0], argv[1]
    processes, connections, records, size = (int(x) for x in argv[2:6])
    barrier = multiprocessing.Barrier(processes + 1)
    results = multiprocessing.Queue()
    procs = [multiprocessing.Process(target=worker, args=(bootstrap, topic, i, connections, records,
                                                          size, barrier, results))
             for i in range(processes)]
    for p in procs:
        p.start()
    barrier.wait(timeout=120)
    began = time.time()
    got = [results.get(timeout=600) for _ in procs]
    for p in procs:
        p.join()
    ok, failed = sum(g[0] for g in got), sum(g[1] for g in got)
    print(f"MANY delivered={ok} failed={failed} seconds={max(g[2] for g in got) - began:.3f}",
          flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
