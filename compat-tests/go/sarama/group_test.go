package sarama_compat

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
)

// recorder is a ConsumerGroupHandler that marks every message it reads and remembers which
// partitions each member holds and which (partition, offset) pairs were read.
type recorder struct {
	mu     sync.Mutex
	claims map[string][]int32 // member name -> partitions it reads now
	seen   map[string]int     // "partition/offset" -> times read
	first  map[int32]int64    // partition -> first offset read
	gens   map[string]int32   // member name -> generation of its last session
}

func newRecorder() *recorder {
	return &recorder{claims: map[string][]int32{}, seen: map[string]int{}, first: map[int32]int64{}, gens: map[string]int32{}}
}

type member struct {
	*recorder
	name string
}

func (m member) Setup(s sarama.ConsumerGroupSession) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.gens[m.name] = s.GenerationID()
	return nil
}

func (m member) Cleanup(sarama.ConsumerGroupSession) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.claims, m.name)
	return nil
}

// hold and release keep claims[member] as the partitions whose ConsumeClaim runs: with the
// cooperative protocol Sarama adds and revokes claims without a new Setup.
func (m member) hold(p int32) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.claims[m.name] = append(m.claims[m.name], p)
	sort.Slice(m.claims[m.name], func(i, j int) bool { return m.claims[m.name][i] < m.claims[m.name][j] })
}

func (m member) release(p int32) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var kept []int32
	for _, q := range m.claims[m.name] {
		if q != p {
			kept = append(kept, q)
		}
	}
	m.claims[m.name] = kept
}

func (m member) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	m.hold(c.Partition())
	defer m.release(c.Partition())
	for {
		select {
		case msg, ok := <-c.Messages():
			if !ok {
				return nil
			}
			m.mu.Lock()
			m.seen[fmt.Sprintf("%d/%d", msg.Partition, msg.Offset)]++
			if _, ok := m.first[msg.Partition]; !ok {
				m.first[msg.Partition] = msg.Offset
			}
			m.mu.Unlock()
			s.MarkMessage(msg, "")
		case <-s.Context().Done():
			return nil
		}
	}
}

// waitRead waits until `n` distinct messages were read.
func waitRead(t *testing.T, r *recorder, n int, what string) {
	t.Helper()
	waitFor(t, what, func() error {
		if got := r.distinct(); got < n {
			return fmt.Errorf("%d read", got)
		}
		return nil
	})
}

func (r *recorder) distinct() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.seen)
}

// startMember runs a group member until stop() is called; stop closes it (LeaveGroup and a
// final commit) and returns the first error of Consume other than its closing.
func startMember(t *testing.T, cfg *sarama.Config, group, topic string, h sarama.ConsumerGroupHandler) (stop func()) {
	t.Helper()
	cg, err := sarama.NewConsumerGroup(brokers(t), group, cfg)
	if err != nil {
		t.Fatalf("NewConsumerGroup: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	var errs []error
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			if err := cg.Consume(ctx, []string{topic}, h); err != nil && ctx.Err() == nil {
				errs = append(errs, err)
				time.Sleep(200 * time.Millisecond)
			}
		}
	}()
	go func() {
		for err := range cg.Errors() {
			t.Logf("consumer group %s: %v", group, err)
		}
	}()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		<-done
		if err := cg.Close(); err != nil {
			t.Errorf("ConsumerGroup.Close: %v", err)
		}
		for _, err := range errs {
			t.Logf("Consume returned: %v", err)
		}
	}
	t.Cleanup(stop)
	return stop
}

func groupConfig(strategy sarama.BalanceStrategy) *sarama.Config {
	cfg := newConfig()
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Offsets.AutoCommit.Interval = 200 * time.Millisecond
	cfg.Consumer.Group.Rebalance.GroupStrategies = []sarama.BalanceStrategy{strategy}
	cfg.Consumer.Group.Session.Timeout = 10 * time.Second
	cfg.Consumer.Group.Heartbeat.Interval = time.Second
	return cfg
}

