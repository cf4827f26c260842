package differential;

import java.io.IOException;

/** Which node a request goes to, found the way a client finds it. */
@FunctionalInterface
interface Route {
    int node(Ctx c) throws IOException;

    /** Any broker answers (admin requests are forwarded to the controller by brokers). */
    Route ANY = c -> c.peer.anyNode();

    static Route node(int id) {
        return c -> id;
    }

    /** The partition's leader, from Metadata. */
    static Route leader(String topic, int partition) {
        return c -> c.leader(topic, partition);
    }

    /** The group's coordinator, from FindCoordinator. */
    static Route group(String group) {
        return c -> c.coordinator((byte) 0, group);
    }

    /** The transactional id's coordinator, from FindCoordinator. */
    static Route txn(String transactionalId) {
        return c -> c.coordinator((byte) 1, transactionalId);
    }
}
