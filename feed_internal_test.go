package flowfabric

import (
	"errors"
	"slices"
	"testing"

	"github.com/flowfabric/flowfabric/model"
)

// A subscriber re-reads the partitions its notices named, every one after
// a lost notice (-1), and every one at first.
func TestFeedWakeTodo(t *testing.T) {
	w := &feedWake{dirty: map[int]bool{}, all: true}
	w.sig = nil
	parts := []int{0, 1, 2, 3}
	if got := w.todo(parts); !slices.Equal(got, parts) {
		t.Fatalf("first look: %v", got)
	}
	if got := w.todo(parts); len(got) != 0 {
		t.Fatalf("nothing named: %v", got)
	}
	w.mu.Lock()
	w.dirty[2], w.dirty[7] = true, true
	w.mu.Unlock()
	if got := w.todo(parts); !slices.Equal(got, []int{2}) {
		t.Fatalf("partition 2 named (7 is not subscribed): %v", got)
	}
	w.mu.Lock()
	w.all = true
	w.mu.Unlock()
	if got := w.todo(parts); !slices.Equal(got, parts) {
		t.Fatalf("after a lost notice: %v", got)
	}
}

// A tail's watch hands out the frames notices brought that follow the
// cursor without a gap, at most the limit looked at, skipping best-effort
// frames when asked (the cursor still passes them), and nothing when the
// next frame did not come by notice.
func TestStreamWatchTake(t *testing.T) {
	w := &streamWatch{sig: nil}
	note := func(seq uint64, mode StreamMode) {
		w.mu.Lock()
		w.frames = append(w.frames, Frame{Sequence: seq, Mode: mode})
		w.mu.Unlock()
	}
	note(3, StreamDurable)
	if p := w.take(StreamReadOpts{After: 1, Limit: 10}); p != nil {
		t.Fatalf("a gap (frame 2 missing) must be read: %+v", p)
	}
	note(4, StreamBestEffort)
	note(5, StreamDurable)
	note(7, StreamDurable)
	p := w.take(StreamReadOpts{After: 2, Limit: 10, ExcludeBestEffort: true})
	if p == nil || len(p.Frames) != 2 || p.Frames[0].Sequence != 3 || p.Frames[1].Sequence != 5 || p.Next != 5 || p.LastSequence != 5 {
		t.Fatalf("frames 3..5 without the best-effort one: %+v", p)
	}
	if !w.has(7) || w.has(6) {
		t.Fatal("has")
	}
	if p := w.take(StreamReadOpts{After: 5, Limit: 10}); p != nil {
		t.Fatalf("frame 6 did not come by notice: %+v", p)
	}
	note(8, StreamDurable)
	note(9, StreamDurable)
	if p := w.take(StreamReadOpts{After: 6, Limit: 2}); p == nil || len(p.Frames) != 2 || p.Next != 8 {
		t.Fatalf("the limit: %+v", p)
	}
}

// A cursor's text form parses back to the same cursor; anything else is
// refused as invalid input naming the cursor, never a panic.
func FuzzParseFeedCursor(f *testing.F) {
	for _, s := range []string{"", "0:1", "0:1,3:7", "1:0", "x", "0:", ":1", "-1:2", "0:18446744073709551615"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseFeedCursor(s)
		if err != nil {
			var me *model.Error
			if !errors.As(err, &me) || me.Field != "cursor" {
				t.Fatalf("%q: %v", s, err)
			}
			return
		}
		back, err := ParseFeedCursor(c.String())
		if err != nil || back.String() != c.String() {
			t.Fatalf("%q: %q does not parse back (%q, %v)", s, c.String(), back.String(), err)
		}
	})
}

// A wake keeping events holds them per partition in arrival order; a
// notice without its event, one past maxNoticeEvents (all partitions
// together), or a lost notice asks for a read instead.
func TestFeedWakeEvents(t *testing.T) {
	w := &feedWake{dirty: map[int]bool{}, events: map[int][]FeedEvent{}, sig: model.NewSignal()}
	w.todo(nil) // the first look
	w.noticeEvent(1, &FeedEvent{Seq: 4})
	w.noticeEvent(1, &FeedEvent{Seq: 5})
	w.noticeEvent(3, &FeedEvent{Seq: 9})
	w.noticeEvent(2, nil)
	ps, evs := w.takeEvents([]int{0, 1, 2})
	if !slices.Equal(ps, []int{1}) || len(evs[1]) != 2 || evs[1][0].Seq != 4 || evs[1][1].Seq != 5 {
		t.Fatalf("events of partition 1 only (3 is not subscribed): %v %v", ps, evs)
	}
	if ps, _ := w.takeEvents([]int{0, 1, 2, 3}); len(ps) != 0 {
		t.Fatalf("taken events are forgotten: %v", ps)
	}
	if got := w.todo([]int{0, 1, 2}); !slices.Equal(got, []int{2}) {
		t.Fatalf("a notice without its event is read: %v", got)
	}
	for i := range maxNoticeEvents {
		w.noticeEvent(i%2, &FeedEvent{Seq: uint64(i/2 + 1)})
	}
	w.noticeEvent(3, &FeedEvent{Seq: 1})
	if got := w.todo([]int{0, 1, 3}); !slices.Equal(got, []int{3}) {
		t.Fatalf("past maxNoticeEvents (all partitions together) a partition is read: %v", got)
	}
	if ps, evs := w.takeEvents([]int{0, 1, 3}); !slices.Equal(ps, []int{0, 1}) || len(evs[0])+len(evs[1]) != maxNoticeEvents {
		t.Fatalf("the kept events: %v", ps)
	}
	w.noticeEvent(3, &FeedEvent{Seq: 2})
	if ps, _ := w.takeEvents([]int{3}); !slices.Equal(ps, []int{3}) {
		t.Fatalf("taking the events makes room: %v", ps)
	}
	w.noticeEvent(-1, nil)
	if got := w.todo([]int{0, 1}); !slices.Equal(got, []int{0, 1}) {
		t.Fatalf("a lost notice reads every partition: %v", got)
	}
}
