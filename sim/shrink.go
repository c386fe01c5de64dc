package sim

// Shrink looks for a smaller failing run of a failing run's seed: fewer
// workload steps (a bisection: the same seed's shorter run is a prefix of
// the longer one's workload), then each fault kind, the process deaths
// and stops, and the operator turned off in turn, keeping whatever still
// fails. It returns the smallest failing run found (r itself when nothing
// smaller fails).
func Shrink(r *Result) *Result {
	best := r
	try := func(o Options) bool {
		x := Run(o)
		if x.Failed() {
			best = x
			return true
		}
		return false
	}
	lo, hi := 0, best.Options.Steps // hi fails
	for lo+1 < hi {
		mid := (lo + hi) / 2
		o := best.Options
		o.Steps = mid
		if try(o) {
			hi = mid
		} else {
			lo = mid
		}
	}
	if o := best.Options; !o.NoFaults {
		o.NoFaults = true
		try(o)
	}
	if !best.Options.NoFaults {
		for _, off := range []func(*Faults){
			func(f *Faults) { f.FailBefore = 0 }, func(f *Faults) { f.LoseReply = 0 }, func(f *Faults) { f.Duplicate = 0 },
			func(f *Faults) { f.Slow = 0 }, func(f *Faults) { f.Late = 0 }, func(f *Faults) { f.DropWork, f.DupWork, f.BlurWork = 0, 0, 0 }, func(f *Faults) { f.DropLease, f.Recheck = 0, 0 },
			func(f *Faults) { f.DropStream, f.DupStream = 0, 0 },
		} {
			o := best.Options
			f := *o.Faults
			off(&f)
			if f != *o.Faults {
				o.Faults = &f
				try(o)
			}
		}
	}
	if o := best.Options; !o.NoKills {
		o.NoKills = true
		try(o)
	}
	if o := best.Options; !o.NoOperator {
		o.NoOperator = true
		try(o)
	}
	return best
}
