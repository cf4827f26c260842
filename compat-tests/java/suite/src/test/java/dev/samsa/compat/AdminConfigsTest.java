package dev.samsa.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;

import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.AlterConfigsOptions;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.DescribeConfigsOptions;
import org.apache.kafka.clients.admin.ListConfigResourcesOptions;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.InvalidConfigurationException;
import org.apache.kafka.common.errors.InvalidRequestException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/** Admin: configs described, altered (incremental and whole), of topics, brokers, groups and client metrics. */
class AdminConfigsTest extends SuiteBase {
    static Config describe(ConfigResource r) throws Exception {
        return admin.describeConfigs(List.of(r)).all().get().get(r);
    }

    /**
     * The resource's configs once `settled` holds: each describe may go to another broker, which
     * answers from its metadata image, a little behind the controller that took the change.
     */
    static Config awaitConfig(ConfigResource r, java.util.function.Predicate<Config> settled) {
        java.util.concurrent.atomic.AtomicReference<Object> last = new java.util.concurrent.atomic.AtomicReference<>();
        Env.waitUntil(() -> "configs of " + r + "; last seen " + last.get(), () -> {
            try {
                Config c = describe(r);
                last.set(c);
                return settled.test(c);
            } catch (Exception e) {
                last.set(e);
                return false;
            }
        });
        return (Config) last.get();
    }

    static String value(Config c, String name) {
        ConfigEntry e = c.get(name);
        return e == null ? null : e.value();
    }

    static void awaitListed(ConfigResource r, boolean listed) {
        Env.waitUntil(r + (listed ? " listed" : " not listed"), () -> {
            try {
                return admin.listConfigResources(java.util.Set.of(r.type()), new ListConfigResourcesOptions()).all().get()
                    .contains(r) == listed;
            } catch (Exception e) {
                return false;
            }
        });
    }

    static void alter(ConfigResource r, AlterConfigOp... ops) throws Exception {
        admin.incrementalAlterConfigs(Map.of(r, List.of(ops))).all().get();
    }

    static AlterConfigOp op(String name, String value, AlterConfigOp.OpType type) {
        return new AlterConfigOp(new ConfigEntry(name, value), type);
    }

    @Test
    @Tag("quick")
    void topicConfigsDescribedWithSourcesAndAltered() throws Exception {
        String topic = Env.name("cfg");
        Env.createTopic(admin, topic, 1, Map.of("retention.ms", "7200000"));
        ConfigResource r = new ConfigResource(ConfigResource.Type.TOPIC, topic);
        Config c = describe(r);
        ConfigEntry retention = c.get("retention.ms");
        assertEquals("7200000", retention.value());
        assertEquals(ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG, retention.source());
        assertFalse(retention.isDefault());
        ConfigEntry cleanup = c.get("cleanup.policy");
        assertEquals("delete", cleanup.value());
        assertTrue(cleanup.isDefault());
        assertNotNull(c.get("max.message.bytes"));
        assertNotNull(c.get("segment.bytes"));

        alter(r, op("cleanup.policy", "compact", AlterConfigOp.OpType.SET),
            op("retention.ms", null, AlterConfigOp.OpType.DELETE));
        c = awaitConfig(r, x -> "compact".equals(value(x, "cleanup.policy")) && x.get("retention.ms").isDefault());
        assertEquals("compact", c.get("cleanup.policy").value());
        assertEquals(ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG, c.get("cleanup.policy").source());
        assertTrue(c.get("retention.ms").isDefault());

        // APPEND and SUBTRACT on a list config.
        alter(r, op("cleanup.policy", "delete", AlterConfigOp.OpType.APPEND));
        assertEquals(List.of("compact", "delete"), List.of(awaitConfig(r, x -> value(x, "cleanup.policy").contains(","))
            .get("cleanup.policy").value().split(",")));
        alter(r, op("cleanup.policy", "compact", AlterConfigOp.OpType.SUBTRACT));
        awaitConfig(r, x -> "delete".equals(value(x, "cleanup.policy")));
    }

    @Test
    void synonymsAndDocumentation() throws Exception {
        String topic = Env.name("cfg-syn");
        Env.createTopic(admin, topic, 1, Map.of("retention.ms", "7200000"));
        ConfigResource r = new ConfigResource(ConfigResource.Type.TOPIC, topic);
        Config c = admin.describeConfigs(List.of(r), new DescribeConfigsOptions().includeSynonyms(true).includeDocumentation(true))
            .all().get().get(r);
        ConfigEntry retention = c.get("retention.ms");
        assertFalse(retention.synonyms().isEmpty());
        assertEquals("retention.ms", retention.synonyms().get(0).name());
        assertEquals(ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG, retention.synonyms().get(0).source());
        // The broker's defaults are not synonyms: only values set somewhere are (as Kafka lists them).
        assertEquals(1, retention.synonyms().size(), retention.synonyms().toString());
        assertNotNull(retention.documentation());
        assertEquals(ConfigEntry.ConfigType.LONG, retention.type());
    }

