// How long a large consumer group takes to become stable again after one member joins or one
// leaves, against one broker, with one group protocol (classic or consumer, KIP-848). Run by
// scripts/bench/groups.py, which compiles it against Apache Kafka 4.4's jars.
//
//   java -cp CLASSES:KAFKA_LIBS GroupRebalance --bootstrap HOST:PORT --protocol classic|consumer
//        --topic T --group G [--members 100] [--partitions 200] [--rounds 5]
//
// Creates the topic, starts --members KafkaConsumers in this JVM (one thread each, polling every
// 100 ms, auto commit on, max.poll.records=10, otherwise the Java client's defaults), waits for
// the group to be stable, then --rounds times, each after a pause of 1 to 6 s (a fixed
// pseudo-random sequence, the same for every run): (a) starts one more member and times from its
// subscribe() to stable with that member holding a partition; (b) closes one of the first
// members and times from its close() to stable without it.
//
// "Stable" is checked from both sides: the members' own assignment() views (read by each
// member's thread after every poll) hold every partition exactly once, and the broker's
// description of the group (Admin describeConsumerGroups) is in state STABLE with exactly the
// expected members, each described with the partitions its consumer sees (and, for a consumer
// group, its target assignment equal to what it holds, so no revocation is pending).
//
// Prints "RESULT form ms=..", "RESULT join round=N ms=..", "RESULT leave round=N ms=.." on
// stdout, progress as "INFO ..", and "FAILED phase=.. round=N after_ms=.. reason=.." when the
// group does not become stable in time (exit status 2).

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.MemberAssignment;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

public final class GroupRebalance {
    static final long POLL_MS = 100;

    static String bootstrap;
    static String protocol = "classic";
    static String topic;
    static String group;
    static int members = 100;
    static int partitions = 200;
    static int rounds = 5;
    static long formTimeoutMs = 180_000;
    static long phaseTimeoutMs = 120_000;

    /** One group member: a consumer owned by its own thread (KafkaConsumer is single-threaded). */
    static final class Member implements Runnable {
        final int index;
        final Thread thread;
        /** Set by the main thread: close the consumer and leave. */
        volatile boolean leave;
        /** Set by the main thread when it stops counting this member (it is leaving). */
        volatile boolean gone;
        /** The partitions the consumer holds, as of its latest poll; null before the first. */
        volatile Set<TopicPartition> view;
        volatile String memberId = "";
        /** System.nanoTime() just before subscribe() and just before close(); 0 until then. */
        volatile long subscribedAt;
        volatile long closingAt;
        volatile Throwable error;

        Member(int index) {
            this.index = index;
            this.thread = new Thread(this, "member-" + index);
            this.thread.setDaemon(true);
        }

