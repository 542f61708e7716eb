package ddbindex

import (
	"fmt"
	"sync"
	"time"
)

// FormStats counts the reads one form of an index served, and the shadow
// reads it ran, since the Table was made: the signals of a migration's
// rollout ("have GSI reads reached zero?", "is the table path equal?").
type FormStats struct {
	// Reads is the number of Page, All and Exists calls the form served.
	Reads int64
	// Requests and ReadUnits are what those calls sent and consumed.
	Requests  int64
	ReadUnits float64
	// LastRead is when the form last served a call; zero if never.
	LastRead time.Time
	// ShadowReads is the number of shadow reads the form ran (see
	// ShadowOptions), ShadowRequests and ShadowReadUnits what they cost.
	ShadowReads     int64
	ShadowRequests  int64
	ShadowReadUnits float64
}

// RolloutStats are the rollout signals of one index.
type RolloutStats struct {
	// Forms holds the counters of each form the index has (the declared
	// type, and a kept form).
	Forms map[Kind]FormStats
	// Shadowed counts the calls compared by a shadow read; Skipped those
	// sampled but not compared, for want of concurrency or read units.
	Shadowed, Skipped int64
	// Transient counts mismatches that a re-check after ShadowOptions.Recheck
	// no longer found (a GSI catching up); Persistent those it found again,
	// which ShadowOptions.OnMismatch received.
	Transient, Persistent int64
}

// rollout holds a Table's counters.
type rollout struct {
	mu    sync.Mutex
	forms map[*layout]*FormStats
	index map[string]*RolloutStats
}

func (r *rollout) form(d *layout) *FormStats {
	if r.forms == nil {
		r.forms = map[*layout]*FormStats{}
	}
	f := r.forms[d]
	if f == nil {
		f = &FormStats{}
		r.forms[d] = f
	}
	return f
}

func (r *rollout) of(index string) *RolloutStats {
	if r.index == nil {
		r.index = map[string]*RolloutStats{}
	}
	s := r.index[index]
	if s == nil {
		s = &RolloutStats{}
		r.index[index] = s
	}
	return s
}

// call counts one call served by form d.
func (r *rollout) call(d *layout, shadow bool, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f := r.form(d)
	if shadow {
		f.ShadowReads++
		return
	}
	f.Reads++
	f.LastRead = now
}

// request counts one request sent to form d.
func (r *rollout) request(d *layout, shadow bool, units float64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f := r.form(d)
	if shadow {
		f.ShadowRequests++
		f.ShadowReadUnits += units
		return
	}
	f.Requests++
	f.ReadUnits += units
}

// update changes index's comparison counters.
func (r *rollout) update(index string, fn func(*RolloutStats)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	fn(r.of(index))
}

// Rollout returns the rollout signals of the named index: per form, the
// reads it served and the shadow reads it ran, and the shadow comparisons'
// outcome. The counts are this Table's, since it was made; a fleet's are
// the sum over its instances.
func (t *Table[T]) Rollout(index string) (RolloutStats, error) {
	if err := t.usable("Rollout", ErrInvalidQuery); err != nil {
		return RolloutStats{}, err
	}
	d, ok := t.s.byName[index]
	if !ok {
		return RolloutStats{}, fmt.Errorf("%w: Rollout: %s declares no index %q", ErrInvalidQuery, t.s.model, index)
	}
	r := t.rollout
	r.mu.Lock()
	defer r.mu.Unlock()
	out := *r.of(index)
	out.Forms = map[Kind]FormStats{}
	for _, f := range d.decl.forms {
		out.Forms[f.kind] = *r.form(f)
	}
	return out, nil
}
