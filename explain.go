package ddbindex

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/ddbindex/ddbindex/internal/expr"
)

// This file shows a query's first request without sending it (Explain),
// as the index is declared and as the other kind of index.

// Explanation shows, without sending anything, the first request a query
// sends, and the same query as it would run on the other index type.
// String renders it for people.
type Explanation struct {
	// Request is the first request, to the form that serves the query: the
	// declared type, or for an index that keeps two forms the form its
	// routing picks.
	Request Request
	// Alternate is, for an index that keeps two forms, the first request to
	// the other form it keeps (the kept form, or the declared one when the
	// routing picked the kept form). For an index with one form it is the
	// first request the index would send were it declared as the other
	// type (a GSI or LSI as an index table, an index table as a GSI), with
	// the names that declaration would give it: not a form the index has,
	// and String leaves it out. It is nil for the base table, and when the
	// declaration cannot be the other type (AlternateErr says why).
	Alternate *Request
	// AlternateErr says why an index with one form has no Alternate.
	AlternateErr error

	// kept: Alternate is a form the index keeps (keep= in its IndexSpec).
	kept bool
}

// String renders the explanation: the form that serves the query, by the
// physical names the request goes to, and its first request; for an index
// that keeps two forms, the same for the other form; for an index with one
// form, that it has no other. For example:
//
//	the first request, to the gsi by_status of table tickets:
//	Query table tickets index by_status (gsi)
//	  KeyCondition: (team = "TEAM-7") AND (begins_with(_sk, "open#"))
//	  Limit: 20, ScanIndexForward: true
//	the same query on the other form the index keeps, the index table tickets-by_status:
//	Query table tickets-by_status (table)
//	  KeyCondition: (team = "TEAM-7") AND (begins_with(_sk, "open#"))
//	  Filter:       (attribute_not_exists(_deleted)) OR (_deleted <> true)
//	  Limit: 20, ScanIndexForward: true
func (e *Explanation) String() string {
	if e == nil {
		return "no explanation"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "the first request, to the %s:\n%s", e.Request.target(), e.Request)
	switch {
	case e.kept && e.Alternate != nil:
		fmt.Fprintf(&b, "\nthe same query on the other form the index keeps, the %s:\n%s", e.Alternate.target(), e.Alternate)
	case e.Request.Kind != BaseTable:
		fmt.Fprintf(&b, "\nthe index keeps this one form, which serves every read: it has no other")
	}
	return b.String()
}

// target names the form the request goes to by its physical names, e.g.
// "gsi by_status of table tickets" or "index table tickets-by_status".
func (r Request) target() string {
	var table, index string
	if r.Input != nil {
		table, index = aws.ToString(r.Input.TableName), aws.ToString(r.Input.IndexName)
	}
	switch r.Kind {
	case GSI, LSI, NativeGSI:
		return fmt.Sprintf("%s %s of table %s", r.Kind, index, table)
	case IndexTable:
		return "index table " + table
	}
	return "base table " + table
}

// Request is one DynamoDB Query request.
type Request struct {
	Kind  Kind
	Input *dynamodb.QueryInput
	// Shards are, for a sharded index (shards= in its IndexSpec), the
	// first request to every shard, in shard order: alike but for the
	// partition key value (and their Limits). Input is Shards[0]. Nil for
	// an index that is not sharded. While the Table has read no live
	// entry of the partition, so that the entries' size is unknown, a page
	// sends Shards[0] alone first and sizes the others' Limits from the
	// entries it returns: theirs here are sized without them.
	Shards []*dynamodb.QueryInput

	// none says why Page sends no request at all (empty: it sends this
	// one): Input is then the request that would read the range.
	none string
}

// String renders the request with its placeholders resolved, e.g.
//
//	Query table tickets-by_status (table)
//	  KeyCondition: (team = "TEAM-7") AND (begins_with(_sk, "open#"))
//	  Filter:       (attribute_not_exists(_deleted)) OR (_deleted <> true)
//	  Limit: 20, ScanIndexForward: false
func (r Request) String() string {
	in := r.Input
	if in == nil {
		in = &dynamodb.QueryInput{}
	}
	var b strings.Builder
	target := "table " + aws.ToString(in.TableName)
	if in.IndexName != nil {
		target += " index " + aws.ToString(in.IndexName)
	}
	if len(r.Shards) > 0 {
		fmt.Fprintf(&b, "Query %s (%s, %d shards)\n", target, r.Kind, len(r.Shards))
	} else {
		fmt.Fprintf(&b, "Query %s (%s)\n", target, r.Kind)
	}
	resolve := func(expr string) string {
		return resolveExpr(expr, in.ExpressionAttributeNames, in.ExpressionAttributeValues)
	}
	fmt.Fprintf(&b, "  KeyCondition: %s\n", resolve(aws.ToString(in.KeyConditionExpression)))
	if in.FilterExpression != nil {
		fmt.Fprintf(&b, "  Filter:       %s\n", resolve(aws.ToString(in.FilterExpression)))
	}
	if in.ProjectionExpression != nil {
		fmt.Fprintf(&b, "  Projection:   %s\n", resolve(aws.ToString(in.ProjectionExpression)))
	}
	if in.ExclusiveStartKey != nil {
		keys := slices.Sorted(maps.Keys(in.ExclusiveStartKey))
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = k + "=" + avString(in.ExclusiveStartKey[k])
		}
		fmt.Fprintf(&b, "  ExclusiveStartKey: %s\n", strings.Join(parts, ", "))
	}
	fmt.Fprintf(&b, "  Limit: %d, ScanIndexForward: %t", aws.ToInt32(in.Limit), aws.ToBool(in.ScanIndexForward))
	if aws.ToBool(in.ConsistentRead) {
		b.WriteString(", ConsistentRead: true")
	}
	if len(r.Shards) > 0 {
		parts := make([]string, len(r.Shards))
		for i, sh := range r.Shards {
			parts[i] = fmt.Sprintf("%s (Limit %d)", avString(expr.ShardPK(sh.ExpressionAttributeValues)), aws.ToInt32(sh.Limit))
		}
		fmt.Fprintf(&b, "\n  and the same request to every shard, in parallel, merged in order: %s", strings.Join(parts, ", "))
	}
	if r.none != "" {
		fmt.Fprintf(&b, "\n  not sent: %s", r.none)
	}
	return b.String()
}

