package sarama_compat

import (
	"testing"

	"github.com/IBM/sarama"
)

// The offset manager commits marked and reset offsets with their metadata; another manager of
// the same group reads them back; the admin client lists, alters and deletes them.
func TestOffsetManager(t *testing.T) {
	topic := createTopic(t, 2, nil)
	produceValues(t, topic, 0, seq("o", 0, 10)...)
	group := uniqueName(t, "offsets")
	adm := newAdmin(t)
	t.Cleanup(func() { _ = adm.DeleteConsumerGroup(group) })

	manage := func() (sarama.OffsetManager, sarama.PartitionOffsetManager) {
		cfg := newConfig()
		cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
		cl := newClient(t, cfg)
		om, err := sarama.NewOffsetManagerFromClient(group, cl)
		if err != nil {
			t.Fatalf("NewOffsetManagerFromClient: %v", err)
		}
		pom, err := om.ManagePartition(topic, 0)
		if err != nil {
			t.Fatalf("ManagePartition: %v", err)
		}
		return om, pom
	}
	committed := func(partition int32) *sarama.OffsetFetchResponseBlock {
		resp, err := adm.ListConsumerGroupOffsets(group, map[string][]int32{topic: {partition}})
		if err != nil {
			t.Fatalf("ListConsumerGroupOffsets: %v", err)
		}
		return resp.GetBlock(topic, partition)
	}

	om, pom := manage()
	if off, _ := pom.NextOffset(); off != sarama.OffsetOldest {
		t.Fatalf("a new group's NextOffset is %d, want OffsetOldest (-2)", off)
	}
	pom.MarkOffset(5, "five")
	om.Commit()
	if b := committed(0); b == nil || b.Offset != 5 || b.Metadata != "five" {
		t.Fatalf("committed after MarkOffset(5): %+v", b)
	}
	pom.ResetOffset(3, "three")
	om.Commit()
	if b := committed(0); b == nil || b.Offset != 3 || b.Metadata != "three" {
		t.Fatalf("committed after ResetOffset(3): %+v", b)
	}
	_ = pom.Close()
	_ = om.Close()

	om, pom = manage()
	if off, meta := pom.NextOffset(); off != 3 || meta != "three" {
		t.Fatalf("another manager's NextOffset: %d %q, want 3 \"three\"", off, meta)
	}
	_ = pom.Close()
	_ = om.Close()

	if b := committed(1); b == nil || b.Offset != -1 {
		t.Fatalf("partition 1 was never committed, listed as %+v", b)
	}
	resp, err := adm.AlterConsumerGroupOffsets(group, map[string]map[int32]sarama.OffsetAndMetadata{
		topic: {0: {Offset: 7, Metadata: "seven"}, 1: {Offset: 0}}}, nil)
	if err != nil || resp.Errors[topic][0] != sarama.ErrNoError {
		t.Fatalf("AlterConsumerGroupOffsets: %v %+v", err, resp)
	}
	if b := committed(0); b == nil || b.Offset != 7 || b.Metadata != "seven" {
		t.Fatalf("committed after AlterConsumerGroupOffsets: %+v", b)
	}
	if err := adm.DeleteConsumerGroupOffset(group, topic, 0); err != nil {
		t.Fatalf("DeleteConsumerGroupOffset: %v", err)
	}
	if b := committed(0); b == nil || b.Offset != -1 {
		t.Fatalf("partition 0 after DeleteConsumerGroupOffset: %+v", b)
	}
	if b := committed(1); b == nil || b.Offset != 0 {
		t.Fatalf("partition 1 after deleting partition 0's offset: %+v", b)
	}
	if err := adm.DeleteConsumerGroup(group); err != nil {
		t.Fatalf("DeleteConsumerGroup: %v", err)
	}
	if err := adm.DeleteConsumerGroup(group); !isErr(err, sarama.ErrGroupIDNotFound) {
		t.Fatalf("DeleteConsumerGroup of a deleted group: want GROUP_ID_NOT_FOUND, got %v", err)
	}
}
