package sarama_compat

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
)

var codecs = []sarama.CompressionCodec{
	sarama.CompressionNone, sarama.CompressionGZIP, sarama.CompressionSnappy,
	sarama.CompressionLZ4, sarama.CompressionZSTD,
}

// A synchronous, idempotent producer with acks=all, per codec: single sends and a batch get
// consecutive offsets, and a consumer reads back keys, values and headers as sent.
func TestSyncProducer(t *testing.T) {
	for _, codec := range codecs {
		t.Run(codec.String(), func(t *testing.T) {
			topic := createTopic(t, 1, nil)
			cfg := newConfig()
			cfg.Producer.Compression = codec
			cfg.Producer.Idempotent = true
			cfg.Net.MaxOpenRequests = 1
			p := syncProducer(t, cfg)
			msg := func(i int) *sarama.ProducerMessage {
				return &sarama.ProducerMessage{
					Topic:   topic,
					Key:     sarama.StringEncoder(fmt.Sprintf("key-%d", i)),
					Value:   sarama.StringEncoder(fmt.Sprintf("value-%d-%s", i, strings.Repeat("x", i))),
					Headers: []sarama.RecordHeader{{Key: []byte("h"), Value: []byte(fmt.Sprint(i))}},
				}
			}
			for i := 0; i < 20; i++ {
				part, off, err := p.SendMessage(msg(i))
				if err != nil {
					t.Fatalf("SendMessage %d: %v", i, err)
				}
				if part != 0 || off != int64(i) {
					t.Fatalf("message %d went to %d@%d, want 0@%d", i, part, off, i)
				}
			}
			var batch []*sarama.ProducerMessage
			for i := 20; i < 60; i++ {
				batch = append(batch, msg(i))
			}
			if err := p.SendMessages(batch); err != nil {
				t.Fatalf("SendMessages: %v", err)
			}
			seen := map[int64]bool{}
			for _, m := range batch {
				if seen[m.Offset] || m.Offset < 20 || m.Offset >= 60 {
					t.Fatalf("batch offset %d repeated or out of 20..59", m.Offset)
				}
				seen[m.Offset] = true
			}
			got := consume(t, nil, topic, 0, sarama.OffsetOldest, 60)
			for i, m := range got {
				want := msg(i)
				if m.Offset != int64(i) || string(m.Key) != fmt.Sprintf("key-%d", i) {
					t.Fatalf("message %d: offset %d key %q", i, m.Offset, m.Key)
				}
				if v, _ := want.Value.Encode(); string(m.Value) != string(v) {
					t.Fatalf("message %d: value %q", i, m.Value)
				}
				if len(m.Headers) != 1 || string(m.Headers[0].Key) != "h" || string(m.Headers[0].Value) != fmt.Sprint(i) {
					t.Fatalf("message %d: headers %v", i, m.Headers)
				}
			}
		})
	}
}

// An asynchronous producer per codec over three partitions, keyed: every message is
// acknowledged once, messages of a key share a partition, and each partition reads back
// exactly what was acknowledged for it, in order.
func TestAsyncProducer(t *testing.T) {
	for _, codec := range codecs {
		t.Run(codec.String(), func(t *testing.T) {
			topic := createTopic(t, 3, nil)
			cfg := newConfig()
			cfg.Producer.Compression = codec
			cfg.Producer.Flush.Messages = 25
			cfg.Producer.Flush.Frequency = 10 * time.Millisecond
			p, err := sarama.NewAsyncProducer(brokers(t), cfg)
			if err != nil {
				t.Fatalf("NewAsyncProducer: %v", err)
			}
			const n = 600
			acked := map[int32][]*sarama.ProducerMessage{}
			keyPartition := map[string]int32{}
			var wg sync.WaitGroup
			var failures []error
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < n; i++ {
					select {
					case m := <-p.Successes():
						acked[m.Partition] = append(acked[m.Partition], m)
					case e := <-p.Errors():
						failures = append(failures, e)
					case <-time.After(patience):
						failures = append(failures, fmt.Errorf("only %d of %d answers", i, n))
						return
					}
				}
			}()
			for i := 0; i < n; i++ {
				p.Input() <- &sarama.ProducerMessage{Topic: topic, Key: sarama.StringEncoder(fmt.Sprintf("k%d", i%17)),
					Value: sarama.StringEncoder(fmt.Sprintf("v%d", i)), Metadata: i}
			}
			wg.Wait()
			if err := p.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			if len(failures) > 0 {
				t.Fatalf("%d failures, first: %v", len(failures), failures[0])
			}
			total := 0
			for part, msgs := range acked {
				total += len(msgs)
				for _, m := range msgs {
					k, _ := m.Key.Encode()
					if prev, ok := keyPartition[string(k)]; ok && prev != part {
						t.Fatalf("key %s in partitions %d and %d", k, prev, part)
					}
					keyPartition[string(k)] = part
				}
				got := consume(t, nil, topic, part, sarama.OffsetOldest, len(msgs))
				byOffset := map[int64]string{}
				for _, m := range msgs {
					v, _ := m.Value.Encode()
					byOffset[m.Offset] = string(v)
				}
				for i, m := range got {
					if m.Offset != int64(i) || byOffset[m.Offset] != string(m.Value) {
						t.Fatalf("partition %d offset %d: read %q, acknowledged %q", part, m.Offset, m.Value, byOffset[m.Offset])
					}
				}
			}
			if total != n || len(acked) < 2 {
				t.Fatalf("%d acknowledged over %d partitions", total, len(acked))
			}
		})
	}
}