// Two members of one group, per assignor (eager range, roundrobin, sticky and the
// incremental cooperative-sticky): the first takes every partition; when the second joins
// the partitions are split between them, disjoint and complete; every message is read, and
// the committed offsets are the ends of the partitions. The group is then listed, described,
// and deleted through the admin client (not while it has members: NON_EMPTY_GROUP).
func TestConsumerGroup(t *testing.T) {
	for _, strategy := range []sarama.BalanceStrategy{
		sarama.NewBalanceStrategyRange(), sarama.NewBalanceStrategyRoundRobin(),
		sarama.NewBalanceStrategySticky(), sarama.NewBalanceStrategyCooperativeSticky(),
	} {
		t.Run(strategy.Name(), func(t *testing.T) {
			const parts = 4
			topic := createTopic(t, parts, nil)
			group := uniqueName(t, "group")
			for p := int32(0); p < parts; p++ {
				produceValues(t, topic, p, seq(fmt.Sprintf("p%d", p), 0, 10)...)
			}
			rec := newRecorder()
			stopA := startMember(t, groupConfig(strategy), group, topic, member{rec, "a"})
			waitRead(t, rec, 4*10, "member a reads the first 40 messages")
			rec.mu.Lock()
			if got := len(rec.claims["a"]); got != parts {
				t.Errorf("member a alone holds %v", rec.claims["a"])
			}
			rec.mu.Unlock()

			adm := newAdmin(t)
			stopB := startMember(t, groupConfig(strategy), group, topic, member{rec, "b"})
			waitFor(t, "both members hold partitions", func() error {
				rec.mu.Lock()
				defer rec.mu.Unlock()
				a, b := rec.claims["a"], rec.claims["b"]
				if len(a) == 0 || len(b) == 0 || len(a)+len(b) != parts {
					return fmt.Errorf("a holds %v, b holds %v", a, b)
				}
				held := map[int32]bool{}
				for _, p := range append(append([]int32{}, a...), b...) {
					if held[p] {
						return fmt.Errorf("partition %d held twice: a %v, b %v", p, a, b)
					}
					held[p] = true
				}
				return nil
			})
			desc, err := adm.DescribeConsumerGroups([]string{group})
			if err != nil || len(desc) != 1 || desc[0].State != "Stable" || len(desc[0].Members) != 2 || desc[0].ProtocolType != "consumer" {
				t.Errorf("DescribeConsumerGroups while both run: %v %+v", err, desc)
			}
			if err := adm.DeleteConsumerGroup(group); !isErr(err, sarama.ErrNonEmptyGroup) {
				t.Errorf("DeleteConsumerGroup with members: want NON_EMPTY_GROUP, got %v", err)
			}
			for p := int32(0); p < parts; p++ {
				produceValues(t, topic, p, seq(fmt.Sprintf("p%d", p), 10, 10)...)
			}
			waitRead(t, rec, 80, "all 80 messages read")
			stopB()
			stopA()
			waitFor(t, "the committed offsets reach the partitions' ends", func() error {
				resp, err := adm.ListConsumerGroupOffsets(group, map[string][]int32{topic: {0, 1, 2, 3}})
				if err != nil {
					return err
				}
				for p := int32(0); p < parts; p++ {
					b := resp.GetBlock(topic, p)
					if b == nil || b.Err != sarama.ErrNoError || b.Offset != 20 {
						return fmt.Errorf("partition %d: %+v", p, b)
					}
				}
				return nil
			})
			groups, err := adm.ListConsumerGroups()
			if err != nil || groups[group] != "consumer" {
				t.Errorf("ListConsumerGroups: %v, %q for the group", err, groups[group])
			}
			desc, err = adm.DescribeConsumerGroups([]string{group})
			if err != nil || len(desc) != 1 || desc[0].State != "Empty" || len(desc[0].Members) != 0 {
				t.Errorf("DescribeConsumerGroups after both left: %v %+v", err, desc)
			}
			if err := adm.DeleteConsumerGroup(group); err != nil {
				t.Errorf("DeleteConsumerGroup: %v", err)
			}
			if groups, err := adm.ListConsumerGroups(); err != nil || groups[group] != "" {
				t.Errorf("the group is still listed after its deletion: %v", err)
			}
		})
	}
}

// A member that read and committed the first half leaves; a new member of the same group
// resumes at the committed offset (not at Offsets.Initial), and a new group with
// Offsets.Initial=OffsetNewest reads only what is written after it joined.
func TestConsumerGroupResume(t *testing.T) {
	topic := createTopic(t, 1, nil)
	group := uniqueName(t, "group")
	produceValues(t, topic, 0, seq("r", 0, 10)...)
	rec := newRecorder()
	stop := startMember(t, groupConfig(sarama.NewBalanceStrategyRange()), group, topic, member{rec, "a"})
	waitRead(t, rec, 10, "10 read")
	stop()
	produceValues(t, topic, 0, seq("r", 10, 10)...)

	again := newRecorder()
	stop = startMember(t, groupConfig(sarama.NewBalanceStrategyRange()), group, topic, member{again, "a2"})
	waitRead(t, again, 10, "the second member reads 10")
	stop()
	if again.first[0] != 10 || again.distinct() != 10 {
		t.Fatalf("the second member started at offset %d and read %d messages; want 10 and 10", again.first[0], again.distinct())
	}

	cfg := groupConfig(sarama.NewBalanceStrategyRange())
	cfg.Consumer.Offsets.Initial = sarama.OffsetNewest
	fresh := newRecorder()
	stop = startMember(t, cfg, uniqueName(t, "newest"), topic, member{fresh, "n"})
	waitFor(t, "the new group's member holds the partition", func() error {
		fresh.mu.Lock()
		defer fresh.mu.Unlock()
		if len(fresh.claims["n"]) != 1 {
			return fmt.Errorf("holds %v", fresh.claims["n"])
		}
		return nil
	})
	// ConsumeClaim runs once Sarama's partition consumer has resolved OffsetNewest (ListOffsets).
	produceValues(t, topic, 0, "after")
	waitRead(t, fresh, 1, "the new group reads the new message")
	stop()
	if fresh.first[0] != 20 || fresh.distinct() != 1 {
		t.Fatalf("a group with OffsetNewest began at %d and read %d", fresh.first[0], fresh.distinct())
	}
}

