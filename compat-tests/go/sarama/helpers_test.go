// Checks of Sarama (github.com/IBM/sarama, pinned in go.mod) against a Kafka-compatible
// broker: producers, consumers, consumer groups, offsets, the admin client and transactions,
// each a Go test run by scripts/compat/sarama.sh (run_sarama.py) against Samsa or the
// reference Kafka.
//
// The broker comes from the environment: SARAMA_BROKERS (host:port,...), SARAMA_RF (the
// replication factor of the topics the tests create), SARAMA_NODES (how many brokers the
// cluster has), SARAMA_AUTHORIZER=1 when the brokers run an authorizer (the ACL check).
package sarama_compat

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
)

// How long a check waits for something the broker should bring about (a message, a
// rebalance, metadata): a bound against hanging, not an assertion on speed.
const patience = 90 * time.Second

func brokers(t testing.TB) []string {
	s := os.Getenv("SARAMA_BROKERS")
	if s == "" {
		t.Fatal("SARAMA_BROKERS is not set (scripts/compat/sarama.sh sets it)")
	}
	return strings.Split(s, ",")
}

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

func rf() int16        { return int16(envInt("SARAMA_RF", 1)) }
func nodes() int       { return envInt("SARAMA_NODES", 1) }
func authorizer() bool { return os.Getenv("SARAMA_AUTHORIZER") == "1" }

// newConfig is the configuration a user of a Kafka 4 cluster writes: the newest protocol
// version Sarama knows (Kafka 4.4 is newer than Sarama's table), successes and errors returned.
func newConfig() *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.Version = sarama.MaxVersion
	cfg.ClientID = "samsa-compat-sarama"
	cfg.Producer.Return.Successes = true
	cfg.Producer.Return.Errors = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Consumer.Return.Errors = true
	cfg.Metadata.Retry.Max = 20
	cfg.Metadata.Retry.Backoff = 250 * time.Millisecond
	cfg.Producer.Retry.Max = 20
	cfg.Producer.Retry.Backoff = 250 * time.Millisecond
	cfg.Net.ReadTimeout = 60 * time.Second
	return cfg
}

func uniqueName(t testing.TB, prefix string) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	name := strings.NewReplacer("/", "-", "_", "-").Replace(t.Name())
	if len(name) > 60 {
		name = name[:60]
	}
	return fmt.Sprintf("%s-%s-%s", prefix, strings.ToLower(name), hex.EncodeToString(b))
}

func newAdmin(t testing.TB) sarama.ClusterAdmin {
	t.Helper()
	adm, err := sarama.NewClusterAdmin(brokers(t), newConfig())
	if err != nil {
		t.Fatalf("NewClusterAdmin: %v", err)
	}
	t.Cleanup(func() { _ = adm.Close() })
	return adm
}

func newClient(t testing.TB, cfg *sarama.Config) sarama.Client {
	t.Helper()
	if cfg == nil {
		cfg = newConfig()
	}
	cl, err := sarama.NewClient(brokers(t), cfg)
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	t.Cleanup(func() { _ = cl.Close() })
	return cl
}

// waitFor retries cond until it returns nil, for at most `patience`.
func waitFor(t testing.TB, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still not so after %v: %v", what, patience, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// createTopic creates a topic with `partitions` partitions at the suite's replication factor
// and waits until a client's metadata has a leader for each; it is deleted at the end.
func createTopic(t testing.TB, partitions int32, configs map[string]*string) string {
	t.Helper()
	topic := uniqueName(t, "sarama")
	adm := newAdmin(t)
	err := adm.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: partitions, ReplicationFactor: rf(), ConfigEntries: configs}, false)
	if err != nil {
		t.Fatalf("CreateTopic %s: %v", topic, err)
	}
	t.Cleanup(func() { _ = adm.DeleteTopic(topic) })
	cl := newClient(t, nil)
	waitFor(t, "leaders of "+topic, func() error {
		if err := cl.RefreshMetadata(topic); err != nil {
			return err
		}
		for p := int32(0); p < partitions; p++ {
			if _, err := cl.Leader(topic, p); err != nil {
				return fmt.Errorf("partition %d: %w", p, err)
			}
		}
		return nil
	})
	return topic
}

func syncProducer(t testing.TB, cfg *sarama.Config) sarama.SyncProducer {
	t.Helper()
	if cfg == nil {
		cfg = newConfig()
	}
	p, err := sarama.NewSyncProducer(brokers(t), cfg)
	if err != nil {
		t.Fatalf("NewSyncProducer: %v", err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// produceValues writes one message per value to partition `partition` and returns their offsets.
func produceValues(t testing.TB, topic string, partition int32, values ...string) []int64 {
	t.Helper()
	cfg := newConfig()
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	p := syncProducer(t, cfg)
	var offsets []int64
	for _, v := range values {
		_, off, err := p.SendMessage(&sarama.ProducerMessage{Topic: topic, Partition: partition, Value: sarama.StringEncoder(v)})
		if err != nil {
			t.Fatalf("SendMessage %q: %v", v, err)
		}
		offsets = append(offsets, off)
	}
	return offsets
}

func seq(prefix string, from, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%d", prefix, from+i)
	}
	return out
}

// consume reads `n` messages of one partition from `offset` with a partition consumer.
func consume(t testing.TB, cfg *sarama.Config, topic string, partition int32, offset int64, n int) []*sarama.ConsumerMessage {
	t.Helper()
	if cfg == nil {
		cfg = newConfig()
	}
	c, err := sarama.NewConsumer(brokers(t), cfg)
	if err != nil {
		t.Fatalf("NewConsumer: %v", err)
	}
	defer c.Close()
	pc, err := c.ConsumePartition(topic, partition, offset)
	if err != nil {
		t.Fatalf("ConsumePartition %s/%d at %d: %v", topic, partition, offset, err)
	}
	defer pc.Close()
	return readMessages(t, pc, n)
}

func readMessages(t testing.TB, pc sarama.PartitionConsumer, n int) []*sarama.ConsumerMessage {
	t.Helper()
	var out []*sarama.ConsumerMessage
	timer := time.NewTimer(patience)
	defer timer.Stop()
	for len(out) < n {
		select {
		case m := <-pc.Messages():
			out = append(out, m)
		case err := <-pc.Errors():
			t.Fatalf("partition consumer: %v", err)
		case <-timer.C:
			t.Fatalf("read %d of %d messages within %v", len(out), n, patience)
		}
	}
	return out
}

// noMoreMessages checks that a partition consumer delivers nothing within a short while.
func noMoreMessages(t testing.TB, pc sarama.PartitionConsumer, wait time.Duration) {
	t.Helper()
	select {
	case m := <-pc.Messages():
		t.Fatalf("unexpected message at offset %d: %q", m.Offset, m.Value)
	case <-time.After(wait):
	}
}

func values(msgs []*sarama.ConsumerMessage) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = string(m.Value)
	}
	return out
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func isErr(err error, kerr sarama.KError) bool {
	return errors.Is(err, kerr)
}

func ctxWithPatience(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	t.Cleanup(cancel)
	return ctx
}