    @Test
    void validateOnlyChangesNothing() throws Exception {
        String topic = Env.name("cfg-validate");
        Env.createTopic(admin, topic, 1, Map.of("segment.ms", "600000"));
        ConfigResource r = new ConfigResource(ConfigResource.Type.TOPIC, topic);
        admin.incrementalAlterConfigs(Map.of(r, List.of(op("segment.ms", "700000", AlterConfigOp.OpType.SET))),
            new AlterConfigsOptions().validateOnly(true)).all().get();
        assertEquals("600000", describe(r).get("segment.ms").value());
        ExecutionException e = assertThrows(ExecutionException.class, () -> admin.incrementalAlterConfigs(
            Map.of(r, List.of(op("segment.ms", "soon", AlterConfigOp.OpType.SET))),
            new AlterConfigsOptions().validateOnly(true)).all().get());
        Env.cause(e, InvalidConfigurationException.class);
    }

    @Test
    @Tag("quick")
    void badTopicConfigsFail() throws Exception {
        String topic = Env.name("cfg-bad");
        Env.createTopic(admin, topic, 1);
        ConfigResource r = new ConfigResource(ConfigResource.Type.TOPIC, topic);
        ExecutionException e = assertThrows(ExecutionException.class,
            () -> alter(r, op("retention.ms", "forever", AlterConfigOp.OpType.SET)));
        Env.cause(e, InvalidConfigurationException.class);
        e = assertThrows(ExecutionException.class, () -> alter(r, op("no.such.config", "1", AlterConfigOp.OpType.SET)));
        Env.cause(e, InvalidConfigurationException.class);
        e = assertThrows(ExecutionException.class, () -> alter(r, op("retention.ms", "1", AlterConfigOp.OpType.APPEND)));
        Env.cause(e, InvalidConfigurationException.class);
        ConfigResource unknown = new ConfigResource(ConfigResource.Type.TOPIC, Env.name("cfg-unknown"));
        e = assertThrows(ExecutionException.class, () -> describe(unknown));
        Env.cause(e, UnknownTopicOrPartitionException.class);
        e = assertThrows(ExecutionException.class, () -> alter(unknown, op("retention.ms", "1000", AlterConfigOp.OpType.SET)));
        Env.cause(e, UnknownTopicOrPartitionException.class);
    }

    @Test
    @Tag("quick")
    void brokerConfigsDescribedAndDynamicallyAltered() throws Exception {
        int id = admin.describeCluster().nodes().get().iterator().next().id();
        ConfigResource broker = new ConfigResource(ConfigResource.Type.BROKER, String.valueOf(id));
        Config c = describe(broker);
        assertEquals(String.valueOf(id), c.get("node.id").value());
        assertEquals("true", c.get("auto.create.topics.enable").value());
        assertNotNull(c.get("log.retention.hours"));
        assertNotNull(c.get("message.max.bytes"));

        // A cluster-wide dynamic default and a per-broker value, then removed again.
        ConfigResource cluster = new ConfigResource(ConfigResource.Type.BROKER, "");
        alter(cluster, op("log.cleaner.backoff.ms", "16000", AlterConfigOp.OpType.SET));
        try {
            Env.waitUntil("cluster default seen by broker " + id, () -> {
                try {
                    ConfigEntry e = describe(broker).get("log.cleaner.backoff.ms");
                    return e.value().equals("16000") && e.source() == ConfigEntry.ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG;
                } catch (Exception ex) {
                    return false;
                }
            });
            alter(broker, op("log.cleaner.backoff.ms", "17000", AlterConfigOp.OpType.SET));
            Env.waitUntil("per-broker value", () -> {
                try {
                    ConfigEntry e = describe(broker).get("log.cleaner.backoff.ms");
                    return e.value().equals("17000") && e.source() == ConfigEntry.ConfigSource.DYNAMIC_BROKER_CONFIG;
                } catch (Exception ex) {
                    return false;
                }
            });
        } finally {
            alter(broker, op("log.cleaner.backoff.ms", null, AlterConfigOp.OpType.DELETE));
            alter(cluster, op("log.cleaner.backoff.ms", null, AlterConfigOp.OpType.DELETE));
        }
        Env.waitUntil("dynamic values removed", () -> {
            try {
                return describe(broker).get("log.cleaner.backoff.ms").source() == ConfigEntry.ConfigSource.DEFAULT_CONFIG;
            } catch (Exception ex) {
                return false;
            }
        });
        // A static-only config cannot be changed at run time.
        ExecutionException e = assertThrows(ExecutionException.class,
            () -> alter(broker, op("log.dirs", "/tmp/elsewhere", AlterConfigOp.OpType.SET)));
        Env.cause(e, InvalidRequestException.class);
    }

