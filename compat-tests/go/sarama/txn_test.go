package sarama_compat

import (
	"fmt"
	"testing"
	"time"

	"github.com/IBM/sarama"
)

func txnConfig(t *testing.T) *sarama.Config {
	cfg := newConfig()
	cfg.Producer.Idempotent = true
	cfg.Producer.Transaction.ID = uniqueName(t, "txn")
	cfg.Net.MaxOpenRequests = 1
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	return cfg
}

func sendAll(t *testing.T, p sarama.SyncProducer, topic string, vals []string) {
	t.Helper()
	var msgs []*sarama.ProducerMessage
	for _, v := range vals {
		msgs = append(msgs, &sarama.ProducerMessage{Topic: topic, Partition: 0, Value: sarama.StringEncoder(v)})
	}
	if err := p.SendMessages(msgs); err != nil {
		t.Fatalf("SendMessages: %v", err)
	}
}

// readAll reads a partition from the oldest offset until `want` messages came, then checks
// that nothing more comes for a moment.
func readAll(t *testing.T, cfg *sarama.Config, topic string, want int) []*sarama.ConsumerMessage {
	t.Helper()
	c, err := sarama.NewConsumer(brokers(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	pc, err := c.ConsumePartition(topic, 0, sarama.OffsetOldest)
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	got := readMessages(t, pc, want)
	noMoreMessages(t, pc, 2*time.Second)
	return got
}

// A transactional producer commits, aborts and commits again: read_committed reads only the
// committed messages, read_uncommitted every message; the partition's end counts the
// transaction markers too.
func TestTransactionalProducer(t *testing.T) {
	topic := createTopic(t, 1, nil)
	p := syncProducer(t, txnConfig(t))
	if !p.IsTransactional() {
		t.Fatal("the producer is not transactional")
	}
	steps := []struct {
		vals   []string
		commit bool
	}{{seq("c", 0, 10), true}, {seq("a", 0, 10), false}, {seq("c", 10, 5), true}}
	for _, s := range steps {
		if err := p.BeginTxn(); err != nil {
			t.Fatalf("BeginTxn: %v", err)
		}
		sendAll(t, p, topic, s.vals)
		var err error
		if s.commit {
			err = p.CommitTxn()
		} else {
			err = p.AbortTxn()
		}
		if err != nil {
			t.Fatalf("end of transaction (commit %v): %v", s.commit, err)
		}
	}
	if st := p.TxnStatus(); st&sarama.ProducerTxnFlagReady == 0 {
		t.Fatalf("transaction status after the last commit: %v", st)
	}

	committed := newConfig()
	committed.Consumer.IsolationLevel = sarama.ReadCommitted
	got := readAll(t, committed, topic, 15)
	if want := append(seq("c", 0, 10), seq("c", 10, 5)...); !equalStrings(values(got), want) {
		t.Fatalf("read_committed read %v", values(got))
	}
	got = readAll(t, newConfig(), topic, 25)
	if want := append(append(seq("c", 0, 10), seq("a", 0, 10)...), seq("c", 10, 5)...); !equalStrings(values(got), want) {
		t.Fatalf("read_uncommitted read %v", values(got))
	}
	cl := newClient(t, nil)
	if end, err := cl.GetOffset(topic, 0, sarama.OffsetNewest); err != nil || end != 28 {
		t.Fatalf("end offset %d (%v), want 25 messages and 3 markers = 28", end, err)
	}
}

// Consume-transform-produce: a group's input offsets are committed in the transaction that
// writes the output (AddMessageToTxn); an aborted transaction commits neither.
func TestTransactionalConsumeTransformProduce(t *testing.T) {
	in := createTopic(t, 1, nil)
	out := createTopic(t, 1, nil)
	group := uniqueName(t, "ctp")
	produceValues(t, in, 0, seq("in", 0, 10)...)
	input := consume(t, nil, in, 0, sarama.OffsetOldest, 10)
	p := syncProducer(t, txnConfig(t))
	adm := newAdmin(t)
	t.Cleanup(func() { _ = adm.DeleteConsumerGroup(group) })

	transform := func(msgs []*sarama.ConsumerMessage, commit bool) {
		if err := p.BeginTxn(); err != nil {
			t.Fatalf("BeginTxn: %v", err)
		}
		for _, m := range msgs {
			if _, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: out, Partition: 0, Value: sarama.StringEncoder("out-" + string(m.Value))}); err != nil {
				t.Fatalf("SendMessage: %v", err)
			}
			if err := p.AddMessageToTxn(m, group, nil); err != nil {
				t.Fatalf("AddMessageToTxn: %v", err)
			}
		}
		var err error
		if commit {
			err = p.CommitTxn()
		} else {
			err = p.AbortTxn()
		}
		if err != nil {
			t.Fatalf("end of transaction (commit %v): %v", commit, err)
		}
	}
	// Kafka's transaction coordinator answers EndTxn once the commit is decided and writes the
	// markers to the group coordinator afterwards: the offsets become visible soon after.
	committedOffset := func(what string, want int64) {
		t.Helper()
		waitFor(t, what, func() error {
			resp, err := adm.ListConsumerGroupOffsets(group, map[string][]int32{in: {0}})
			if err != nil {
				return err
			}
			if b := resp.GetBlock(in, 0); b == nil || b.Offset != want {
				return fmt.Errorf("group offset %+v, want %d", b, want)
			}
			return nil
		})
	}

	transform(input[:4], true)
	committedOffset("the group offset after the first commit", 4)
	transform(input[4:], false)
	committedOffset("the group offset after an abort", 4)
	transform(input[4:], true)
	committedOffset("the group offset after the second commit", 10)
	committed := newConfig()
	committed.Consumer.IsolationLevel = sarama.ReadCommitted
	got := readAll(t, committed, out, 10)
	for i, m := range got {
		if string(m.Value) != fmt.Sprintf("out-in-%d", i) {
			t.Fatalf("output %d read_committed: %q", i, m.Value)
		}
	}
}
