package migrate

import (
	"context"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/ddbindex/ddbindex"
	"github.com/ddbindex/ddbindex/internal/bridge"
)

// This file holds a migration's run-time state in the control table, beside
// the routes: the shadow rate of each index (set with SetShadow, read by
// every Router's refresh, followed by Shadows made with
// ShadowOptions.Router) and the forms whose backfill finished (recorded by
// Backfill with DynamoDBCheckpoints), before which Shadows does not compare
// an index table.
//
// Items: partition key "pk" = "migration#" + the base table as declared;
// sort key "sk" = "shadow#" + index, with rate (N, 0 to 1) and updated; or
// "ready#" + index + "#" + form (gsi, lsi or table), with at (S, RFC 3339).
// Instances of an earlier version of the library, which read only the
// "route#" partition, are not disturbed by them.

const (
	statePrefix  = "migration#"
	shadowPrefix = "shadow#"
	readyPrefix  = "ready#"
)

// readState reads table's migration state.
func (r *Router) readState(ctx context.Context, table string, opts []func(*dynamodb.Options)) (*tableState, error) {
	items, err := queryAll(ctx, r.api, r.o.ControlTable, statePrefix+table, opts)
	if err != nil {
		return nil, fmt.Errorf("migrate: read the migration state of %s from %s: %w", table, r.o.ControlTable, err)
	}
	st := &tableState{shadow: map[string]float64{}, ready: map[string][]ddbindex.Kind{}}
	for _, item := range items {
		sk, _ := item[controlSK].(*types.AttributeValueMemberS)
		if sk == nil {
			return nil, fmt.Errorf("%w: control table %s, migration state of %s: an item without an S %s", ddbindex.ErrMalformedItem, r.o.ControlTable, table, controlSK)
		}
		switch {
		case strings.HasPrefix(sk.Value, shadowPrefix):
			index := strings.TrimPrefix(sk.Value, shadowPrefix)
			n, ok := item["rate"].(*types.AttributeValueMemberN)
			if !ok {
				return nil, fmt.Errorf("%w: control table %s, shadow rate of %s/%s: rate is missing or not N", ddbindex.ErrMalformedItem, r.o.ControlTable, table, index)
			}
			rate, err := strconv.ParseFloat(n.Value, 64)
			if err != nil || !(rate >= 0 && rate <= 1) {
				return nil, fmt.Errorf("%w: control table %s, shadow rate of %s/%s: rate %q is not a number from 0 to 1", ddbindex.ErrMalformedItem, r.o.ControlTable, table, index, n.Value)
			}
			st.shadow[index] = rate
		case strings.HasPrefix(sk.Value, readyPrefix):
			rest := strings.TrimPrefix(sk.Value, readyPrefix)
			i := strings.LastIndexByte(rest, '#')
			k, ok := formKind(rest[i+1:])
			if i < 0 || !ok {
				return nil, fmt.Errorf("%w: control table %s, migration state of %s: %q names no index and form", ddbindex.ErrMalformedItem, r.o.ControlTable, table, sk.Value)
			}
			st.ready[rest[:i]] = append(st.ready[rest[:i]], k)
		}
		// Other items are left alone: a later version may add some.
	}
	return st, nil
}

// shadowRate returns the shadow rate the control table sets for an index;
// ok is false when it sets none.
func (r *Router) shadowRate(table, index string) (float64, bool) {
	if !r.made() {
		return 0, false
	}
	st := r.snap.Load().state[table]
	if st == nil {
		return 0, false
	}
	rate, ok := st.shadow[index]
	return rate, ok
}

// backfilled reports whether the control table records that the backfill of
// form finished for an index.
func (r *Router) backfilled(table, index string, form ddbindex.Kind) bool {
	if !r.made() {
		return false
	}
	st := r.snap.Load().state[table]
	return st != nil && slices.Contains(st.ready[index], form)
}

// refreshState returns when a refresh last read every table, and the last
// refresh's error ("" for none).
func (r *Router) refreshState() (time.Time, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.lastErr != nil {
		return r.readAt, r.lastErr.Error()
	}
	return r.readAt, ""
}

