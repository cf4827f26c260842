package samsa.workloads;

import java.time.Duration;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KGroupedStream;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.WindowStore;

/**
 * The Kafka Streams application of scripts/compat/kafka-workloads.sh, exactly-once v2:
 *
 * <pre>
 *   PREFIX-input (key rN, value the user) --selectKey(user)--> groupByKey (repartition topic)
 *     --> count()                                   --> PREFIX-totals   (user, running count)
 *     --> windowedBy(10 s tumbling).count()         --> PREFIX-windowed (user@windowStart, running count)
 * </pre>
 *
 * Both counts live in persistent stores with changelog topics; the record cache is off, so every
 * input record gives exactly one update on each output topic, and a reader with read_committed
 * must see, per key, the counts 1, 2, ..., n and nothing else (Workload verify-streams).
 *
 * Usage: StreamsApp BOOTSTRAP APPLICATION_ID PREFIX STATE_DIR GROUP_PROTOCOL(classic|streams)
 * Prints "STATE &lt;new state&gt;" on each state change; runs until SIGTERM (closes cleanly) or SIGKILL.
 */
public final class StreamsApp {
    public static final long WINDOW_MS = 10_000;

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], appId = args[1], prefix = args[2], stateDir = args[3], protocol = args[4];
        Properties p = new Properties();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, appId);
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        p.put(StreamsConfig.STATE_DIR_CONFIG, stateDir);
        p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        p.put(StreamsConfig.TOPOLOGY_OPTIMIZATION_CONFIG, StreamsConfig.OPTIMIZE);
        // Internal topics (repartition, changelogs) take the brokers' default.replication.factor.
        p.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, -1);
        p.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, protocol);
        p.put(StreamsConfig.consumerPrefix("auto.offset.reset"), "earliest");

        StreamsBuilder builder = new StreamsBuilder();
        KGroupedStream<String, String> byUser = builder
                .stream(prefix + "-input", Consumed.with(Serdes.String(), Serdes.String()))
                .selectKey((key, user) -> user)
                .groupByKey(Grouped.with("by-user", Serdes.String(), Serdes.String()));
        byUser.count(Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as("totals")
                        .withKeySerde(Serdes.String()).withValueSerde(Serdes.Long()))
                .toStream()
                .mapValues(count -> Long.toString(count))
                .to(prefix + "-totals", Produced.with(Serdes.String(), Serdes.String()));
        // A grace of an hour: records from different input partitions meet in the repartition
        // topic out of timestamp order, and none may be dropped as late.
        byUser.windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofMillis(WINDOW_MS), Duration.ofHours(1)))
                .count(Materialized.<String, Long, WindowStore<Bytes, byte[]>>as("windowed")
                        .withKeySerde(Serdes.String()).withValueSerde(Serdes.Long())
                        .withRetention(Duration.ofHours(2)))
                .toStream()
                .map((window, count) -> KeyValue.pair(window.key() + "@" + window.window().start(), Long.toString(count)))
                .to(prefix + "-windowed", Produced.with(Serdes.String(), Serdes.String()));

        KafkaStreams streams = new KafkaStreams(builder.build(p), p);
        streams.setStateListener((now, before) -> System.out.println("STATE " + now));
        // A thread that dies (for instance on a timeout while a broker restarts) is replaced, as
        // an application meant to keep running is set up.
        streams.setUncaughtExceptionHandler(e -> {
            System.out.println("THREAD-ERROR " + e);
            return StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.REPLACE_THREAD;
        });
        CountDownLatch done = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            streams.close(Duration.ofSeconds(30));
            done.countDown();
        }));
        streams.start();
        done.await();
    }
}
