package ddbindex

// This file decides which form of an index serves a read, for an index that
// keeps two forms during a migration (keep= in its IndexSpec). An index with
// one form is always read in that form, and its reads ask nothing.
//
// The decision, per call, takes the first of:
//
//  1. the query's own choice ([Query.Via]), for tests and admin reads;
//  2. Options.Router, when it answers with a form the index keeps;
//  3. the declared type.
//
// Package migrate's routers (migrate.Routes, migrate.Router) route by
// partition, statically or from the control table.

// Via makes this query read the given form of its index (GSI, LSI or
// IndexTable), whatever the routing says: for tests, and for admin reads
// that compare the forms of an index that keeps two. The index must have
// that form; the call fails before any request otherwise.
func (q Query[T]) Via(form Kind) Query[T] { q.via = form; q.hasVia = true; return q }

// form picks the form of d that serves q, and says how it chose
// (routeVia, ...; telemetry.go): see the rules at the top of this file.
func (q Query[T]) form(d *layout) (*layout, string, error) {
	forms := d.decl.forms
	if q.hasVia {
		if f := formOf(forms, q.via); f != nil {
			return f, routeVia, nil
		}
		return nil, routeVia, queryErr(d.name, "Via(%s): the index has no %s form (it is type=%s%s)", q.via, q.via, d.kind, keptText(d))
	}
	r := q.t.opts.Router
	if len(forms) < 2 || r == nil {
		return d, routeDeclared, nil
	}
	_, texts, err := d.partition(q.partition)
	if err != nil {
		return d, routeDeclared, nil // planFor reports it
	}
	pk, err := partitionKeyText(d, texts)
	if err != nil {
		return d, routeDeclared, nil
	}
	if k, ok := r.Route(q.t.s.table, d.name, pk, [2]Kind{forms[0].kind, forms[1].kind}); ok {
		if f := formOf(forms, k); f != nil {
			return f, routeRouter, nil
		}
	}
	return d, routeDeclared, nil
}

func formOf(forms []*layout, k Kind) *layout {
	for _, f := range forms {
		if f.kind == k {
			return f
		}
	}
	return nil
}

func keptText(d *layout) string {
	if d.decl.keep == noKind {
		return ""
	}
	return ",keep=" + d.decl.keep.String()
}

// partitionKeyText joins a partition's canonical component texts as
// EncodeKey does: the text a Router is asked with.
func partitionKeyText(d *layout, texts []string) (string, error) {
	var b []byte
	var err error
	for i, c := range d.pk.parts {
		if b, err = appendComponent(b, i, "", c.f.canon, texts[i]); err != nil {
			return "", err
		}
	}
	return string(b), nil
}
