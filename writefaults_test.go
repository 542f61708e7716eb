package ddbindex

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/stretchr/testify/require"

	"github.com/ddbindex/ddbindex/internal/ddbtest"
	"github.com/ddbindex/ddbindex/internal/faults"
)

// Tests of writes under faults: Put, Update, Move and Delete under a fault
// transport (throttling, 500s, resets before and after the server applied
// the request, lost answers) at 5% and 30% of all requests, in both upkeep
// modes, against ground truth. One writer, one goroutine and fixed seeds, so
// a run repeats exactly; after every write the whole base table (and, written
// through, the index table) is compared with the truth:
//
//   - an acknowledged write is applied exactly once (its result is exact);
//   - no item is lost or duplicated;
//   - a write-through never leaves base and index apart;
//   - with one writer every conflict is false, so none may be reported;
//   - a write that fails otherwise (the SDK gave up) has its outcome
//     checked: it fully happened, or not at all.

// wfModel adapts a model to the workload.
type wfModel[T any] struct {
	index   string                   // its index table's logical name
	soft    bool                     // softdelete
	fresh   func(id string, i int) T // a new item
	id      func(T) string           // its identity, which survives a Move
	ver     func(T) int64            // its version
	retitle func(T, string) T        // a non-key change
	move    func(T, *rand.Rand) T    // a key change; nil: the model has none
	update  Update                   // what Update sets
	updated func(T) T                // the item after update (version aside)
}

// wfState is the truth about one item.
type wfState[T any] struct {
	item    T
	deleted bool // soft-deleted
}

type wfWorld[T any] map[string]wfState[T]

func (w wfWorld[T]) clone() wfWorld[T] { return maps.Clone(w) }

var wfTicketModel = wfModel[wrTicket]{
	index: "by_status",
	soft:  true,
	fresh: func(id string, i int) wrTicket {
		return wrTicket{Team: "WF", Status: "open", ID: id, Created: wrT0.Add(time.Duration(i) * time.Minute), Title: "new"}
	},
	id:      func(x wrTicket) string { return x.ID },
	ver:     func(x wrTicket) int64 { return x.Ver },
	retitle: func(x wrTicket, s string) wrTicket { x.Title = s; return x },
	move: func(x wrTicket, r *rand.Rand) wrTicket {
		for s := x.Status; s == x.Status; {
			x.Status = []string{"open", "pending", "waiting", "closed"}[r.IntN(4)]
		}
		return x
	},
	update:  Set("title", "updated"),
	updated: func(x wrTicket) wrTicket { x.Title = "updated"; return x },
}

var wfDocModel = wfModel[rtDoc]{
	index: "by_topic",
	fresh: func(id string, i int) rtDoc {
		return rtDoc{ID: id, Topic: []string{"go", "db"}[i%2], Title: "new", Score: 0.25}
	},
	id:      func(x rtDoc) string { return x.ID },
	ver:     func(x rtDoc) int64 { return x.Ver },
	retitle: func(x rtDoc, s string) rtDoc { x.Title = s; return x },
	update:  Set("title", "updated").Add("score", 1),
	updated: func(x rtDoc) rtDoc { x.Title = "updated"; x.Score++; return x },
}

// wfRun is one workload: a model, an upkeep mode, a fault rate and a seed.
type wfRun struct {
	writeThrough bool
	rate         float64
	seed         uint64
	ops          int
	retryer      func() aws.Retryer
}

