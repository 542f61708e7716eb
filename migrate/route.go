package migrate

import (
	"context"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strings"

	"github.com/ddbindex/ddbindex"
)

// Route says which partitions of an index that keeps two forms read which
// form. The partitions it selects read the form To; every other partition
// reads the index's other form. A route names forms absolutely (not "the
// kept form"), so it keeps its meaning when a deploy swaps the declared and
// the kept type. A route to a form an index does not keep does not apply to
// it: the next rule decides (see [Router]), so one route can serve
// instances at neighbouring steps of a migration.
type Route struct {
	// To is the form the selected partitions read: GSI, LSI, IndexTable or NativeGSI.
	To ddbindex.Kind
	// Partitions always read To. Each is a partition key as
	// [ddbindex.EncodeKey] encodes its component values: for one string
	// component without bytes 0x00-0x24, the string itself ("TEAM-7").
	Partitions []string
	// Percent (0 to 100) of all partitions read To, chosen by a stable hash
	// of the partition key, so a partition keeps its form from page to page
	// and from instance to instance, and widening the share keeps the
	// partitions already moved. 100 sends every partition to To.
	Percent float64
}

// check reports what is wrong with r.
func (r Route) check() error {
	if r.To != ddbindex.GSI && r.To != ddbindex.LSI && r.To != ddbindex.IndexTable && r.To != ddbindex.NativeGSI {
		return fmt.Errorf("route: To is %s; want GSI, LSI, IndexTable or NativeGSI", r.To)
	}
	if r.Percent < 0 || r.Percent > 100 || r.Percent != r.Percent {
		return fmt.Errorf("route: Percent %g: want 0 to 100", r.Percent)
	}
	if slices.Contains(r.Partitions, "") {
		return fmt.Errorf("route: an empty partition key")
	}
	return nil
}

// Validate reports whether r is a route (its To, its Percent, its
// Partitions), as SetRoute and Routes.Validate check it: nil, or an error
// matching [ddbindex.ErrInvalidQuery] that names the rule r breaks.
func (r Route) Validate() error {
	if err := r.check(); err != nil {
		return fmt.Errorf("%w: %w", ddbindex.ErrInvalidQuery, err)
	}
	return nil
}

// selects reports whether the route sends partition key pk to r.To.
func (r Route) selects(pk string) bool {
	if slices.Contains(r.Partitions, pk) {
		return true
	}
	if r.Percent <= 0 {
		return false
	}
	h := fnv.New64a()
	h.Write([]byte(pk))
	return float64(h.Sum64()%10000) < r.Percent*100
}

// pick returns the form r sends partition key pk to, for an index with the
// given forms; ok is false when r names a form the index does not keep.
func (r Route) pick(pk string, forms [2]ddbindex.Kind) (ddbindex.Kind, bool) {
	switch {
	case r.To != forms[0] && r.To != forms[1]:
		return 0, false
	case r.selects(pk):
		return r.To, true
	case r.To == forms[0]:
		return forms[1], true
	}
	return forms[0], true
}

// reaches reports whether r, a route of an index with the given forms that
// names one of them, may send a partition to form.
func (r Route) reaches(form ddbindex.Kind) bool {
	if r.To == form {
		return len(r.Partitions) > 0 || r.Percent > 0
	}
	return r.Percent < 100
}

// mayRoute answers FormRouter's question (see [Routes.MayRoute]) for an
// index whose route is r (ok false: none): nil when r does not decide it.
func mayRoute(r Route, ok bool, form ddbindex.Kind, forms [2]ddbindex.Kind) *bool {
	if !ok || (r.To != forms[0] && r.To != forms[1]) {
		return nil
	}
	may := r.reaches(form)
	return &may
}

// Routes are static routes, by "TABLE/INDEX": the model's base table as
// declared (before Options.TableName) and the logical index. It is a
// [ddbindex.Router]; set it as Options.Router, or as a Router's Fallback.
//
//	o.Router = migrate.Routes{
//		"tickets/by_status": {To: ddbindex.IndexTable, Partitions: []string{"TEAM-7"}},
//	}
//
// An index without a route, and one whose route names a form it does not
// keep, reads its declared type.
type Routes map[string]Route

// Route implements [ddbindex.Router].
func (rs Routes) Route(table, index, partition string, forms [2]ddbindex.Kind) (ddbindex.Kind, bool) {
	if len(rs) == 0 {
		return 0, false
	}
	r, ok := rs[table+"/"+index]
	if !ok {
		return 0, false
	}
	return r.pick(partition, forms)
}

// MayRoute reports whether rs may send a read of index (of table, the
// base table as declared) to form, for an index whose forms are forms (the
// declared type, then the kept one): false when the index's route sends
// every partition elsewhere, or when it has no route (or one to a form it
// does not keep) and form is not the declared type. It implements
// schema.FormRouter, which schema.CheckWithWarnings asks about a kept form
// that does not exist. It never fails.
func (rs Routes) MayRoute(_ context.Context, table, index string, form ddbindex.Kind, forms [2]ddbindex.Kind) (bool, error) {
	r, ok := rs[table+"/"+index]
	if may := mayRoute(r, ok, form, forms); may != nil {
		return *may, nil
	}
	return form == forms[0], nil
}

// Validate reports whether every key of rs names a table and an index
// ("TABLE/INDEX") and every route is one (see [Route.Validate]): nil, or
// an error matching [ddbindex.ErrInvalidQuery] that names the first key,
// in order, that breaks a rule.
func (rs Routes) Validate() error {
	for _, k := range slices.Sorted(maps.Keys(rs)) {
		table, index, ok := strings.Cut(k, "/")
		if !ok || table == "" || index == "" {
			return fmt.Errorf("%w: Routes[%q]: the key must be TABLE/INDEX (the base table as declared, the logical index)", ddbindex.ErrInvalidQuery, k)
		}
		if err := rs[k].check(); err != nil {
			return fmt.Errorf("%w: Routes[%q]: %w", ddbindex.ErrInvalidQuery, k, err)
		}
	}
	return nil
}