// holdings waits until members `a` and `b` between them hold all `parts` partitions, each
// some, none twice; returns what each holds.
func holdings(t *testing.T, rec *recorder, a, b string, parts int) (pa, pb []int32) {
	t.Helper()
	waitFor(t, a+" and "+b+" hold every partition", func() error {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		pa, pb = append([]int32{}, rec.claims[a]...), append([]int32{}, rec.claims[b]...)
		held := map[int32]bool{}
		for _, p := range append(append([]int32{}, pa...), pb...) {
			if held[p] {
				return fmt.Errorf("partition %d held twice: %s %v, %s %v", p, a, pa, b, pb)
			}
			held[p] = true
		}
		if len(pa) == 0 || len(pb) == 0 || len(held) != parts {
			return fmt.Errorf("%s holds %v, %s holds %v", a, pa, b, pb)
		}
		return nil
	})
	return pa, pb
}

// Static membership (KIP-345, Consumer.Group.InstanceId): a static member that closes does not
// leave; started again with its instance id it gets its partitions back in the same
// generation, without a rebalance. The admin client removes the static members by instance id
// (KIP-345's LeaveGroup v3+); an unknown instance id is UNKNOWN_MEMBER_ID.
func TestConsumerGroupStaticMembers(t *testing.T) {
	const parts = 4
	topic := createTopic(t, parts, nil)
	group := uniqueName(t, "static")
	static := func(id string) *sarama.Config {
		cfg := groupConfig(sarama.NewBalanceStrategyRange())
		cfg.Consumer.Group.InstanceId = id
		cfg.Consumer.Group.Session.Timeout = 45 * time.Second
		cfg.Consumer.Group.Heartbeat.Interval = 3 * time.Second
		return cfg
	}
	rec := newRecorder()
	stopA := startMember(t, static("instance-a"), group, topic, member{rec, "a"})
	stopB := startMember(t, static("instance-b"), group, topic, member{rec, "b"})
	_, heldB := holdings(t, rec, "a", "b", parts)
	rec.mu.Lock()
	gen := rec.gens["a"]
	rec.mu.Unlock()
	adm := newAdmin(t)
	desc, err := adm.DescribeConsumerGroups([]string{group})
	if err != nil || len(desc) != 1 || len(desc[0].Members) != 2 {
		t.Fatalf("DescribeConsumerGroups: %v %+v", err, desc)
	}
	instances := map[string]bool{}
	for _, m := range desc[0].Members {
		if m.GroupInstanceId != nil {
			instances[*m.GroupInstanceId] = true
		}
	}
	if !instances["instance-a"] || !instances["instance-b"] {
		t.Fatalf("the members' instance ids: %v", instances)
	}

	stopB()
	rec.mu.Lock()
	rec.gens["b"] = -1
	rec.mu.Unlock()
	stopB = startMember(t, static("instance-b"), group, topic, member{rec, "b"})
	_, again := holdings(t, rec, "a", "b", parts)
	rec.mu.Lock()
	genA, genB := rec.gens["a"], rec.gens["b"]
	rec.mu.Unlock()
	if !equalInt32s(again, heldB) || genA != gen || genB != gen {
		t.Fatalf("instance-b came back with %v (held %v), generations a %d b %d (was %d): a rebalance", again, heldB, genA, genB, gen)
	}
	stopB()
	stopA()
	resp, err := adm.RemoveMemberFromConsumerGroup(group, []string{"instance-a", "instance-b", "instance-none"})
	if err != nil || resp == nil {
		t.Fatalf("RemoveMemberFromConsumerGroup: %v", err)
	}
	byInstance := map[string]sarama.KError{}
	for _, m := range resp.Members {
		if m.GroupInstanceId != nil {
			byInstance[*m.GroupInstanceId] = m.Err
		}
	}
	if byInstance["instance-a"] != sarama.ErrNoError || byInstance["instance-b"] != sarama.ErrNoError ||
		byInstance["instance-none"] != sarama.ErrUnknownMemberId {
		t.Fatalf("RemoveMemberFromConsumerGroup answers: %v", byInstance)
	}
	desc, err = adm.DescribeConsumerGroups([]string{group})
	if err != nil || len(desc) != 1 || len(desc[0].Members) != 0 || desc[0].State != "Empty" {
		t.Fatalf("after removing the static members: %v %+v", err, desc)
	}
}

func equalInt32s(a, b []int32) bool {
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