// Why Page sends no request (Request.none).
const (
	noRangeRequest  = "the sort condition's range is empty"
	noCursorRequest = "the cursor lies past the sort condition's range, so nothing follows it"
)

// exprFuncs writes the builder's "begins_with (a, b)" as "begins_with(a, b)".
var exprFuncs = strings.NewReplacer("attribute_exists (", "attribute_exists(",
	"attribute_not_exists (", "attribute_not_exists(", "attribute_type (", "attribute_type(",
	"begins_with (", "begins_with(", "contains (", "contains(", "size (", "size(")

// resolveExpr replaces the placeholders (#0, :0, ...) of a built expression
// in one pass, so that a resolved name or value is never read again as a
// placeholder: a value "o:1" stays "o:1" even when :1 is a placeholder too.
func resolveExpr(expr string, names map[string]string, values map[string]types.AttributeValue) string {
	var b strings.Builder
	lit := 0 // start of the pending literal text
	flush := func(end int) { b.WriteString(exprFuncs.Replace(expr[lit:end])) }
	for i := 0; i < len(expr); {
		c := expr[i]
		if c != '#' && c != ':' {
			i++
			continue
		}
		j := i + 1
		for j < len(expr) && (expr[j] == '_' || '0' <= expr[j] && expr[j] <= '9' ||
			'a' <= expr[j] && expr[j] <= 'z' || 'A' <= expr[j] && expr[j] <= 'Z') {
			j++
		}
		var sub string
		var ok bool
		if c == '#' {
			sub, ok = names[expr[i:j]]
		} else if v, has := values[expr[i:j]]; has {
			sub, ok = avString(v), true
		}
		if !ok {
			i = j
			continue
		}
		flush(i)
		b.WriteString(sub)
		i, lit = j, j
	}
	flush(len(expr))
	return b.String()
}

// Explain translates the query as Page would, and returns the first request
// Page would send now (its Limit includes the item Page reads ahead, and is
// sized from what earlier calls read in the partition) and the same query on
// the other index type. Where Page sends no request (an empty range, or a
// cursor past the sort condition's range) the request shown is the one that
// would read the range, and String says that it is not sent. Explain sends
// nothing. Errors are those Page would return before any request (invalid
// query or cursor).
func (q Query[T]) Explain() (*Explanation, error) {
	if err := q.t.usable("Explain", ErrInvalidQuery); err != nil {
		return nil, err
	}
	d, err := q.t.index(q.index)
	if err != nil {
		return nil, err
	}
	if d, _, err = q.form(d); err != nil {
		return nil, err
	}
	// first takes the query it translates: the alternate may translate a
	// changed copy. It builds the request as Page does, with the same code.
	first := func(q Query[T], d *layout) (*Request, error) {
		p, err := q.planFor(d)
		if err != nil {
			return nil, err
		}
		limit := q.limit
		if limit == 0 {
			limit = defaultPageSize
		}
		want := pageWant(limit, true)
		r := &Request{Kind: d.kind}
		if p.shard != nil {
			m := newMerger(q, p, true, nil)
			for i, st := range m.streams {
				r.Shards = append(r.Shards, st.pg.request(m.firstLimit(i, want)))
			}
			if len(r.Shards) > 0 {
				r.Input = r.Shards[0]
			} else {
				in := p.shardInput(0)
				r.Input, r.none = &in, noRangeRequest
			}
		} else {
			pg := newPager(q, p, true, nil)
			size, _ := pg.size.request(0, limit, want)
			r.Input = pg.request(size)
		}
		if p.done {
			r.none = noCursorRequest
		}
		return r, nil
	}
	r, err := first(q, d)
	if err != nil {
		return nil, err
	}
	e := &Explanation{Request: *r}
	if alt, aerr := d.alternate(); aerr != nil {
		e.AlternateErr = aerr
	} else if alt != nil {
		e.kept = len(d.decl.forms) > 1
		cq := q
		if !alt.consistent {
			// A GSI cannot serve a consistent read: show what it would send
			// without one. (An index table serves it, and keeps it.)
			cq.consistent = false
		}
		if e.Alternate, err = first(cq, alt); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// alternate returns the layout of d's declaration as the other kind of
// index: the kept form when the declaration keeps one, else the kind
// Kind.other names, laid out by the same function, layoutOf, that lays out
// the declared kind. It is nil for the base table, which has no other kind, and
// fails for a declaration the other kind cannot hold.
func (d *layout) alternate() (*layout, error) {
	for _, f := range d.decl.forms {
		if f != d {
			return f, nil
		}
	}
	k, ok := d.kind.other()
	if !ok {
		return nil, nil
	}
	return layoutOf(d.decl, k)
}