func TestWritesUnderFaults(t *testing.T) {
	t.Parallel()
	// At 5% the SDK's standard retryer (3 attempts, with its quota); at 30%
	// a retryer without quota, still 3 attempts, so that some calls run out
	// of attempts and their outcome gets checked. Backoff is capped at 2 ms:
	// the faults are injected, not load to wait out.
	standard := func() aws.Retryer { return retry.AddWithMaxBackoffDelay(retry.NewStandard(), 2*time.Millisecond) }
	noQuota := func() aws.Retryer {
		return retry.AddWithMaxBackoffDelay(ddbtest.NoQuotaRetryer(3)(), 2*time.Millisecond)
	}
	for _, wt := range []bool{false, true} {
		for _, rc := range []struct {
			rate    float64
			retryer func() aws.Retryer
		}{{0.05, standard}, {0.30, noQuota}} {
			run := wfRun{writeThrough: wt, rate: rc.rate, seed: 20261203, ops: 150, retryer: rc.retryer}
			name := fmt.Sprintf("writeThrough=%v/rate=%.2f", wt, rc.rate)
			t.Run(name+"/softdelete", func(t *testing.T) {
				t.Parallel()
				wfWorkload(t, run, wfTicketModel)
			})
			t.Run(name+"/hard delete", func(t *testing.T) {
				t.Parallel()
				wfWorkload(t, run, wfDocModel)
			})
		}
	}
}

