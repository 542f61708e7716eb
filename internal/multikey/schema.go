package multikey

import (
	"context"
	"maps"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// The key schema rules, from the Developer Guide's "Multi-attribute key
// schema" and from the API reference of KeySchemaElement, CreateTable and
// UpdateTable: a base table and an LSI keep one HASH element and at most one
// RANGE element (an LSI's HASH being the table's); a GSI has one to four
// HASH elements, then zero to four RANGE elements, no attribute twice; every
// key attribute has an AttributeDefinitions entry, and (CreateTable) every
// AttributeDefinitions entry is a key attribute of the table or of one of
// its indexes.

func defsOf(defs []types.AttributeDefinition) map[string]types.ScalarAttributeType {
	out := map[string]types.ScalarAttributeType{}
	for _, d := range defs {
		out[aws.ToString(d.AttributeName)] = d.AttributeType
	}
	return out
}

func checkDefined(ks []types.KeySchemaElement, defs map[string]types.ScalarAttributeType, where string) error {
	for _, e := range ks {
		if _, ok := defs[aws.ToString(e.AttributeName)]; !ok {
			return validation("One or more parameter values were invalid: Some index key attributes are not defined in AttributeDefinitions. Keys: [%s], AttributeDefinitions: %s", aws.ToString(e.AttributeName), where)
		}
	}
	return nil
}

// checkUsed refuses AttributeDefinitions that no key schema of a
// CreateTable uses, as DynamoDB does.
func checkUsed(p *dynamodb.CreateTableInput) error {
	used := map[string]bool{}
	names(p.KeySchema, used)
	for _, l := range p.LocalSecondaryIndexes {
		names(l.KeySchema, used)
	}
	for _, g := range p.GlobalSecondaryIndexes {
		names(g.KeySchema, used)
	}
	var defined []string
	unused := false
	for _, d := range p.AttributeDefinitions {
		n := aws.ToString(d.AttributeName)
		defined = append(defined, n)
		unused = unused || !used[n]
	}
	if !unused {
		return nil
	}
	keys := slices.Sorted(maps.Keys(used))
	return validation("One or more parameter values were invalid: Some AttributeDefinitions are not used. AttributeDefinitions: [%s], keys used: [%s]", strings.Join(defined, ", "), strings.Join(keys, ", "))
}

// checkSingle checks a base table's or an LSI's key schema.
func checkSingle(ks []types.KeySchemaElement, what string) error {
	switch {
	case len(ks) == 0 || len(ks) > 2:
		return validation("1 validation error detected: Value at '%s.keySchema' failed to satisfy constraint: Member must have length less than or equal to 2 and greater than or equal to 1", what)
	case ks[0].KeyType != types.KeyTypeHash:
		return validation("Invalid KeySchema: The first KeySchemaElement is not a HASH key type (%s)", what)
	case len(ks) == 2 && ks[1].KeyType != types.KeyTypeRange:
		return validation("Invalid KeySchema: The second KeySchemaElement is not a RANGE key type (%s): a multi-attribute key is only for a global secondary index", what)
	}
	return nil
}

// checkGSI checks a GSI's key schema.
func checkGSI(name string, ks []types.KeySchemaElement) error {
	var hash, rng int
	seen := map[string]bool{}
	for _, e := range ks {
		n := aws.ToString(e.AttributeName)
		if seen[n] {
			return validation("Invalid KeySchema: Some index key attribute have duplicate names: %s (index %s)", n, name)
		}
		seen[n] = true
		switch e.KeyType {
		case types.KeyTypeHash:
			if rng > 0 {
				return validation("Invalid KeySchema: every HASH KeySchemaElement must come before every RANGE one (index %s)", name)
			}
			hash++
		case types.KeyTypeRange:
			rng++
		default:
			return validation("Invalid KeySchema: key type %q (index %s)", e.KeyType, name)
		}
	}
	switch {
	case hash == 0:
		return validation("Invalid KeySchema: The first KeySchemaElement is not a HASH key type (index %s)", name)
	case hash > maxKeyAttrs:
		return validation("Invalid KeySchema: at most %d HASH KeySchemaElements, got %d (index %s)", maxKeyAttrs, hash, name)
	case rng > maxKeyAttrs:
		return validation("Invalid KeySchema: at most %d RANGE KeySchemaElements, got %d (index %s)", maxKeyAttrs, rng, name)
	}
	return nil
}

// isMulti reports whether a GSI key schema needs the double.
func isMulti(ks []types.KeySchemaElement) bool {
	var hash, rng int
	for _, e := range ks {
		if e.KeyType == types.KeyTypeHash {
			hash++
		} else {
			rng++
		}
	}
	return hash > 1 || rng > 1
}

// hiddenGSI is the GSI that serves ix on the server.
func hiddenGSI(ix *index, base []string) (ks []types.KeySchemaElement, proj *types.Projection) {
	ks = []types.KeySchemaElement{{AttributeName: aws.String(ix.hashAttr), KeyType: types.KeyTypeHash}}
	if ix.rngAttr != "" {
		ks = append(ks, types.KeySchemaElement{AttributeName: aws.String(ix.rngAttr), KeyType: types.KeyTypeRange})
	}
	// The index's own key attributes are projected into it, as DynamoDB
	// projects every index key attribute.
	p := ix.proj
	if p.ProjectionType == types.ProjectionTypeAll {
		return ks, &types.Projection{ProjectionType: types.ProjectionTypeAll}
	}
	inc := slices.Clone(p.NonKeyAttributes)
	for _, a := range append(slices.Clone(ix.hash), ix.rng...) {
		if !slices.Contains(base, a.name) && !slices.Contains(inc, a.name) {
			inc = append(inc, a.name)
		}
	}
	if len(inc) == 0 {
		return ks, &types.Projection{ProjectionType: types.ProjectionTypeKeysOnly}
	}
	return ks, &types.Projection{ProjectionType: types.ProjectionTypeInclude, NonKeyAttributes: inc}
}

func hiddenDefs(ix *index) []types.AttributeDefinition {
	out := []types.AttributeDefinition{{AttributeName: aws.String(ix.hashAttr), AttributeType: types.ScalarAttributeTypeS}}
	if ix.rngAttr != "" {
		out = append(out, types.AttributeDefinition{AttributeName: aws.String(ix.rngAttr), AttributeType: types.ScalarAttributeTypeS})
	}
	return out
}

// keepDefs returns defs without the attributes that only multi-attribute
// GSIs use (the server's schema does not name them), plus extra.
func keepDefs(defs []types.AttributeDefinition, usedElsewhere, multiOnly map[string]bool, extra []types.AttributeDefinition) []types.AttributeDefinition {
	var out []types.AttributeDefinition
	for _, d := range defs {
		n := aws.ToString(d.AttributeName)
		if multiOnly[n] && !usedElsewhere[n] {
			continue
		}
		out = append(out, d)
	}
	return append(out, extra...)
}

func names(ks []types.KeySchemaElement, into map[string]bool) {
	for _, e := range ks {
		into[aws.ToString(e.AttributeName)] = true
	}
}

func (d *Double) createTable(p *dynamodb.CreateTableInput) (*dynamodb.CreateTableInput, error) {
	defs := defsOf(p.AttributeDefinitions)
	if err := checkSingle(p.KeySchema, "createTableInput"); err != nil {
		return nil, err
	}
	if err := checkDefined(p.KeySchema, defs, "table"); err != nil {
		return nil, err
	}
	var base []string
	for _, e := range p.KeySchema {
		base = append(base, aws.ToString(e.AttributeName))
	}
	used, multiOnly := map[string]bool{}, map[string]bool{}
	names(p.KeySchema, used)
	for _, l := range p.LocalSecondaryIndexes {
		if err := checkSingle(l.KeySchema, "localSecondaryIndexes."+aws.ToString(l.IndexName)); err != nil {
			return nil, err
		}
		if len(l.KeySchema) != 2 {
			return nil, validation("Invalid KeySchema: a local secondary index has one HASH and one RANGE KeySchemaElement (index %s)", aws.ToString(l.IndexName))
		}
		if err := checkDefined(l.KeySchema, defs, "index "+aws.ToString(l.IndexName)); err != nil {
			return nil, err
		}
		names(l.KeySchema, used)
	}
	q := *p
	q.GlobalSecondaryIndexes = nil
	var extra []types.AttributeDefinition
	for _, g := range p.GlobalSecondaryIndexes {
		if err := checkGSI(aws.ToString(g.IndexName), g.KeySchema); err != nil {
			return nil, err
		}
		if err := checkDefined(g.KeySchema, defs, "index "+aws.ToString(g.IndexName)); err != nil {
			return nil, err
		}
		if !isMulti(g.KeySchema) {
			names(g.KeySchema, used)
			q.GlobalSecondaryIndexes = append(q.GlobalSecondaryIndexes, g)
			continue
		}
		ix := newIndex(aws.ToString(p.TableName), aws.ToString(g.IndexName), g.KeySchema, defs, g.Projection)
		d.remember(ix)
		names(g.KeySchema, multiOnly)
		h := g
		h.KeySchema, h.Projection = hiddenGSI(ix, base)
		q.GlobalSecondaryIndexes = append(q.GlobalSecondaryIndexes, h)
		extra = append(extra, hiddenDefs(ix)...)
	}
	if err := checkUsed(p); err != nil {
		return nil, err
	}
	if len(extra) == 0 {
		return p, nil
	}
	q.AttributeDefinitions = keepDefs(p.AttributeDefinitions, used, multiOnly, extra)
	return &q, nil
}

// updateTable checks and rewrites an UpdateTable's GSI creations; created
// names those the double serves.
func (d *Double) updateTable(ctx context.Context, p *dynamodb.UpdateTableInput) (*dynamodb.UpdateTableInput, []string, error) {
	var creates bool
	for _, u := range p.GlobalSecondaryIndexUpdates {
		creates = creates || u.Create != nil
	}
	if !creates {
		return p, nil, nil
	}
	desc, err := d.raw.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: p.TableName})
	if err != nil {
		return p, nil, nil // the request itself will fail the same way
	}
	defs := defsOf(desc.Table.AttributeDefinitions)
	for k, v := range defsOf(p.AttributeDefinitions) {
		defs[k] = v
	}
	var base []string
	used, multiOnly := map[string]bool{}, map[string]bool{}
	for _, e := range desc.Table.KeySchema {
		base = append(base, aws.ToString(e.AttributeName))
	}
	names(desc.Table.KeySchema, used)
	for _, l := range desc.Table.LocalSecondaryIndexes {
		names(l.KeySchema, used)
	}
	for _, g := range desc.Table.GlobalSecondaryIndexes {
		names(g.KeySchema, used)
	}
	q := *p
	q.GlobalSecondaryIndexUpdates = nil
	var extra []types.AttributeDefinition
	var created []string
	for _, u := range p.GlobalSecondaryIndexUpdates {
		if u.Create == nil {
			q.GlobalSecondaryIndexUpdates = append(q.GlobalSecondaryIndexUpdates, u)
			continue
		}
		c := u.Create
		if err := checkGSI(aws.ToString(c.IndexName), c.KeySchema); err != nil {
			return nil, nil, err
		}
		if err := checkDefined(c.KeySchema, defsOf(p.AttributeDefinitions), "index "+aws.ToString(c.IndexName)); err != nil {
			return nil, nil, err
		}
		if !isMulti(c.KeySchema) {
			names(c.KeySchema, used)
			q.GlobalSecondaryIndexUpdates = append(q.GlobalSecondaryIndexUpdates, u)
			continue
		}
		ix := newIndex(aws.ToString(p.TableName), aws.ToString(c.IndexName), c.KeySchema, defs, c.Projection)
		d.remember(ix)
		names(c.KeySchema, multiOnly)
		h := *c
		h.KeySchema, h.Projection = hiddenGSI(ix, base)
		q.GlobalSecondaryIndexUpdates = append(q.GlobalSecondaryIndexUpdates, types.GlobalSecondaryIndexUpdate{Create: &h})
		extra = append(extra, hiddenDefs(ix)...)
		created = append(created, ix.name)
	}
	if len(created) == 0 {
		return p, nil, nil
	}
	q.AttributeDefinitions = keepDefs(p.AttributeDefinitions, used, multiOnly, extra)
	return &q, created, nil
}

