package differential;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.SimpleRecord;

/**
 * Record sets for scenarios, built by Kafka's own code with fixed timestamps, so that both
 * peers receive the same bytes (and the "now" rule of {@link Normalise} leaves them alone).
 */
final class Records {
    private Records() {}

    /**
     * Two days before this run started (a whole second): the same for both peers, outside the
     * "now" rule of {@link Normalise}, and within `segment.ms` (7 days) of the markers and
     * records the brokers stamp themselves, so a segment does not roll between them (Kafka
     * rolls in record time, and so does Samsa).
     */
    static final long T0 = (System.currentTimeMillis() / 1000) * 1000 - 2 * 24 * 3600 * 1000L;

    static SimpleRecord[] simple(int n) {
        SimpleRecord[] out = new SimpleRecord[n];
        for (int i = 0; i < n; i++) {
            out[i] = new SimpleRecord(T0 + i, ("k" + i).getBytes(StandardCharsets.UTF_8), ("v" + i).getBytes(StandardCharsets.UTF_8));
        }
        return out;
    }

    static MemoryRecords batch(int n) {
        return MemoryRecords.withRecords(Compression.NONE, simple(n));
    }

    static MemoryRecords batch(int n, long timestamp) {
        SimpleRecord[] rs = new SimpleRecord[n];
        for (int i = 0; i < n; i++) rs[i] = new SimpleRecord(timestamp + i, ("k" + i).getBytes(StandardCharsets.UTF_8), ("v" + i).getBytes(StandardCharsets.UTF_8));
        return MemoryRecords.withRecords(Compression.NONE, rs);
    }

    static MemoryRecords idempotent(long producerId, short epoch, int baseSequence, int n) {
        return MemoryRecords.withIdempotentRecords(Compression.NONE, producerId, epoch, baseSequence, simple(n));
    }

    static MemoryRecords transactional(long producerId, short epoch, int baseSequence, int n) {
        return MemoryRecords.withTransactionalRecords(Compression.NONE, producerId, epoch, baseSequence, simple(n));
    }

    static MemoryRecords compressed(String codec, int n) {
        return MemoryRecords.withRecords(Compression.of(codec).build(), simple(n));
    }

    /** A record set of magic `magic` (0 or 1: the message formats Kafka 4 no longer takes). */
    static MemoryRecords legacy(byte magic, int n) {
        return MemoryRecords.withRecords(magic, Compression.NONE, simple(n));
    }

    static MemoryRecords raw(byte[] bytes) {
        return MemoryRecords.readableRecords(ByteBuffer.wrap(bytes));
    }

    /** A valid batch with one byte of its payload changed: its CRC no longer matches. */
    static MemoryRecords corruptCrc(int n) {
        ByteBuffer b = batch(n).buffer().duplicate();
        byte[] bytes = new byte[b.remaining()];
        b.get(bytes);
        bytes[bytes.length - 1] ^= 0x5a;
        return raw(bytes);
    }

    /** Two batches in one record set. */
    static MemoryRecords twoBatches() {
        ByteBuffer a = batch(2).buffer().duplicate();
        ByteBuffer b = batch(1, T0 + 100).buffer().duplicate();
        ByteBuffer both = ByteBuffer.allocate(a.remaining() + b.remaining());
        both.put(a).put(b).flip();
        return MemoryRecords.readableRecords(both);
    }
}
