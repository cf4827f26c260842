package differential;

import org.apache.kafka.common.protocol.ApiKeys;

/**
 * A scenario: requests of one API sent alike to both peers, at every version of it both
 * serve (within `minVersion`..`maxVersion`), whose observed answers must be the same once
 * normalised. `body` runs once per peer and version, with a context of its own.
 */
record Scenario(String name, ApiKeys api, short minVersion, short maxVersion, Body body) {
    @FunctionalInterface
    interface Body {
        void run(Ctx c) throws Exception;
    }

    static Scenario of(String name, ApiKeys api, Body body) {
        return new Scenario(name, api, (short) 0, Short.MAX_VALUE, body);
    }

    static Scenario of(String name, ApiKeys api, int minVersion, int maxVersion, Body body) {
        return new Scenario(name, api, (short) minVersion, (short) maxVersion, body);
    }
}
