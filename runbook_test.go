package ddbindex_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/ddbindex/ddbindex"
	"github.com/ddbindex/ddbindex/internal/ddbtest"
	"github.com/ddbindex/ddbindex/stream"
)

// TestRunbookMixedFleet walks the README's migration runbook, GSI to index
// table, with a mixed fleet at every step: instances at step k and k+1 write
// concurrently, the routes change at run time, the fleet rolls back one step
// and forward again, and the GSI is dropped once no instance reads it.
//
// After every round of writes (and the stream upkeep catching up: the
// propagation delay an index table has, as a GSI has its own), every
// instance reads every partition page by page, routed as it is, and every
// form any instance may read is read too: each must return exactly the live
// items of the ground truth, in index order.

// The declarations at each step; the same fields, one tag apart.
type rbStep0 struct {
	_       ddbindex.TableSpec `ddbindex:"rb-tickets"`
	_       ddbindex.IndexSpec `ddbindex:"by_status,type=gsi"`
	ID      string             `dynamodbav:"id" ddbindex:"pk"`
	Team    string             `dynamodbav:"team" ddbindex:"by_status.pk"`
	Status  string             `dynamodbav:"status" ddbindex:"by_status.sk:0"`
	Created int64              `dynamodbav:"created" ddbindex:"by_status.sk:1"`
	Ver     int64              `dynamodbav:"ver" ddbindex:"version"`
}

type rbStep1 struct {
	_       ddbindex.TableSpec `ddbindex:"rb-tickets"`
	_       ddbindex.IndexSpec `ddbindex:"by_status,type=gsi,keep=table"`
	ID      string             `dynamodbav:"id" ddbindex:"pk"`
	Team    string             `dynamodbav:"team" ddbindex:"by_status.pk"`
	Status  string             `dynamodbav:"status" ddbindex:"by_status.sk:0"`
	Created int64              `dynamodbav:"created" ddbindex:"by_status.sk:1"`
	Ver     int64              `dynamodbav:"ver" ddbindex:"version"`
}

type rbStep2 struct {
	_       ddbindex.TableSpec `ddbindex:"rb-tickets"`
	_       ddbindex.IndexSpec `ddbindex:"by_status,type=table,keep=gsi"`
	ID      string             `dynamodbav:"id" ddbindex:"pk"`
	Team    string             `dynamodbav:"team" ddbindex:"by_status.pk"`
	Status  string             `dynamodbav:"status" ddbindex:"by_status.sk:0"`
	Created int64              `dynamodbav:"created" ddbindex:"by_status.sk:1"`
	Ver     int64              `dynamodbav:"ver" ddbindex:"version"`
}

type rbStep3 struct {
	_       ddbindex.TableSpec `ddbindex:"rb-tickets"`
	_       ddbindex.IndexSpec `ddbindex:"by_status,type=table"`
	ID      string             `dynamodbav:"id" ddbindex:"pk"`
	Team    string             `dynamodbav:"team" ddbindex:"by_status.pk"`
	Status  string             `dynamodbav:"status" ddbindex:"by_status.sk:0"`
	Created int64              `dynamodbav:"created" ddbindex:"by_status.sk:1"`
	Ver     int64              `dynamodbav:"ver" ddbindex:"version"`
}

// rbItem is the ground truth's form of an item.
type rbItem = rbStep0

// rbInstance is one service instance, at one step.
type rbInstance interface {
	step() int
	put(ctx context.Context, it rbItem) (rbItem, error)
	del(ctx context.Context, it rbItem) error
	// read reads a partition page by page, routed as the instance routes
	// (form < 0) or through one form.
	read(ctx context.Context, team string, limit int, form ddbindex.Kind, via bool) ([]rbItem, error)
	forms() []ddbindex.Kind
	refresh(ctx context.Context) error
	rollout() ddbindex.RolloutStats
}

type rbTable[T any] struct {
	n    int
	t    *ddbindex.Table[T]
	to   func(rbItem) T
	back func(T) rbItem
	kept []ddbindex.Kind
}

func (r *rbTable[T]) step() int              { return r.n }
func (r *rbTable[T]) forms() []ddbindex.Kind { return r.kept }
func (r *rbTable[T]) refresh(ctx context.Context) error {
	return r.t.RefreshRoutes(ctx)
}
func (r *rbTable[T]) put(ctx context.Context, it rbItem) (rbItem, error) {
	out, err := r.t.Put(ctx, r.to(it))
	return r.back(out), err
}
func (r *rbTable[T]) del(ctx context.Context, it rbItem) error { return r.t.Delete(ctx, r.to(it)) }
func (r *rbTable[T]) rollout() ddbindex.RolloutStats {
	s, err := r.t.Rollout("by_status")
	if err != nil {
		panic(err)
	}
	return s
}
func (r *rbTable[T]) read(ctx context.Context, team string, limit int, form ddbindex.Kind, via bool) ([]rbItem, error) {
	var out []rbItem
	cursor := ""
	for {
		q := r.t.Query("by_status", team).Limit(limit).After(cursor)
		if via {
			q = q.Via(form)
		}
		p, err := q.Page(ctx)
		if err != nil {
			return nil, err
		}
		for _, it := range p.Items {
			out = append(out, r.back(it))
		}
		if p.Cursor == "" {
			return out, nil
		}
		cursor = p.Cursor
	}
}

