package differential;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.List;
import org.apache.kafka.common.protocol.ApiKeys;

/**
 * One compared answer: what was asked, what came back, and the fields this scenario masks
 * because they legitimately differ here (each mask says why; the general rules are in
 * {@link Normalise}).
 */
final class Observation {
    final String label;
    final ApiKeys key;
    final short version;
    final JsonNode request;
    final Peer.Answer answer;
    final List<Mask> masks = new ArrayList<>();

    record Mask(String reason, List<String> paths) {}

    Observation(String label, ApiKeys key, short version, JsonNode request, Peer.Answer answer) {
        this.label = label;
        this.key = key;
        this.version = version;
        this.request = request;
        this.answer = answer;
    }

    /** Masks the fields at `paths` (`/a/* /b`, `**` for any depth), saying why. */
    Observation mask(String reason, String... paths) {
        masks.add(new Mask(reason, List.of(paths)));
        return this;
    }

    /** In a cluster of several nodes only, masks the fields at `paths`, saying why (what a
     *  cluster decides for itself: which node leads what, when a replicated write is read). */
    Observation inCluster(Ctx c, String reason, String... paths) {
        return c.peer.nodes.size() > 1 ? mask(reason, paths) : this;
    }

    JsonNode json() {
        return answer.json();
    }
}