// A message near max.message.bytes (1 MB by default) goes through; one over it is refused with
// MESSAGE_TOO_LARGE.
func TestProducerLargeMessages(t *testing.T) {
	topic := createTopic(t, 1, nil)
	cfg := newConfig()
	cfg.Producer.MaxMessageBytes = 4 << 20
	cfg.Producer.Retry.Max = 0
	p := syncProducer(t, cfg)
	big := strings.Repeat("b", 900_000)
	if _, off, err := p.SendMessage(&sarama.ProducerMessage{Topic: topic, Value: sarama.StringEncoder(big)}); err != nil || off != 0 {
		t.Fatalf("900 kB message: offset %d, %v", off, err)
	}
	got := consume(t, nil, topic, 0, sarama.OffsetOldest, 1)
	if string(got[0].Value) != big {
		t.Fatalf("900 kB message read back as %d bytes", len(got[0].Value))
	}
	_, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: topic, Value: sarama.StringEncoder(strings.Repeat("c", 2<<20))})
	if !isErr(err, sarama.ErrMessageSizeTooLarge) {
		t.Fatalf("2 MB message: want MESSAGE_TOO_LARGE, got %v", err)
	}
}

// Producing to a topic that does not exist creates it (auto.create.topics.enable=true in
// both brokers' test settings), with num.partitions partitions.
func TestProducerAutoCreatesTopic(t *testing.T) {
	topic := uniqueName(t, "sarama-auto")
	adm := newAdmin(t)
	t.Cleanup(func() { _ = adm.DeleteTopic(topic) })
	p := syncProducer(t, nil)
	if _, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: topic, Value: sarama.StringEncoder("first")}); err != nil {
		t.Fatalf("SendMessage to a new topic: %v", err)
	}
	md, err := adm.DescribeTopics([]string{topic})
	if err != nil || len(md) != 1 || md[0].Err != sarama.ErrNoError || len(md[0].Partitions) != 1 {
		t.Fatalf("DescribeTopics of the auto-created topic: %v %+v", err, md)
	}
}

// Sarama's default protocol version (2.8, what a user who sets no Version gets) produces and
// consumes as well.
func TestDefaultVersionProduceConsume(t *testing.T) {
	topic := createTopic(t, 1, nil)
	cfg := sarama.NewConfig()
	cfg.Producer.Return.Successes = true
	p := syncProducer(t, cfg)
	for i := 0; i < 5; i++ {
		if _, off, err := p.SendMessage(&sarama.ProducerMessage{Topic: topic, Value: sarama.StringEncoder(fmt.Sprint(i))}); err != nil || off != int64(i) {
			t.Fatalf("SendMessage %d at version %s: offset %d, %v", i, cfg.Version, off, err)
		}
	}
	got := consume(t, sarama.NewConfig(), topic, 0, sarama.OffsetOldest, 5)
	if !equalStrings(values(got), []string{"0", "1", "2", "3", "4"}) {
		t.Fatalf("read %v", values(got))
	}
}