func TestRunbookMixedFleet(t *testing.T) {
	t.Parallel()
	ddbtest.Require(t, ddbtest.Streams) // the index table is kept from the stream, whoever writes
	ctx := context.Background()
	c := ddbtest.Client(t)
	prefix := ddbtest.Name(t, "")
	control := prefix + "-control"
	opts := func(o *ddbindex.Options) {
		o.TableName = func(s string) string { return prefix + "-" + s }
		o.ControlTable = control
	}
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed^0x5bd1e995))

	open := func(step int) rbInstance {
		var inst rbInstance
		var err error
		switch step {
		case 0:
			var tb *ddbindex.Table[rbStep0]
			tb, err = ddbindex.New[rbStep0](c, opts)
			inst = &rbTable[rbStep0]{0, tb, func(x rbItem) rbStep0 { return x }, func(x rbStep0) rbItem { return x }, []ddbindex.Kind{ddbindex.GSI}}
		case 1:
			var tb *ddbindex.Table[rbStep1]
			tb, err = ddbindex.New[rbStep1](c, opts)
			inst = &rbTable[rbStep1]{1, tb, func(x rbItem) rbStep1 { return rbStep1(x) }, func(x rbStep1) rbItem { return rbItem(x) }, []ddbindex.Kind{ddbindex.GSI, ddbindex.IndexTable}}
		case 2:
			var tb *ddbindex.Table[rbStep2]
			tb, err = ddbindex.New[rbStep2](c, opts)
			inst = &rbTable[rbStep2]{2, tb, func(x rbItem) rbStep2 { return rbStep2(x) }, func(x rbStep2) rbItem { return rbItem(x) }, []ddbindex.Kind{ddbindex.IndexTable, ddbindex.GSI}}
		case 3:
			var tb *ddbindex.Table[rbStep3]
			tb, err = ddbindex.New[rbStep3](c, opts)
			inst = &rbTable[rbStep3]{3, tb, func(x rbItem) rbStep3 { return rbStep3(x) }, func(x rbStep3) rbItem { return rbItem(x) }, []ddbindex.Kind{ddbindex.IndexTable}}
		}
		require.NoError(t, err)
		return inst
	}

	// Step 0 is what runs today: the base table and its GSI.
	v0, err := ddbindex.New[rbStep0](c, opts)
	require.NoError(t, err)
	v1, err := ddbindex.New[rbStep1](c, opts)
	require.NoError(t, err)
	v3, err := ddbindex.New[rbStep3](c, opts)
	require.NoError(t, err)
	baseIn := v0.CreateTableInputs(false)[0]
	ddbtest.DeleteOnCleanup(t, c, aws.ToString(baseIn.TableName))
	ddbtest.CreateTable(t, c, baseIn)

	// ground truth: live items by ID.
	var mu sync.Mutex
	truth := map[string]rbItem{}
	teams := []string{"acme", "globex", "initech", "umbrella"}
	statuses := []string{"closed", "new", "open", "pending"}
	next := 0
	ops, reads := 0, 0

	// write runs n operations from each of the given instances at once, on
	// IDs of their own (so the ground truth of an ID has one writer).
	write := func(insts []rbInstance, n int) {
		t.Helper()
		n *= 2
		var wg sync.WaitGroup
		errs := make(chan error, len(insts))
		plans := make([][]int, len(insts))
		for i := range insts {
			plans[i] = make([]int, n)
			for j := range plans[i] {
				plans[i][j] = rng.IntN(10)
			}
		}
		mu.Lock()
		owned := make([][]string, len(insts))
		for id := range truth {
			w := int(id[len(id)-1]-'0') % len(insts)
			owned[w] = append(owned[w], id)
		}
		base := next
		next += n * len(insts)
		mu.Unlock()
		for i, inst := range insts {
			slices.Sort(owned[i])
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := rand.New(rand.NewPCG(seed, uint64(base+i)))
				mine := owned[i]
				for j, op := range plans[i] {
					switch {
					case op < 4 || len(mine) == 0: // create
						// The ID's last digit is its writer's number: later
						// rounds give it to the writer of the same number.
						id := fmt.Sprintf("t%05d-%d", base+j*len(insts)+i, i)
						it := rbItem{ID: id, Team: teams[r.IntN(len(teams))], Status: statuses[r.IntN(len(statuses))], Created: int64(r.IntN(50))}
						out, err := inst.put(context.Background(), it)
						if err != nil {
							errs <- fmt.Errorf("step %d put %s: %w", inst.step(), it.ID, err)
							return
						}
						mu.Lock()
						truth[out.ID] = out
						mu.Unlock()
						mine = append(mine, out.ID)
					case op < 8: // change the status (the index sort key) or the team
						id := mine[r.IntN(len(mine))]
						mu.Lock()
						it := truth[id]
						mu.Unlock()
						if r.IntN(3) == 0 {
							it.Team = teams[r.IntN(len(teams))]
						} else {
							it.Status = statuses[r.IntN(len(statuses))]
						}
						out, err := inst.put(context.Background(), it)
						if err != nil {
							errs <- fmt.Errorf("step %d change %s: %w", inst.step(), id, err)
							return
						}
						mu.Lock()
						truth[id] = out
						mu.Unlock()
					default: // delete
						k := r.IntN(len(mine))
						id := mine[k]
						mu.Lock()
						it := truth[id]
						mu.Unlock()
						if err := inst.del(context.Background(), it); err != nil {
							errs <- fmt.Errorf("step %d delete %s: %w", inst.step(), id, err)
							return
						}
						mu.Lock()
						delete(truth, id)
						mu.Unlock()
						mine = slices.Delete(mine, k, k+1)
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		ops += n * len(insts)
	}

	var cons *stream.Consumer[rbStep1]
	cp := &stream.MemoryCheckpoints{}
	drain := func() {
		t.Helper()
		if cons == nil {
			return
		}
		for {
			st, err := cons.Poll(ctx)
			require.NoError(t, err)
			if st.Changes == 0 {
				return
			}
		}
	}
	want := func(team string) []string {
		mu.Lock()
		defer mu.Unlock()
		var live []rbItem
		for _, it := range truth {
			if it.Team == team {
				live = append(live, it)
			}
		}
		slices.SortFunc(live, func(a, b rbItem) int {
			if c := strings.Compare(a.Status, b.Status); c != 0 {
				return c
			}
			if a.Created != b.Created {
				return int(a.Created - b.Created)
			}
			return strings.Compare(a.ID, b.ID)
		})
		ids := make([]string, len(live))
		for i, it := range live {
			ids[i] = fmt.Sprintf("%s/%s/%d", it.ID, it.Status, it.Ver)
		}
		return ids
	}
	ids := func(items []rbItem) []string {
		out := make([]string, len(items))
		for i, it := range items {
			out[i] = fmt.Sprintf("%s/%s/%d", it.ID, it.Status, it.Ver)
		}
		return out
	}
	// check reads every partition from every instance, routed and through
	// every form the fleet reads.
	check := func(phase string, fleet []rbInstance, tableReady bool) {
		t.Helper()
		drain()
		for _, inst := range fleet {
			for _, team := range teams {
				w := want(team)
				limit := 1 + rng.IntN(9)
				got, err := inst.read(ctx, team, limit, 0, false)
				require.NoError(t, err)
				reads++
				require.Equal(t, w, ids(got), "%s: step %d instance reading %s (routed, Limit %d)", phase, inst.step(), team, limit)
				for _, form := range inst.forms() {
					if form == ddbindex.IndexTable && !tableReady {
						continue // kept but not yet backfilled: no instance reads it yet
					}
					got, err := inst.read(ctx, team, limit, form, true)
					require.NoError(t, err)
					reads++
					require.Equal(t, w, ids(got), "%s: step %d instance reading %s through its %s form", phase, inst.step(), team, form)
				}
			}
		}
	}
	refresh := func(fleet []rbInstance) {
		for _, inst := range fleet {
			require.NoError(t, inst.refresh(ctx))
		}
	}

	// Step 0: today's fleet.
	fleet := []rbInstance{open(0), open(0)}
	write(fleet, 80)
	check("step 0", fleet, false)

	// Step 1: prepare (the index table, the stream, the control table),
	// start the upkeep, deploy keep=table instance by instance.
	idxIn := v1.CreateTableInputs(false)[1]
	ddbtest.DeleteOnCleanup(t, c, aws.ToString(idxIn.TableName))
	ddbtest.CreateTable(t, c, idxIn)
	ddbtest.DeleteOnCleanup(t, c, control)
	ddbtest.CreateTable(t, c, v1.ControlTableInput())
	_, err = c.UpdateTable(ctx, &dynamodb.UpdateTableInput{TableName: baseIn.TableName,
		StreamSpecification: &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeNewAndOldImages}})
	require.NoError(t, err)
	require.ErrorIs(t, v1.CheckSchema(ctx, c), ddbindex.ErrSchemaMismatch, "TTL is not enabled yet on the index table")
	if ddbtest.Has(ddbtest.TTL) {
		_, err = c.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{TableName: idxIn.TableName,
			TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String("_ttl"), Enabled: aws.Bool(true)}})
		require.NoError(t, err)
		require.NoError(t, v1.CheckSchema(ctx, c))
	}
	cons = stream.NewConsumer(v1, ddbtest.StreamsClient(t), cp)
	fleet = []rbInstance{open(0), open(1)} // rolling: one old, one new
	write(fleet, 80)
	check("step 1, mixed 0/1", fleet, false)
	_, err = v1.Backfill(ctx, c, "by_status")
	require.NoError(t, err)
	fleet = []rbInstance{open(1), open(1)}
	write(fleet, 80)
	check("step 1, backfilled", fleet, true)

	// Step 2: route one tenant, then a share, then every partition, to the
	// table, at run time.
	operator := fleet[0].(*rbTable[rbStep1]).t
	for _, r := range []ddbindex.Route{
		{To: ddbindex.IndexTable, Partitions: []string{"acme"}},
		{To: ddbindex.IndexTable, Percent: 50},
		{To: ddbindex.IndexTable, Percent: 100},
	} {
		require.NoError(t, operator.SetRoute(ctx, "by_status", r))
		refresh(fleet)
		write(fleet, 60)
		check(fmt.Sprintf("step 2, route %+v", r), fleet, true)
	}

	// Step 3: the switch, type=table,keep=gsi, in a mixed fleet; then a
	// rollback to step 1 routes and declarations, and forward again.
	fleet = []rbInstance{open(1), open(2)}
	refresh(fleet)
	write(fleet, 80)
	check("step 3, mixed 1/2", fleet, true)
	require.NoError(t, operator.SetRoute(ctx, "by_status", ddbindex.Route{To: ddbindex.GSI, Percent: 100}))
	fleet = []rbInstance{open(1), open(1)}
	refresh(fleet)
	write(fleet, 60)
	check("rolled back to step 1, GSI routes", fleet, true)
	require.NoError(t, operator.SetRoute(ctx, "by_status", ddbindex.Route{To: ddbindex.IndexTable, Percent: 100}))
	fleet = []rbInstance{open(1), open(2)}
	refresh(fleet)
	write(fleet, 60)
	check("forward again, mixed 1/2", fleet, true)
	cons = stream.NewConsumer(v1, ddbtest.StreamsClient(t), cp) // the upkeep redeploys too, from its checkpoints
	fleet = []rbInstance{open(2), open(2)}
	refresh(fleet)
	write(fleet, 60)
	check("step 3", fleet, true)

	// Step 4: GSI reads have stopped: the counters show no read served by
	// the GSI during a whole round. Drop the GSI, then deploy type=table.
	before := make([]int64, len(fleet))
	for i, inst := range fleet {
		before[i] = inst.rollout().Forms[ddbindex.GSI].Reads
	}
	for _, inst := range fleet {
		for _, team := range teams {
			_, err := inst.read(ctx, team, 5, 0, false)
			require.NoError(t, err)
		}
	}
	for i, inst := range fleet {
		require.Equal(t, before[i], inst.rollout().Forms[ddbindex.GSI].Reads, "no GSI reads at 100%% table routes")
		require.Positive(t, inst.rollout().Forms[ddbindex.IndexTable].Reads)
	}
	require.ErrorIs(t, v3.CheckSchema(ctx, c), ddbindex.ErrSchemaMismatch, "the plain type=table is refused while the GSI exists")
	_, err = c.UpdateTable(ctx, &dynamodb.UpdateTableInput{TableName: baseIn.TableName,
		GlobalSecondaryIndexUpdates: []types.GlobalSecondaryIndexUpdate{{Delete: &types.DeleteGlobalSecondaryIndexAction{IndexName: aws.String("by_status")}}}})
	require.NoError(t, err)
	require.NoError(t, ddbtestWaitNoGSI(ctx, c, aws.ToString(baseIn.TableName)))
	if ddbtest.Has(ddbtest.TTL) {
		require.NoError(t, v3.CheckSchema(ctx, c), "with the GSI gone, type=table matches the tables")
	}
	fleet = []rbInstance{open(2), open(3)}
	write(fleet, 80)
	check("step 4, mixed 2/3 after the drop", []rbInstance{open(3)}, true)
	t.Logf("%d writes by a fleet through the steps, a roll-back and forward again; %d partition reads, every one exact", ops, reads)
	require.Greater(t, ops, 3000)
}

// ddbtestWaitNoGSI waits until the base table lists no GSI being deleted.
func ddbtestWaitNoGSI(ctx context.Context, c *dynamodb.Client, table string) error {
	for {
		out, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
		if err != nil {
			return err
		}
		if len(out.Table.GlobalSecondaryIndexes) == 0 {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}
