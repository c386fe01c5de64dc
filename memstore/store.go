package memstore

import (
	"sync"

	"github.com/tidwall/btree"

	"github.com/flowfabric/flowfabric/model"
)

// Options configures a Store. The zero value means the defaults.
type Options struct {
	// Partitions sets the partition counts (zero: the defaults).
	Partitions model.PartitionConfig
	// Feeds says which event feeds the store keeps (model.FeedStore;
	// none by default).
	Feeds model.Feeds
}

// Store is the in-memory model.Store. Create it with New.
type Store struct {
	mu    sync.Mutex
	cfg   model.PartitionConfig
	feeds model.Feeds
	parts []*partition
	execs map[model.ExecutionID]*execution
	// execPeak is the most executions execs held since it was made
	// (shrink).
	execPeak int
	// retentions are the distinct retentions executions were created
	// with, shared by their records (internRetention).
	retentions map[model.Retention]*model.Retention
	idem       map[idemKey]idemEntry
	idemGC     *idemQueue
	workers    map[model.Namespace]map[model.WorkerInstanceID]*workerRec
	// paused holds the paused lanes (lane_ops.go).
	paused map[model.LaneID]*lanePause

	// flows, flowIdx and flowOf are the flows (flow.go): the records, the
	// flows of each partition, and each member's flow.
	flows   map[model.FlowID]*flowRec
	flowIdx map[int]*btree.BTreeG[model.FlowID]
	// flowDone holds each partition's finished flows (flows_done).
	flowDone map[int]*btree.BTreeG[model.FlowID]
	flowOf   map[model.ExecutionID]model.FlowID
	// flowsPeak and flowOfPeak are the most entries flows and flowOf held
	// since they were made (shrink, after FlowDelete).
	flowsPeak, flowOfPeak int
	// flowQueue and flowDraining are flowEnded's work list; tally counts
	// what a flow step released and skipped.
	flowQueue    []*execution
	flowDraining bool
	// flowCancelling suppresses resolution while FlowCancel cancels
	// members.
	flowCancelling bool
	tally          flowTally

	// bparts and qparts are the budget and quota partitions (budget.go,
	// quota.go), made on first use; quotaSeq numbers rate-window entries.
	bparts   []*budgetPart
	qparts   []*quotaPart
	quotaSeq uint64

	// leaseOut holds the lease notices of the transition in progress (mu);
	// streamOut the streams it appended to or closed (stream.go).
	leaseOut  []leaseNote
	streamOut []streamKey
	feedOut   []feedNote

	watchMu       sync.Mutex
	watchers      map[model.LaneID]map[int]func(int)
	leaseWatchers map[model.WorkerInstanceID]map[int]func(model.LeaseNotice)
	// streamWatchers are WatchStream's (stream.go).
	streamWatchers map[streamWatchKey]map[int]func(*model.Frame)
	// feedWatchers are WatchFeed's (feed.go).
	feedWatchers map[model.FeedKind]map[int]feedWatcher
	watchSeq     int
}

var (
	_ model.Store               = (*Store)(nil)
	_ model.WorkNotifier        = (*Store)(nil)
	_ model.LeaseNotifier       = (*Store)(nil)
	_ model.AdmissionStore      = (*Store)(nil)
	_ model.StreamStore         = (*Store)(nil)
	_ model.StreamNotifier      = (*Store)(nil)
	_ model.StreamFrameNotifier = (*Store)(nil)
	_ model.FeedStore           = (*Store)(nil)
	_ model.FeedNotifier        = (*Store)(nil)
	_ model.RetentionStore      = (*Store)(nil)
	_ model.FlowDeleter         = (*Store)(nil)
	_ model.LaneStore           = (*Store)(nil)
	_ model.IndexRepairer       = (*Store)(nil)
	_ model.IndexTamperer       = (*Store)(nil)
)

// New returns an empty store. It panics on an invalid partition config,
// which is a programming error.
func New(opts *Options) *Store {
	var o Options
	if opts != nil {
		o = *opts
	}
	if err := o.Partitions.Validate(); err != nil {
		panic("memstore: " + err.Error())
	}
	if err := o.Feeds.Validate(); err != nil {
		panic("memstore: " + err.Error())
	}
	cfg := o.Partitions.WithDefaults()
	return &Store{
		cfg:      cfg,
		feeds:    o.Feeds,
		parts:    make([]*partition, cfg.FlowPartitions),
		execs:    make(map[model.ExecutionID]*execution),
		idem:     make(map[idemKey]idemEntry),
		idemGC:   newIdemQueue(),
		workers:  make(map[model.Namespace]map[model.WorkerInstanceID]*workerRec),
		paused:   make(map[model.LaneID]*lanePause),
		flows:    make(map[model.FlowID]*flowRec),
		flowIdx:  make(map[int]*btree.BTreeG[model.FlowID]),
		flowDone: make(map[int]*btree.BTreeG[model.FlowID]),
		flowOf:   make(map[model.ExecutionID]model.FlowID),
		watchers: make(map[model.LaneID]map[int]func(int)),

		leaseWatchers:  make(map[model.WorkerInstanceID]map[int]func(model.LeaseNotice)),
		streamWatchers: make(map[streamWatchKey]map[int]func(*model.Frame)),
		feedWatchers:   make(map[model.FeedKind]map[int]feedWatcher),
	}
}

// Partitions implements model.Store.
func (s *Store) Partitions() model.PartitionConfig { return s.cfg }