// SetShadow stores the shadow rate of index of t's model in the control
// table: the share of its pages that every instance's Shadows made with
// ShadowOptions.Router compares with the other form, from 0 (none) to 1,
// from the Routers' next refresh on (and in r at once). The index must keep
// two forms. A rate outside 0 to 1 (NaN included), an index that keeps one
// form, or a nil optFn fails with an error matching
// [ddbindex.ErrInvalidQuery] before any request.
func SetShadow[T any](ctx context.Context, r *Router, t *ddbindex.Table[T], index string, rate float64, optFns ...func(*dynamodb.Options)) error {
	model := reflect.TypeFor[T]().Name()
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: shadow rate of %s index %s: "+format, append([]any{ddbindex.ErrInvalidQuery, model, index}, args...)...)
	}
	if !r.made() || t == nil {
		return bad("SetShadow needs a Router made by NewRouter and a Table")
	}
	if !(rate >= 0 && rate <= 1) || math.IsInf(rate, 0) {
		return bad("rate %g: want 0 to 1", rate)
	}
	infos := t.Indexes()
	i := slices.IndexFunc(infos, func(ix ddbindex.IndexInfo) bool { return ix.Name == index })
	if index == "" || i < 0 {
		return bad("%s declares no such index", model)
	}
	if len(infos[i].Forms) < 2 {
		return bad("the index keeps one form (type=%s): there is nothing to compare it with", infos[i].Forms[0].Kind)
	}
	opts, err := r.callOptions("SetShadow", optFns)
	if err != nil {
		return err
	}
	table := infos[0].Forms[0].Declared
	control := r.o.ControlTable
	_, err = r.api.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(control), Item: map[string]types.AttributeValue{
		controlPK: &types.AttributeValueMemberS{Value: statePrefix + table},
		controlSK: &types.AttributeValueMemberS{Value: shadowPrefix + index},
		"rate":    &types.AttributeValueMemberN{Value: strconv.FormatFloat(rate, 'g', -1, 64)},
		"updated": &types.AttributeValueMemberS{Value: time.Now().UTC().Format(time.RFC3339Nano)},
	}}, opts...)
	if err != nil {
		return fmt.Errorf("migrate: set the shadow rate of %s/%s in %s: %w", table, index, control, controlCallErr("PutItem", control, err))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.snap.Load()
	n := &snapshot{routes: s.routes, tables: s.tables, state: maps.Clone(s.state)}
	st := &tableState{shadow: map[string]float64{}, ready: map[string][]ddbindex.Kind{}}
	if old := n.state[table]; old != nil {
		st.shadow, st.ready = maps.Clone(old.shadow), old.ready
	}
	st.shadow[index] = rate
	n.state[table] = st
	r.snap.Store(n)
	return nil
}

// ShadowRates reads the shadow rates of table (the base table as declared)
// from the control table now, by logical index, and the forms whose
// backfill finished; an index the control table sets nothing for is
// absent. It changes nothing the Router uses: it is for operators (package
// ops's "route show").
func (r *Router) ShadowRates(ctx context.Context, table string, optFns ...func(*dynamodb.Options)) (rates map[string]float64, backfilled map[string][]ddbindex.Kind, err error) {
	if !r.made() {
		return nil, nil, errNotMade("ShadowRates")
	}
	opts, err := r.callOptions("Router.ShadowRates", optFns)
	if err != nil {
		return nil, nil, err
	}
	st, err := r.readState(ctx, table, opts)
	if err != nil {
		return nil, nil, err
	}
	return st.shadow, st.ready, nil
}

// readyKey is the control-table key of the record that the backfill of
// form of index, on the base table named table, finished.
func readyKey(table, index string, form ddbindex.Kind) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		controlPK: &types.AttributeValueMemberS{Value: statePrefix + table},
		controlSK: &types.AttributeValueMemberS{Value: readyPrefix + index + "#" + form.String()},
	}
}

// recordBackfilled records in the control table that the backfill of form
// of an index finished.
func recordBackfilled(ctx context.Context, api interface {
	PutItem(context.Context, *dynamodb.PutItemInput, ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
}, control, table, index string, form ddbindex.Kind, opts []func(*dynamodb.Options)) error {
	item := readyKey(table, index, form)
	item["at"] = &types.AttributeValueMemberS{Value: time.Now().UTC().Format(time.RFC3339Nano)}
	_, err := api.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(control), Item: item}, opts...)
	if err != nil {
		return fmt.Errorf("migrate: record the end of the backfill of %s/%s (%s) in %s: %w", table, index, form, control, controlCallErr("PutItem", control, err))
	}
	return nil
}

// ForgetBackfill forgets, in the control table store names, the backfill of
// form of index of t's model: the positions it saved (as store's Clear) and
// the record that it finished. Call it when the form's contents stop being
// what the backfill made them: the form is dropped (a form created again
// later holds none of the items written while it was gone, and a finished
// record or finished positions left behind would let routes and Shadows
// take it as filled, and a later Backfill skip every segment as done), or a
// backfill is started again from the beginning. The index must keep form.
// A nil store, store without a Client or Table, nil t, or an index or form
// t does not declare fails with an error matching
// [ddbindex.ErrInvalidWrite] before any request.
func ForgetBackfill[T any](ctx context.Context, store *DynamoDBCheckpoints, t *ddbindex.Table[T], index string, form ddbindex.Kind) error {
	model := reflect.TypeFor[T]().Name()
	if err := store.check(); err != nil {
		return err
	}
	if t == nil {
		return fmt.Errorf("%w: ForgetBackfill of %s index %s: a nil Table", ddbindex.ErrInvalidWrite, model, index)
	}
	infos := t.Indexes()
	i := slices.IndexFunc(infos, func(ix ddbindex.IndexInfo) bool { return ix.Name == index })
	if index == "" || i < 0 || !slices.ContainsFunc(infos[i].Forms, func(f ddbindex.IndexForm) bool { return f.Kind == form }) {
		return fmt.Errorf("%w: ForgetBackfill of %s index %q (%s): the model keeps no such index and form", ddbindex.ErrInvalidWrite, model, index, form)
	}
	// The keys Backfill saves positions under and records its end with.
	if err := store.Clear(ctx, bridge.CheckpointKey(t.TableName(), index, form.String())); err != nil {
		return err
	}
	table := infos[0].Forms[0].Declared
	_, err := store.Client.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(store.Table), Key: readyKey(table, index, form)}, store.ClientOptions...)
	if err != nil {
		return fmt.Errorf("migrate: forget the end of the backfill of %s/%s (%s) in %s: %w", table, index, form, store.Table, controlCallErr("DeleteItem", store.Table, err))
	}
	return nil
}
