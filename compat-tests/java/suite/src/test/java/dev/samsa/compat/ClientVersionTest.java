package dev.samsa.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.apache.kafka.common.utils.internals.AppInfoParser;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/** The client under test is Kafka's 4.4.0 (the install of scripts/compat/java-client.sh runs this alone). */
class ClientVersionTest {
    @Test
    @Tag("quick")
    void kafkaClients440() {
        assertEquals("4.4.0", AppInfoParser.getVersion());
    }
}