// describeOut shows the server's description of a table as DynamoDB would
// describe it: multi-attribute GSIs with their declared key schemas and
// projections, and no hidden attribute.
func (d *Double) describeOut(desc *types.TableDescription) {
	if desc == nil {
		return
	}
	defs := map[string]types.ScalarAttributeType{}
	var order []string
	add := func(n string, t types.ScalarAttributeType) {
		if _, ok := defs[n]; !ok {
			order = append(order, n)
		}
		defs[n] = t
	}
	for _, a := range desc.AttributeDefinitions {
		if n := aws.ToString(a.AttributeName); !isHidden(n) {
			add(n, a.AttributeType)
		}
	}
	for i, g := range desc.GlobalSecondaryIndexes {
		ix := d.indexFromHidden(g)
		if ix == nil {
			continue
		}
		g.KeySchema = ix.keySchema()
		p := ix.proj
		g.Projection = &p
		desc.GlobalSecondaryIndexes[i] = g
		for _, a := range append(slices.Clone(ix.hash), ix.rng...) {
			add(a.name, a.typ)
		}
	}
	desc.AttributeDefinitions = desc.AttributeDefinitions[:0]
	for _, n := range order {
		desc.AttributeDefinitions = append(desc.AttributeDefinitions, types.AttributeDefinition{AttributeName: aws.String(n), AttributeType: defs[n]})
	}
}