        public void run() {
            Properties p = new Properties();
            p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
            p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
            p.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, protocol);
            p.put(ConsumerConfig.CLIENT_ID_CONFIG, "member-" + index);
            p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "true");
            p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "10");
            p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
            p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
            try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(p)) {
                subscribedAt = System.nanoTime();
                c.subscribe(List.of(topic));
                while (!leave) {
                    c.poll(Duration.ofMillis(POLL_MS));
                    memberId = c.groupMetadata().memberId();
                    view = Set.copyOf(c.assignment());
                }
                // The time of leaving is taken in the member's own thread, just before close()
                // (which commits, revokes and sends the leave request).
                closingAt = System.nanoTime();
            } catch (Throwable t) {
                error = t;
            }
        }
    }

    static final List<Member> all = Collections.synchronizedList(new ArrayList<>());
    static Admin admin;
    static String lastReason = "not checked yet";
    static long lastDescribe = 0;

    public static void main(String[] args) throws Exception {
        for (int i = 0; i < args.length; i += 2) {
            String v = args[i + 1];
            switch (args[i]) {
                case "--bootstrap": bootstrap = v; break;
                case "--protocol": protocol = v; break;
                case "--topic": topic = v; break;
                case "--group": group = v; break;
                case "--members": members = Integer.parseInt(v); break;
                case "--partitions": partitions = Integer.parseInt(v); break;
                case "--rounds": rounds = Integer.parseInt(v); break;
                case "--form-timeout-ms": formTimeoutMs = Long.parseLong(v); break;
                case "--phase-timeout-ms": phaseTimeoutMs = Long.parseLong(v); break;
                default: throw new IllegalArgumentException("unknown flag " + args[i]);
            }
        }
        Properties ap = new Properties();
        ap.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        admin = Admin.create(ap);
        int status = 0;
        try {
            createTopic();
            status = measure();
        } finally {
            shutdown();
        }
        System.out.flush();
        // Consumer threads that did not close in time must not keep the JVM alive.
        System.exit(status);
    }

    static int measure() throws Exception {
        long start = System.nanoTime();
        for (int i = 0; i < members; i++) {
            Member m = new Member(i);
            all.add(m);
            m.thread.start();
        }
        Long formed = awaitStable(start, members, null, formTimeoutMs);
        if (formed == null) {
            fail("form", 0, start);
            return 2;
        }
        result("form", 0, formed - start);
        // The pause before each join and leave comes from a fixed sequence, the same for every
        // broker: members heartbeat on a fixed interval from the last rebalance, so the wait
        // depends on where in that interval the change falls; varied pauses sample it.
        Random pauses = new Random(848);
        for (int round = 1; round <= rounds; round++) {
            Thread.sleep(pause(pauses));
            // (a) one more member.
            Member joiner = new Member(all.size());
            all.add(joiner);
            joiner.thread.start();
            while (joiner.subscribedAt == 0 && joiner.error == null) {
                Thread.sleep(1);
            }
            Long joined = awaitStable(joiner.subscribedAt, members + 1, joiner, phaseTimeoutMs);
            if (joined == null) {
                fail("join", round, joiner.subscribedAt);
                return 2;
            }
            result("join", round, joined - joiner.subscribedAt);
            Thread.sleep(pause(pauses));
            // (b) one of the first members leaves.
            Member leaver = all.get(round - 1);
            leaver.gone = true;
            leaver.leave = true;
            while (leaver.closingAt == 0 && leaver.error == null && leaver.thread.isAlive()) {
                Thread.sleep(1);
            }
            if (leaver.closingAt == 0) {
                lastReason = "the leaving member failed before close(): " + leaver.error;
                fail("leave", round, System.nanoTime());
                return 2;
            }
            Long left = awaitStable(leaver.closingAt, members, null, phaseTimeoutMs);
            if (left == null) {
                fail("leave", round, leaver.closingAt);
                return 2;
            }
            result("leave", round, left - leaver.closingAt);
        }
        return 0;
    }

    /** 1 to 6 s: longer than the 3 s classic and 5 s consumer heartbeat intervals. */
    static long pause(Random r) {
        return 1000 + r.nextInt(5000);
    }

    static void result(String phase, int round, long nanos) {
        System.out.printf("RESULT %s round=%d ms=%.1f%n", phase, round, nanos / 1e6);
        System.out.flush();
    }

    static void fail(String phase, int round, long since) {
        System.out.printf("FAILED phase=%s round=%d after_ms=%d reason=%s%n", phase, round,
                (System.nanoTime() - since) / 1_000_000, lastReason.replace('\n', ' '));
        System.out.flush();
    }

    /** Waits until the group is stable with `expected` members (and `mustHold` holding a
     *  partition); returns the System.nanoTime() it was first seen stable, or null on timeout. */
    static Long awaitStable(long since, int expected, Member mustHold, long timeoutMs) throws Exception {
        long deadline = since + timeoutMs * 1_000_000L;
        long lastNote = System.nanoTime();
        while (System.nanoTime() < deadline) {
            long now = System.nanoTime();
            if (stable(expected, mustHold)) {
                return now;
            }
            if (now - lastNote > 15_000_000_000L) {
                lastNote = now;
                System.out.printf("INFO waiting %.0f s: %s%n", (now - since) / 1e9, lastReason);
                System.out.flush();
            }
            Thread.sleep(10);
        }
        return null;
    }

    static boolean stable(int expected, Member mustHold) throws Exception {
        List<Member> active = new ArrayList<>();
        synchronized (all) {
            for (Member m : all) {
                if (!m.gone) {
                    active.add(m);
                }
            }
        }
        Map<TopicPartition, Integer> held = new HashMap<>();
        Map<String, Member> byId = new HashMap<>();
        for (Member m : active) {
            if (m.error != null) {
                throw new RuntimeException("member " + m.index + " failed", m.error);
            }
            Set<TopicPartition> view = m.view;
            if (view == null) {
                lastReason = "member " + m.index + " has not polled yet";
                return false;
            }
            for (TopicPartition tp : view) {
                held.merge(tp, 1, Integer::sum);
            }
            byId.put(m.memberId, m);
        }
        int twice = 0;
        for (int n : held.values()) {
            if (n > 1) {
                twice++;
            }
        }
        if (held.size() != partitions || twice > 0) {
            lastReason = String.format("members' views hold %d of %d partitions, %d of them more than once",
                    held.size(), partitions, twice);
            return false;
        }
        if (mustHold != null && mustHold.view.isEmpty()) {
            lastReason = "the new member holds no partition";
            return false;
        }
        // The members agree; ask the broker, at most every 50 ms.
        long now = System.nanoTime();
        if (now - lastDescribe < 50_000_000L) {
            return false;
        }
        lastDescribe = now;
        ConsumerGroupDescription d;
        try {
            d = admin.describeConsumerGroups(List.of(group)).all().get(5, TimeUnit.SECONDS).get(group);
        } catch (ExecutionException e) {
            lastReason = "describe failed: " + e.getCause();
            return false;
        }
        if (d.groupState() != GroupState.STABLE || d.members().size() != expected) {
            lastReason = String.format("the broker describes the group %s with %d members (expected %d)",
                    d.groupState(), d.members().size(), expected);
            return false;
        }
        for (MemberDescription md : d.members()) {
            Member m = byId.get(md.consumerId());
            if (m == null) {
                lastReason = "the broker lists member " + md.consumerId() + ", which no running consumer is";
                return false;
            }
            if (!md.assignment().topicPartitions().equals(m.view)) {
                lastReason = String.format("member %d holds %d partitions, the broker says %d", m.index,
                        m.view.size(), md.assignment().topicPartitions().size());
                return false;
            }
            Optional<MemberAssignment> target = md.targetAssignment();
            if (target.isPresent() && !target.get().topicPartitions().equals(md.assignment().topicPartitions())) {
                lastReason = "member " + m.index + " has not reached its target assignment";
                return false;
            }
        }
        return true;
    }

    static void createTopic() throws Exception {
        long deadline = System.nanoTime() + 60_000_000_000L;
        while (true) {
            try {
                admin.createTopics(List.of(new NewTopic(topic, partitions, (short) 1))).all().get(30, TimeUnit.SECONDS);
                break;
            } catch (ExecutionException e) {
                if (e.getCause() instanceof TopicExistsException) {
                    break;
                }
                // A broker that has just started may not take topics yet.
                if (System.nanoTime() > deadline) {
                    throw e;
                }
                Thread.sleep(500);
            }
        }
        // Every partition with a leader before the first member subscribes.
        while (true) {
            try {
                TopicDescription t = admin.describeTopics(List.of(topic)).allTopicNames().get(30, TimeUnit.SECONDS).get(topic);
                if (t.partitions().size() == partitions
                        && t.partitions().stream().allMatch(p -> p.leader() != null && !p.leader().isEmpty())) {
                    return;
                }
            } catch (ExecutionException e) {
                if (System.nanoTime() > deadline) {
                    throw e;
                }
            }
            if (System.nanoTime() > deadline) {
                throw new RuntimeException("topic " + topic + " has partitions without a leader after 60 s");
            }
            Thread.sleep(200);
        }
    }

    /** Closes every member (each in its own thread, at once) and the admin client. */
    static void shutdown() throws InterruptedException {
        List<Member> snapshot;
        synchronized (all) {
            snapshot = new ArrayList<>(all);
        }
        for (Member m : snapshot) {
            m.leave = true;
        }
        long deadline = System.nanoTime() + 60_000_000_000L;
        for (Member m : snapshot) {
            long left = deadline - System.nanoTime();
            if (left > 0) {
                m.thread.join(Math.max(1, left / 1_000_000));
            }
        }
        admin.close(Duration.ofSeconds(5));
    }
}
