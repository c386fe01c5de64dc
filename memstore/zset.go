package memstore

import (
	"bytes"

	"github.com/tidwall/btree"

	"github.com/flowfabric/flowfabric/model"
)

// zitem is one sorted-set entry. Members of one set always share a
// partition, so ordering equal scores by UUID bytes is the byte order of the
// members' text form, the order a Valkey sorted set uses.
type zitem struct {
	score int64
	id    model.ExecutionID
}

func zless(a, b zitem) bool {
	if a.score != b.score {
		return a.score < b.score
	}
	ua, ub := a.id.UUID(), b.id.UUID()
	return bytes.Compare(ua[:], ub[:]) < 0
}

// zset is a sorted set of executions, like a Valkey ZSET.
type zset struct {
	tree   *btree.BTreeG[zitem]
	scores map[model.ExecutionID]int64
	peak   int // the most entries scores held since it was last made
}

func newZset() *zset {
	return &zset{
		tree:   btree.NewBTreeGOptions(zless, btree.Options{NoLocks: true, Degree: 32}),
		scores: make(map[model.ExecutionID]int64),
	}
}

func (z *zset) add(id model.ExecutionID, score int64) {
	if old, ok := z.scores[id]; ok {
		if old == score {
			return
		}
		z.tree.Delete(zitem{old, id})
	}
	z.scores[id] = score
	z.peak = max(z.peak, len(z.scores))
	z.tree.Set(zitem{score, id})
}

func (z *zset) remove(id model.ExecutionID) bool {
	old, ok := z.scores[id]
	if !ok {
		return false
	}
	delete(z.scores, id)
	z.scores = shrink(z.scores, &z.peak)
	z.tree.Delete(zitem{old, id})
	return true
}

// shrink returns m, or a fresh copy of it once it holds under a quarter of
// the peak entries it held (at least minShrink) or nothing: a Go map keeps the room
// of its peak size after deletes, so a store that deleted most of its
// executions would not give their memory back.
func shrink[K comparable, V any](m map[K]V, peak *int) map[K]V {
	if len(m) == 0 && *peak > 0 {
		*peak = 0
		return make(map[K]V)
	}
	if *peak < minShrink || len(m)*4 >= *peak {
		return m
	}
	c := make(map[K]V, len(m))
	for k, v := range m {
		c[k] = v
	}
	*peak = len(c)
	return c
}

// minShrink is the smallest peak shrink rebuilds a map after.
const minShrink = 64

func (z *zset) has(id model.ExecutionID) bool {
	_, ok := z.scores[id]
	return ok
}

func (z *zset) len() int { return len(z.scores) }

// ascend visits entries from the first one not less than pivot.
func (z *zset) ascend(pivot zitem, f func(zitem) bool) { z.tree.Ascend(pivot, f) }

// scan visits every entry in order.
func (z *zset) scan(f func(zitem) bool) { z.tree.Scan(f) }

// idset is an ordered set of executions of one partition.
type idset struct {
	tree *btree.BTreeG[model.ExecutionID]
}

func idless(a, b model.ExecutionID) bool {
	ua, ub := a.UUID(), b.UUID()
	return bytes.Compare(ua[:], ub[:]) < 0
}

func newIDSet() *idset {
	return &idset{tree: btree.NewBTreeGOptions(idless, btree.Options{NoLocks: true, Degree: 32})}
}

func (s *idset) add(id model.ExecutionID) { s.tree.Set(id) }

func (s *idset) remove(id model.ExecutionID) { s.tree.Delete(id) }

func (s *idset) has(id model.ExecutionID) bool {
	_, ok := s.tree.Get(id)
	return ok
}

func (s *idset) len() int { return s.tree.Len() }

// each visits every id in order.
func (s *idset) each(f func(model.ExecutionID)) {
	s.tree.Scan(func(id model.ExecutionID) bool { f(id); return true })
}