func wfWorkload[T any](t *testing.T, run wfRun, m wfModel[T]) {
	if run.writeThrough {
		ddbtest.Require(t, ddbtest.Transactions)
	}
	opts := func(o *Options) { o.WriteThrough = run.writeThrough }
	clean, c := newTestTable[T](t, opts)
	db, _, ft := ddbtest.Faulty(t, faults.Random(run.rate, run.seed, nil), run.retryer)
	tb, err := New[T](db, opts, func(o *Options) { o.TableName = clean.opts.TableName })
	require.NoError(t, err)
	moves := m.move != nil && ddbtest.Has(ddbtest.Transactions) // a Move is a transaction
	ctx := t.Context()
	r := rand.New(rand.NewPCG(run.seed, 7))
	world := wfWorld[T]{}
	ids := []string{"a", "b", "c", "d", "e"}
	counts := map[string]int{}

	// check compares the tables with the truth; it returns a description of
	// the first difference, or "".
	check := func(want wfWorld[T]) string {
		got := wfWorld[T]{}
		for _, raw := range wrScan(t, c, clean.TableName()) {
			var x T
			require.NoError(t, attributevalue.UnmarshalMap(raw, &x))
			id := m.id(x)
			if _, dup := got[id]; dup {
				return fmt.Sprintf("item %s is stored twice", id)
			}
			got[id] = wfState[T]{item: x, deleted: wrBool(raw[clean.opts.DeletedAttr])}
		}
		if !maps.EqualFunc(got, want, func(a, b wfState[T]) bool { return a.deleted == b.deleted && equalValues(a.item, b.item) }) {
			return fmt.Sprintf("base table\n got: %+v\nwant: %+v", got, want)
		}
		if !run.writeThrough {
			return ""
		}
		live := map[string]T{}
		for _, raw := range wrScan(t, c, clean.tableOf(clean.s.byName[m.index])) {
			if wrBool(raw[clean.opts.DeletedAttr]) {
				continue
			}
			var x T
			require.NoError(t, attributevalue.UnmarshalMap(raw, &x))
			if _, dup := live[m.id(x)]; dup {
				return fmt.Sprintf("item %s has two live index entries", m.id(x))
			}
			if v := wrNum(t, raw[clean.opts.VersionAttr]); v != m.ver(x) {
				return fmt.Sprintf("item %s: index entry of version %d, written by change %d", m.id(x), m.ver(x), v)
			}
			live[m.id(x)] = x
		}
		wantLive := map[string]T{}
		for id, s := range want {
			if !s.deleted {
				wantLive[id] = s.item
			}
		}
		if !maps.EqualFunc(live, wantLive, func(a, b T) bool { return equalValues(a, b) }) {
			return fmt.Sprintf("index table (half-applied write-through?)\n got: %+v\nwant: %+v", live, wantLive)
		}
		return ""
	}

	for op := range run.ops {
		id := ids[r.IntN(len(ids))]
		st, exists := world[id]
		before := world.clone()
		after := world.clone()
		var kind string
		var call func() error
		switch {
		case !exists:
			kind = "create"
			item := m.fresh(id, op)
			call = func() error {
				got, err := tb.Put(ctx, item)
				if err == nil && m.ver(got) != 1 {
					return fmt.Errorf("created at version %d", m.ver(got))
				}
				return err
			}
			want := item
			wfSetVersion(clean, &want, 1)
			after[id] = wfState[T]{item: want}
		case st.deleted:
			kind = "put again"
			item := m.retitle(st.item, fmt.Sprint("again ", op))
			call = func() error { _, err := tb.Put(ctx, item); return err }
			want := item
			wfSetVersion(clean, &want, uint64(m.ver(st.item))+1)
			after[id] = wfState[T]{item: want}
		default:
			choices := []string{"put", "delete"}
			if !run.writeThrough {
				choices = append(choices, "update")
			}
			if moves {
				choices = append(choices, "move")
			}
			kind = choices[r.IntN(len(choices))]
			next := uint64(m.ver(st.item)) + 1
			switch kind {
			case "put":
				item := m.retitle(st.item, fmt.Sprint("put ", op))
				call = func() error {
					got, err := tb.Put(ctx, item)
					if err == nil && uint64(m.ver(got)) != next {
						return fmt.Errorf("put returned version %d", m.ver(got))
					}
					return err
				}
				want := item
				wfSetVersion(clean, &want, next)
				after[id] = wfState[T]{item: want}
			case "update":
				call = func() error { return tb.Update(ctx, st.item, m.update) }
				item := m.updated(st.item)
				wfSetVersion(clean, &item, next)
				after[id] = wfState[T]{item: item}
			case "move":
				to := m.move(st.item, r)
				call = func() error { _, err := tb.Move(ctx, st.item, to); return err }
				want := to
				wfSetVersion(clean, &want, next)
				after[id] = wfState[T]{item: want}
			case "delete":
				call = func() error { return tb.Delete(ctx, st.item) }
				if m.soft {
					item := st.item
					wfSetVersion(clean, &item, next)
					after[id] = wfState[T]{item: item, deleted: true}
				} else {
					delete(after, id)
				}
			}
		}
		counts[kind]++
		err := call()
		switch {
		case err == nil:
			world = after
			if d := check(world); d != "" {
				t.Fatalf("op %d (%s %s) acknowledged, but: %s", op, kind, id, d)
			}
		case errors.Is(err, ErrConflict):
			t.Fatalf("op %d (%s %s): a false conflict, with one writer: %v", op, kind, id, err)
		default:
			// The SDK gave up (or the outcome was unknown): it fully happened
			// or not at all.
			counts["failed, outcome checked"]++
			dAfter, dBefore := check(after), check(before)
			switch {
			case dAfter == "":
				world = after
				counts["failed, but applied"]++
			case dBefore == "":
				world = before
			default:
				t.Fatalf("op %d (%s %s) failed (%v) and is half applied:\nas if applied: %s\nas if not: %s", op, kind, id, err, dAfter, dBefore)
			}
			var quota ratelimit.QuotaExceededError
			require.True(t, faults.IsInjected(err) || errors.As(err, &quota), "op %d: an error no fault explains: %v", op, err)
		}
	}
	if d := check(world); d != "" {
		t.Fatalf("at the end: %s", d)
	}
	t.Logf("%s; ops %v", ft.Summary(), counts)
	require.Positive(t, ft.Count(faults.ResetAfterApply)+ft.Count(faults.LostResponse), "answers of applied requests were lost")
}

// wfSetVersion sets the model's version field.
func wfSetVersion[T any](tb *Table[T], item *T, v uint64) { tb.setVersion(item, v) }

// equalValues compares two model values as stored.
func equalValues[T any](a, b T) bool {
	x, err1 := attributevalue.MarshalMap(a)
	y, err2 := attributevalue.MarshalMap(b)
	return err1 == nil && err2 == nil && sameItem(x, y)
}
