package valkeystore

import (
	"context"
	"strconv"

	"github.com/flowfabric/flowfabric/model"
)

// The repairing index reconciler (model.IndexRepairer;
// lua/index_repair.lua, whose derivation is lib/index.lua's
// expected_indexes) and its test hook (model.IndexTamperer;
// lua/index_tamper.lua). A lane's active index and a worker instance's
// lease index are the records themselves here (keys.go): they cannot
// drift, so there is nothing to repair or damage.

var (
	_ model.IndexRepairer = (*Store)(nil)
	_ model.IndexTamperer = (*Store)(nil)

	scriptIndexRepair = declare("index_repair")
	scriptIndexTamper = declare("index_tamper")
)

// repairKeys are the partition's keys index_repair.lua and
// index_tamper.lua name.
func (k keyspace) repairKeys(part int) map[string]string {
	return k.suspKeys(part)
}

// IndexRepair implements model.IndexRepairer.
func (s *Store) IndexRepair(ctx context.Context, p *model.IndexRepairParams) (*model.IndexRepairResult, error) {
	if err := p.Validate(s.cfg); err != nil {
		return nil, err
	}
	after := ""
	if !p.Cursor.IsZero() {
		after = "(" + p.Cursor.String()
	}
	r, err := s.run(ctx, scriptIndexRepair, s.keys.repairKeys(p.Partition),
		filterArgs(args{"after": after, "limit": p.Limit, "dry": p.DryRun}, p.Filter))
	if err != nil {
		return nil, err
	}
	res := &model.IndexRepairResult{Next: r.execID("next"), Examined: r.int("examined")}
	for _, row := range r.rows("repairs", 5) {
		id, perr := model.ParseExecutionID(row[0])
		act, aok := model.ParseRepairAction(row[2])
		score, serr := strconv.ParseInt(row[3], 10, 64)
		old, oerr := strconv.ParseInt(row[4], 10, 64)
		if perr != nil || !aok || serr != nil || oerr != nil {
			r.fail("repairs: malformed entry %q", row)
			break
		}
		res.Repairs = append(res.Repairs, model.IndexRepair{ExecutionID: id, Index: row[1], Action: act, Score: score, OldScore: old})
	}
	if err := r.err(); err != nil {
		return nil, err
	}
	model.SortRepairs(res.Repairs)
	return res, nil
}

// IndexTamper implements model.IndexTamperer, a test hook.
func (s *Store) IndexTamper(ctx context.Context, p *model.IndexTamperParams) error {
	if err := p.Validate(s.cfg); err != nil {
		return err
	}
	lane, name, ok := model.SplitGroupIndex(p.Index)
	if !ok {
		lane, name, ok = model.SplitLaneIndex(p.Index)
	}
	if !ok {
		name = p.Index
	}
	_, err := s.run(ctx, scriptIndexTamper, s.keys.repairKeys(p.ID.Partition()), args{
		"id": p.ID, "lane": lane, "name": name, "action": p.Action.String(), "score": p.Score,
	})
	return err
}
