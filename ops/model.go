package ops

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/ddbindex/ddbindex"
	"github.com/ddbindex/ddbindex/migrate"
	"github.com/ddbindex/ddbindex/schema"
)

// ModelDef is one model of the application that the command works on, as
// [Model] makes it.
type ModelDef struct {
	m       model
	control string // ControlTable's
}

// Model registers model T with the command, opened with the application's
// own options: the same functions the application passes to ddbindex.New
// (table names, attribute names, cursor keys, write-through), so that the
// command sees the tables and cursors the application does. The command's
// --table-prefix puts a prefix before the names they map to. The control
// table is no model's: [ModelDef.ControlTable] names it, or the command's
// --control-table.
func Model[T any](optFns ...func(*ddbindex.Options)) ModelDef {
	return ModelDef{m: &modelOf[T]{optFns: optFns}}
}

// ControlTable returns d with the service's control table named name: the
// one the application gives migrate.RouterOptions.ControlTable and the
// DynamoDB checkpoint stores. The command's --control-table replaces it
// (--control-table "" names none); --table-prefix leaves it alone. With a
// control table, the command routes reads by the fleet's routes in it (a
// migrate.Router), before the application's Options.Router; route reads
// and sets them, backfill saves its positions there, and check and prepare
// check and create it. An empty name names none.
//
//	ops.Main(ops.Model[model.Ticket](model.Options).ControlTable("tickets-control"))
func (d ModelDef) ControlTable(name string) ModelDef {
	d.control = name
	return d
}

// model is a ModelDef's type-erased side: what the command does with a
// model without knowing its type.
type model interface {
	name() string
	open(client Client, s *settings, control string) (table, error)
}

// settings are the command line's options that change how a model's
// table is opened.
type settings struct {
	prefix          string // --table-prefix
	controlTable    string // --control-table
	controlTableSet bool   // --control-table was given, maybe empty
}

// table is an opened model: the Table's methods the commands use, with the
// model's type erased.
type table interface {
	name() string
	baseTable() string
	controlTable() string
	indexes() []ddbindex.IndexInfo
	check(ctx context.Context, api schema.API) ([]string, error)
	prepare(ctx context.Context, api schema.PrepareAPI, optFns ...func(*schema.PrepareOptions)) (schema.Report, error)
	backfill(ctx context.Context, api migrate.ScanAPI, index string, optFns ...func(*migrate.BackfillOptions)) (migrate.BackfillStats, error)
	compare(ctx context.Context, q query) (*migrate.Comparison, error)
	explain(q query) (*ddbindex.Explanation, error)
	inspectCursor(index, cursor string) (*CursorInfo, error)
	routes(ctx context.Context) (map[string]migrate.Route, error)
	refreshRoutes(ctx context.Context) error
	setRoute(ctx context.Context, index string, r migrate.Route) error
	setShadow(ctx context.Context, index string, rate float64) error
	backfilled(ctx context.Context) (map[string][]ddbindex.Kind, error)
	forgetBackfill(ctx context.Context, store *migrate.DynamoDBCheckpoints, index string, form ddbindex.Kind) error
	sample(ctx context.Context, api migrate.ScanAPI, ix ddbindex.IndexInfo, n, maxScan int) ([][]any, int, error)
}

// query is a Query's settings, as the command line gives them.
type query struct {
	index     string
	partition []any
	cond      ddbindex.SortCondition
	desc      bool
	limit     int
	after     string
	via       ddbindex.Kind
	hasVia    bool
}

type modelOf[T any] struct {
	optFns []func(*ddbindex.Options)
}

func (m *modelOf[T]) name() string { return reflect.TypeFor[T]().Name() }

