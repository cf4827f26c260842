package sarama_compat

import (
	"fmt"
	"testing"
	"time"

	"github.com/IBM/sarama"
)

// A partition consumer from the oldest offset reads everything; from the newest only what is
// written after it started; from an offset what follows it; past the end OFFSET_OUT_OF_RANGE.
func TestPartitionConsumer(t *testing.T) {
	topic := createTopic(t, 1, nil)
	produceValues(t, topic, 0, seq("m", 0, 10)...)

	t.Run("oldest", func(t *testing.T) {
		got := consume(t, nil, topic, 0, sarama.OffsetOldest, 10)
		if !equalStrings(values(got), seq("m", 0, 10)) || got[0].Offset != 0 || got[9].Offset != 9 {
			t.Fatalf("read %v", values(got))
		}
	})
	t.Run("from-offset", func(t *testing.T) {
		got := consume(t, nil, topic, 0, 7, 3)
		if !equalStrings(values(got), seq("m", 7, 3)) || got[0].Offset != 7 {
			t.Fatalf("read %v", values(got))
		}
	})
	t.Run("newest", func(t *testing.T) {
		c, err := sarama.NewConsumer(brokers(t), newConfig())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		pc, err := c.ConsumePartition(topic, 0, sarama.OffsetNewest)
		if err != nil {
			t.Fatal(err)
		}
		defer pc.Close()
		noMoreMessages(t, pc, time.Second)
		produceValues(t, topic, 0, seq("m", 10, 5)...)
		got := readMessages(t, pc, 5)
		if !equalStrings(values(got), seq("m", 10, 5)) || got[0].Offset != 10 {
			t.Fatalf("read %v from offset %d", values(got), got[0].Offset)
		}
		if hwm := pc.HighWaterMarkOffset(); hwm != 15 {
			t.Fatalf("high watermark %d, want 15", hwm)
		}
	})
	t.Run("out-of-range", func(t *testing.T) {
		c, err := sarama.NewConsumer(brokers(t), newConfig())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		pc, err := c.ConsumePartition(topic, 0, 1000)
		if err == nil {
			pc.Close()
		}
		if !isErr(err, sarama.ErrOffsetOutOfRange) {
			t.Fatalf("ConsumePartition at 1000 of 15: want OFFSET_OUT_OF_RANGE, got %v", err)
		}
	})
}

// The client's offset lookups: oldest, newest, and by timestamp (ListOffsets with the
// messages' CreateTime); the admin client's ListOffsets agrees.
func TestOffsetsByTime(t *testing.T) {
	topic := createTopic(t, 1, nil)
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	cfg := newConfig()
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	p := syncProducer(t, cfg)
	for i := 0; i < 10; i++ {
		if _, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: topic, Value: sarama.StringEncoder("t"),
			Timestamp: base.Add(time.Duration(i) * time.Second)}); err != nil {
			t.Fatal(err)
		}
	}
	cl := newClient(t, nil)
	for _, c := range []struct {
		name string
		at   int64
		want int64
	}{
		{"oldest", sarama.OffsetOldest, 0},
		{"newest", sarama.OffsetNewest, 10},
		{"at-3.5s", base.Add(3500 * time.Millisecond).UnixMilli(), 4},
		{"at-first", base.UnixMilli(), 0},
		{"after-last", base.Add(time.Minute).UnixMilli(), -1},
	} {
		got, err := cl.GetOffset(topic, 0, c.at)
		if err != nil || got != c.want {
			t.Fatalf("GetOffset %s: %d, %v; want %d", c.name, got, err, c.want)
		}
	}
	got := consume(t, nil, topic, 0, 4, 1)
	if !got[0].Timestamp.Equal(base.Add(4 * time.Second)) {
		t.Fatalf("message 4 has timestamp %v, want %v", got[0].Timestamp, base.Add(4*time.Second))
	}
	adm := newAdmin(t)
	res, err := adm.ListOffsets(map[string]map[int32]int64{topic: {0: sarama.OffsetNewest}}, &sarama.ListOffsetsOptions{IsolationLevel: sarama.ReadCommitted})
	if err != nil || res[topic][0] == nil || res[topic][0].Offset != 10 {
		t.Fatalf("admin ListOffsets newest: %+v, %v", res, err)
	}
}

// Metadata as the client sees it: every broker, the controller, each partition's leader,
// replicas and in-sync replicas at the replication factor asked.
func TestMetadata(t *testing.T) {
	topic := createTopic(t, 3, nil)
	cl := newClient(t, nil)
	if got := len(cl.Brokers()); got != nodes() {
		t.Fatalf("%d brokers, want %d", got, nodes())
	}
	if _, err := cl.Controller(); err != nil {
		t.Fatalf("Controller: %v", err)
	}
	parts, err := cl.Partitions(topic)
	if err != nil || len(parts) != 3 {
		t.Fatalf("Partitions: %v %v", parts, err)
	}
	waitFor(t, "every replica in sync", func() error {
		if err := cl.RefreshMetadata(topic); err != nil {
			return err
		}
		for _, p := range parts {
			replicas, err := cl.Replicas(topic, p)
			if err != nil {
				return err
			}
			isr, err := cl.InSyncReplicas(topic, p)
			if err != nil {
				return err
			}
			if len(replicas) != int(rf()) || len(isr) != int(rf()) {
				return fmt.Errorf("partition %d: replicas %v, in sync %v, want %d each", p, replicas, isr, rf())
			}
		}
		return nil
	})
	topics, err := cl.Topics()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, tp := range topics {
		found = found || tp == topic
	}
	if !found {
		t.Fatalf("Topics() lacks %s", topic)
	}
}