    @Test
    void brokerLoggers() throws Exception {
        int id = admin.describeCluster().nodes().get().iterator().next().id();
        ConfigResource r = new ConfigResource(ConfigResource.Type.BROKER_LOGGER, String.valueOf(id));
        Config c = describe(r);
        assertNotNull(c.get("root"), c.toString());
    }

    @Test
    void groupConfigs() throws Exception {
        String group = Env.name("cfg-group");
        ConfigResource r = new ConfigResource(ConfigResource.Type.GROUP, group);
        alter(r, op("consumer.session.timeout.ms", "50000", AlterConfigOp.OpType.SET),
            op("share.auto.offset.reset", "earliest", AlterConfigOp.OpType.SET));
        Config c = awaitConfig(r, x -> "50000".equals(value(x, "consumer.session.timeout.ms"))
            && "earliest".equals(value(x, "share.auto.offset.reset")));
        assertEquals("50000", c.get("consumer.session.timeout.ms").value());
        assertEquals("earliest", c.get("share.auto.offset.reset").value());
        assertEquals(ConfigEntry.ConfigSource.DYNAMIC_GROUP_CONFIG, c.get("share.auto.offset.reset").source());
        ExecutionException e = assertThrows(ExecutionException.class,
            () -> alter(r, op("share.auto.offset.reset", "sometime", AlterConfigOp.OpType.SET)));
        Env.cause(e, InvalidConfigurationException.class);
        e = assertThrows(ExecutionException.class, () -> alter(r, op("no.such.group.config", "1", AlterConfigOp.OpType.SET)));
        Env.cause(e, InvalidConfigurationException.class);
        awaitListed(r, true);
    }

    @Test
    @Tag("quick")
    void clientMetricsResources() throws Exception {
        String name = Env.name("metrics-sub");
        ConfigResource r = new ConfigResource(ConfigResource.Type.CLIENT_METRICS, name);
        alter(r, op("metrics", "org.apache.kafka.producer.", AlterConfigOp.OpType.SET),
            op("interval.ms", "60000", AlterConfigOp.OpType.SET),
            op("match", "client_id=compat-.*", AlterConfigOp.OpType.SET));
        Config c = awaitConfig(r, x -> "org.apache.kafka.producer.".equals(value(x, "metrics"))
            && "60000".equals(value(x, "interval.ms")) && "client_id=compat-.*".equals(value(x, "match")));
        assertEquals("org.apache.kafka.producer.", c.get("metrics").value());
        assertEquals("60000", c.get("interval.ms").value());
        awaitListed(r, true);
        ExecutionException e = assertThrows(ExecutionException.class,
            () -> alter(r, op("interval.ms", "1", AlterConfigOp.OpType.SET)));
        Env.cause(e, InvalidRequestException.class);
        e = assertThrows(ExecutionException.class, () -> alter(r, op("interval.ms", "often", AlterConfigOp.OpType.SET)));
        Env.cause(e, InvalidConfigurationException.class);
        e = assertThrows(ExecutionException.class, () -> alter(r, op("no.such.metrics.config", "1", AlterConfigOp.OpType.SET)));
        Env.cause(e, InvalidRequestException.class);
        // Removing every value removes the subscription.
        alter(r, op("metrics", null, AlterConfigOp.OpType.DELETE), op("interval.ms", null, AlterConfigOp.OpType.DELETE),
            op("match", null, AlterConfigOp.OpType.DELETE));
        awaitListed(r, false);
    }

    @Test
    void listConfigResourcesOfEveryType() throws Exception {
        String topic = Env.name("cfg-list");
        Env.createTopic(admin, topic, 1);
        Collection<ConfigResource> all = admin.listConfigResources().all().get();
        assertTrue(all.contains(new ConfigResource(ConfigResource.Type.TOPIC, topic)), all.toString());
        int id = admin.describeCluster().nodes().get().iterator().next().id();
        assertTrue(all.contains(new ConfigResource(ConfigResource.Type.BROKER, String.valueOf(id))), all.toString());
    }
}