// open opens the model with the command line's settings, and the control
// table named control unless --control-table is given.
func (m *modelOf[T]) open(client Client, s *settings, control string) (table, error) {
	if s.controlTableSet {
		control = s.controlTable
	}
	fns := append(slices.Clone(m.optFns), func(o *ddbindex.Options) {
		if s.prefix != "" {
			mapped := o.TableName
			o.TableName = func(declared string) string {
				if mapped != nil {
					declared = mapped(declared)
				}
				return s.prefix + declared
			}
		}
	})
	if _, err := ddbindex.New[T](client, fns...); err != nil { // refuses a nil function
		return nil, err
	}
	var o ddbindex.Options
	for _, fn := range fns {
		fn(&o)
	}
	var router *migrate.Router
	if control != "" {
		// The fleet's routes, read when a command asks (refreshRoutes):
		// the Router is never started.
		probe, err := ddbindex.New[T](nil, fns...)
		if err != nil {
			return nil, err
		}
		router, err = migrate.NewRouter(client, migrate.RouterOptions{ControlTable: control,
			Tables: []string{probe.Indexes()[0].Forms[0].Declared}, Fallback: o.Router})
		if err != nil {
			return nil, err
		}
		fns = append(fns, func(o *ddbindex.Options) { o.Router = router })
	}
	t, err := ddbindex.New[T](client, fns...)
	if err != nil {
		return nil, err
	}
	return &tableOf[T]{t: t, control: control, router: router}, nil
}

type tableOf[T any] struct {
	t       *ddbindex.Table[T]
	control string
	router  *migrate.Router // nil without a control table
}

func (x *tableOf[T]) name() string                  { return reflect.TypeFor[T]().Name() }
func (x *tableOf[T]) baseTable() string             { return x.t.TableName() }
func (x *tableOf[T]) controlTable() string          { return x.control }
func (x *tableOf[T]) indexes() []ddbindex.IndexInfo { return x.t.Indexes() }

// check checks the model's tables, and its control table when it has one,
// and reports the problems of both in one *schema.Error, and the model's
// warnings (schema.CheckWithWarnings).
func (x *tableOf[T]) check(ctx context.Context, api schema.API) ([]string, error) {
	warnings, err := schema.CheckWithWarnings(ctx, x.t, api)
	if x.control == "" {
		return warnings, err
	}
	var se *schema.Error
	if err != nil && !errors.As(err, &se) {
		return warnings, err
	}
	cerr := schema.CheckControlTable(ctx, x.control, api)
	var ce *schema.Error
	switch {
	case cerr == nil:
		return warnings, err
	case !errors.As(cerr, &ce):
		return warnings, cerr
	case se == nil:
		return warnings, &schema.Error{Problems: ce.Problems, Warnings: warnings}
	}
	return warnings, &schema.Error{Problems: append(slices.Clone(se.Problems), ce.Problems...), Warnings: warnings}
}

// prepare prepares the model's tables, and its control table when it has
// one.
func (x *tableOf[T]) prepare(ctx context.Context, api schema.PrepareAPI, optFns ...func(*schema.PrepareOptions)) (schema.Report, error) {
	return schema.Prepare(ctx, x.t, api, append(slices.Clone(optFns), func(o *schema.PrepareOptions) { o.ControlTable = x.control })...)
}

func (x *tableOf[T]) backfill(ctx context.Context, api migrate.ScanAPI, index string, optFns ...func(*migrate.BackfillOptions)) (migrate.BackfillStats, error) {
	return migrate.Backfill(ctx, x.t, api, index, optFns...)
}

func (x *tableOf[T]) query(q query) ddbindex.Query[T] {
	out := x.t.Query(q.index, q.partition...).Where(q.cond).Limit(q.limit).After(q.after)
	if q.desc {
		out = out.Desc()
	}
	if q.hasVia {
		out = out.Via(q.via)
	}
	return out
}

func (x *tableOf[T]) compare(ctx context.Context, q query) (*migrate.Comparison, error) {
	return migrate.Compare(ctx, x.query(q))
}

func (x *tableOf[T]) explain(q query) (*ddbindex.Explanation, error) { return x.query(q).Explain() }

func (x *tableOf[T]) inspectCursor(index, cursor string) (*CursorInfo, error) {
	return InspectCursor(x.t, index, cursor)
}

// The route methods need a control table: the commands check
// controlTable first.

func (x *tableOf[T]) routes(ctx context.Context) (map[string]migrate.Route, error) {
	return x.router.Routes(ctx, x.t.Indexes()[0].Forms[0].Declared)
}

func (x *tableOf[T]) refreshRoutes(ctx context.Context) error { return x.router.Refresh(ctx) }

func (x *tableOf[T]) setRoute(ctx context.Context, index string, r migrate.Route) error {
	return migrate.SetRoute(ctx, x.router, x.t, index, r)
}

// backfilled reads from the control table, by logical index, the forms
// whose backfill finished (recorded by migrate.Backfill with
// DynamoDBCheckpoints).
func (x *tableOf[T]) backfilled(ctx context.Context) (map[string][]ddbindex.Kind, error) {
	_, ready, err := x.router.ShadowRates(ctx, x.t.Indexes()[0].Forms[0].Declared)
	return ready, err
}

// forgetBackfill forgets the saved positions of the backfill of form of
// index, and the record that it finished (migrate.ForgetBackfill).
func (x *tableOf[T]) forgetBackfill(ctx context.Context, store *migrate.DynamoDBCheckpoints, index string, form ddbindex.Kind) error {
	return migrate.ForgetBackfill(ctx, store, x.t, index, form)
}

func (x *tableOf[T]) setShadow(ctx context.Context, index string, rate float64) error {
	return migrate.SetShadow(ctx, x.router, x.t, index, rate)
}

// sample scans the base table, at most maxScan items, for up to n distinct
// partitions of index ix, and returns their component values in key order
// with the number of items scanned. Items without the partition's
// attributes (not in the index) are passed over.
func (x *tableOf[T]) sample(ctx context.Context, api migrate.ScanAPI, ix ddbindex.IndexInfo, n, maxScan int) ([][]any, int, error) {
	type found struct {
		key    string
		values []any
	}
	var parts []found
	seen := map[string]bool{}
	in := &dynamodb.ScanInput{TableName: aws.String(x.t.TableName())}
	scanned := 0
	for scanned < maxScan && len(parts) < n {
		in.Limit = aws.Int32(int32(min(100, maxScan-scanned)))
		out, err := api.Scan(ctx, in)
		if err != nil {
			return nil, scanned, fmt.Errorf("sampling partitions of %s: %w", x.t.TableName(), err)
		}
		for _, item := range out.Items {
			scanned++
			var v T
			if err := attributevalue.UnmarshalMap(item, &v); err != nil {
				return nil, scanned, fmt.Errorf("sampling partitions of %s: an item does not unmarshal into %s: %w", x.t.TableName(), x.name(), err)
			}
			values, ok := partitionOf(reflect.ValueOf(&v).Elem(), item, ix)
			if !ok {
				continue
			}
			key, err := ddbindex.EncodeKey(values...)
			if err != nil || seen[key] || len(parts) == n {
				continue
			}
			seen[key] = true
			parts = append(parts, found{key, values})
		}
		if len(out.LastEvaluatedKey) == 0 {
			break
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
	slices.SortFunc(parts, func(a, b found) int { return strings.Compare(a.key, b.key) })
	values := make([][]any, len(parts))
	for i, p := range parts {
		values[i] = p.values
	}
	return values, scanned, nil
}

// partitionOf reads the values of ix's partition components from an item
// (v, unmarshaled from the stored attributes item); ok is false when the
// item lacks one.
func partitionOf(v reflect.Value, item map[string]types.AttributeValue, ix ddbindex.IndexInfo) ([]any, bool) {
	values := make([]any, len(ix.Partition))
	for i, c := range ix.Partition {
		if _, ok := item[c.Attr]; !ok {
			return nil, false
		}
		f, err := v.FieldByIndexErr(c.FieldIndex)
		if err != nil {
			return nil, false
		}
		for f.Kind() == reflect.Pointer {
			if f.IsNil() {
				return nil, false
			}
			f = f.Elem()
		}
		values[i] = f.Interface()
	}
	return values, true
}
