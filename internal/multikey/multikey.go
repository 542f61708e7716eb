// Package multikey is a test double of DynamoDB's multi-attribute GSI keys,
// served on top of a local DynamoDB-compatible server that does not have
// them.
//
// Since November 2025 a DynamoDB global secondary index key may have up to
// four partition key (HASH) and four sort key (RANGE) attributes, each of
// its own type (Amazon DynamoDB Developer Guide, "Using Global Secondary
// Indexes in DynamoDB", section "Multi-attribute key schema",
// https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/GSI.html#GSI.MultiAttributeKeys,
// and the design pattern "Multi-attribute keys",
// https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/GSI.DesignPattern.MultiAttributeKeys.html).
// dynoxide accepts such a key schema but indexes by its first HASH
// attribute alone, indexes items that miss key attributes and refuses a
// condition on a second attribute; dynalite refuses the schema. The double
// sits in a DynamoDB client's middleware stack ([Double.Option]) and makes
// the server behave as DynamoDB documents:
//
//   - It refuses what DynamoDB refuses (see [Double] for each rule): a
//     multi-attribute key on a base table or LSI, a GSI key schema with a
//     RANGE element before a HASH one, more than four of either, a RANGE-only
//     or duplicated one, an attribute without an AttributeDefinitions
//     entry, or (in CreateTable) an AttributeDefinitions entry that no key
//     schema uses; a Query that does not give every partition attribute with =,
//     that skips a sort attribute, that ranges over one before the last it
//     names, or that applies begins_with to a Number; a FilterExpression on a
//     key attribute of the queried index.
//   - It serves each multi-attribute GSI as a single-attribute GSI of the
//     same name over two hidden String attributes, "_mkh.<digest>" and
//     "_mkr.<digest>", which hold an order-preserving encoding of the
//     partition and sort attribute tuples (encode.go). The digest is of the
//     table, the index and its declaration, which the double keeps: it
//     recognises the multi-attribute GSIs of the tables created or updated
//     through it (in this process), and sees any other GSI over a hidden
//     attribute as the server describes it. Hidden attributes are
//     written with every item that has all the key attributes and are absent
//     otherwise (DynamoDB's sparse indexes), and are stripped from every
//     answer; DescribeTable shows the key schema as declared.
//   - A GSI added by UpdateTable is backfilled before UpdateTable answers,
//     as DynamoDB backfills it before the index becomes ACTIVE.
//
// Writes other than a Put (UpdateItem, and Updates in TransactWriteItems) are
// applied first, then the item is read back and its hidden attributes are
// set to match, conditioned on the key attributes being as read, so a
// concurrent writer cannot leave them stale. Between the two an index read
// may miss the change, as a read of a real GSI may lag its table.
//
// Known differences from DynamoDB, none of which the project's code relies
// on: an UpdateItem that gives a key attribute of a multi-attribute GSI the
// wrong type or an empty value is applied (DynamoDB refuses it) and leaves
// the item out of the index; an encoded tuple is limited to 512 bytes (a
// longer one is refused); Streams records carry the hidden attributes and a
// MODIFY record for each repair; consumed capacity counts the hidden
// attributes.
package multikey

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"
)

const (
	hashPrefix = "_mkh."
	rngPrefix  = "_mkr."
	// DynamoDB's limits for a multi-attribute key.
	maxKeyAttrs = 4
)

// keyAttr is one attribute of a key schema.
type keyAttr struct {
	name string
	typ  types.ScalarAttributeType
}

// index is a multi-attribute GSI as declared.
type index struct {
	name     string
	hash     []keyAttr
	rng      []keyAttr
	proj     types.Projection
	hashAttr string // the hidden attributes that serve it
	rngAttr  string // "" without sort attributes
}

func (ix *index) keyType(attr string) types.KeyType {
	for _, a := range ix.hash {
		if a.name == attr {
			return types.KeyTypeHash
		}
	}
	for _, a := range ix.rng {
		if a.name == attr {
			return types.KeyTypeRange
		}
	}
	return ""
}

// spec is what identifies a multi-attribute GSI as declared: its key
// attributes with their types and its projection.
type spec struct {
	H   [][2]string `json:"h"`
	R   [][2]string `json:"r,omitempty"`
	P   string      `json:"p"`
	Inc []string    `json:"i,omitempty"`
}

// hiddenDigest names the hidden attributes of an index: a digest of the
// table, the index and its spec, short enough for any key schema DynamoDB
// allows (four HASH and four RANGE attributes of up to 255 characters
// each) and different for each (table, index, declaration), so that an
// index dropped and declared again differently gets new hidden attributes.
func hiddenDigest(table, name string, sp spec) string {
	js, _ := json.Marshal(sp)
	h := sha256.New()
	for _, part := range [][]byte{[]byte(table), []byte(name), js} {
		h.Write([]byte(strconv.Itoa(len(part)) + ":"))
		h.Write(part)
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

func newIndex(table, name string, ks []types.KeySchemaElement, defs map[string]types.ScalarAttributeType, proj *types.Projection) *index {
	ix := &index{name: name}
	sp := spec{}
	for _, e := range ks {
		a := keyAttr{name: aws.ToString(e.AttributeName), typ: defs[aws.ToString(e.AttributeName)]}
		if e.KeyType == types.KeyTypeHash {
			ix.hash = append(ix.hash, a)
			sp.H = append(sp.H, [2]string{a.name, string(a.typ)})
		} else {
			ix.rng = append(ix.rng, a)
			sp.R = append(sp.R, [2]string{a.name, string(a.typ)})
		}
	}
	if proj != nil {
		ix.proj = *proj
		ix.proj.NonKeyAttributes = slices.Clone(proj.NonKeyAttributes)
		sp.P, sp.Inc = string(proj.ProjectionType), proj.NonKeyAttributes
	}
	digest := hiddenDigest(table, name, sp)
	ix.hashAttr = hashPrefix + digest
	if len(ix.rng) > 0 {
		ix.rngAttr = rngPrefix + digest
	}
	return ix
}

// remember records an index the double serves, under its hidden partition
// attribute, which is all the server's description of the hidden GSI
// gives to recognise it by.
func (d *Double) remember(ix *index) {
	d.mu.Lock()
	d.indexes[ix.hashAttr] = ix
	d.mu.Unlock()
}

// indexFromHidden returns the index that the server's GSI g serves; nil
// when g is not one the double made.
func (d *Double) indexFromHidden(g types.GlobalSecondaryIndexDescription) *index {
	if len(g.KeySchema) == 0 || !strings.HasPrefix(aws.ToString(g.KeySchema[0].AttributeName), hashPrefix) {
		return nil
	}
	d.mu.Lock()
	ix := d.indexes[aws.ToString(g.KeySchema[0].AttributeName)]
	d.mu.Unlock()
	if ix == nil || ix.name != aws.ToString(g.IndexName) {
		return nil
	}
	return ix
}

func (ix *index) keySchema() []types.KeySchemaElement {
	var ks []types.KeySchemaElement
	for _, a := range ix.hash {
		ks = append(ks, types.KeySchemaElement{AttributeName: aws.String(a.name), KeyType: types.KeyTypeHash})
	}
	for _, a := range ix.rng {
		ks = append(ks, types.KeySchemaElement{AttributeName: aws.String(a.name), KeyType: types.KeyTypeRange})
	}
	return ks
}

// hidden computes the hidden attribute values of an item: ok is false when
// the item misses a key attribute (it is not in the index).
func (ix *index) hidden(item map[string]types.AttributeValue) (h, r *types.AttributeValueMemberS, ok bool, err error) {
	enc := func(attrs []keyAttr) ([]byte, bool, error) {
		var b []byte
		for _, a := range attrs {
			av, present := item[a.name]
			if !present {
				return nil, false, nil
			}
			if avType(av) != string(a.typ) {
				return nil, false, validation("One or more parameter values were invalid: Type mismatch for Index Key %s Expected: %s Actual: %s IndexName: %s", a.name, a.typ, avType(av), ix.name)
			}
			if isEmpty(av) {
				return nil, false, validation("One or more parameter values are not valid. A value specified for a secondary index key is not supported. The AttributeValue for a key attribute cannot contain an empty %s value. IndexName: %s, IndexKey: %s", avType(av), ix.name, a.name)
			}
			var err error
			if b, err = encodeValue(b, a.typ, av); err != nil {
				return nil, false, validation("%v", err)
			}
		}
		if len(b) > maxHiddenBytes {
			return nil, false, validation("multikey double: the key attributes of index %s encode to %d bytes, over the %d the double supports", ix.name, len(b), maxHiddenBytes)
		}
		return b, true, nil
	}
	hb, hok, herr := enc(ix.hash)
	rb, rok, rerr := enc(ix.rng)
	if err := errors.Join(herr, rerr); err != nil {
		return nil, nil, false, err
	}
	if !hok || !rok {
		return nil, nil, false, nil
	}
	h = hexS(hb)
	if ix.rngAttr != "" {
		r = hexS(rb)
	}
	return h, r, true, nil
}

// components reads the key attributes back from a hidden key (a
// LastEvaluatedKey).
func (ix *index) components(key map[string]types.AttributeValue) (map[string]types.AttributeValue, error) {
	out := map[string]types.AttributeValue{}
	for _, part := range []struct {
		attr  string
		attrs []keyAttr
	}{{ix.hashAttr, ix.hash}, {ix.rngAttr, ix.rng}} {
		if part.attr == "" {
			continue
		}
		s, ok := key[part.attr].(*types.AttributeValueMemberS)
		if !ok {
			return nil, fmt.Errorf("multikey double: key without %s", part.attr)
		}
		b, err := hex.DecodeString(s.Value)
		if err != nil {
			return nil, err
		}
		typs := make([]types.ScalarAttributeType, len(part.attrs))
		for i, a := range part.attrs {
			typs[i] = a.typ
		}
		vals, err := decodeTuple(b, typs)
		if err != nil {
			return nil, fmt.Errorf("multikey double: %s: %w", part.attr, err)
		}
		for i, a := range part.attrs {
			out[a.name] = vals[i]
		}
	}
	return out, nil
}

// table is what the double knows of a table: its base key and its
// multi-attribute GSIs.
type table struct {
	pk, sk string
	multi  map[string]*index
}

// Double serves multi-attribute GSI keys on top of a server without them.
// Make one per server with [New] and add it to clients with [Double.Option].
type Double struct {
	raw *dynamodb.Client // the server, without the double

	mu      sync.Mutex
	tables  map[string]*table
	indexes map[string]*index // by hidden partition attribute
}

// New returns a double whose own requests (descriptions, repairs of hidden
// attributes, backfills) go to the server through raw, a client without the
// double.
func New(raw *dynamodb.Client) *Double {
	return &Double{raw: raw, tables: map[string]*table{}, indexes: map[string]*index{}}
}

// Option adds the double to a client's middleware stack:
// dynamodb.New(opts, d.Option).
func (d *Double) Option(o *dynamodb.Options) {
	o.APIOptions = append(slices.Clip(o.APIOptions), func(s *middleware.Stack) error {
		return s.Initialize.Add(middleware.InitializeMiddlewareFunc("multikey", d.handle), middleware.Before)
	})
}

// validation is the ValidationException DynamoDB answers a request it
// refuses with.
func validation(format string, args ...any) error {
	return &smithy.GenericAPIError{Code: "ValidationException", Message: fmt.Sprintf(format, args...), Fault: smithy.FaultClient}
}

func asValidation(err error) error {
	var api smithy.APIError
	if err == nil || errors.As(err, &api) {
		return err
	}
	return validation("%v", err)
}

// info returns what the double knows of a table, describing it on first
// use.
func (d *Double) info(ctx context.Context, name string) (*table, error) {
	d.mu.Lock()
	t, ok := d.tables[name]
	d.mu.Unlock()
	if ok {
		return t, nil
	}
	out, err := d.raw.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
	if err != nil {
		var nf *types.ResourceNotFoundException
		if errors.As(err, &nf) {
			return &table{}, nil // the request itself will say so
		}
		return nil, err
	}
	return d.learn(out.Table), nil
}

// learn records a table from the server's description of it.
func (d *Double) learn(desc *types.TableDescription) *table {
	if desc == nil {
		return &table{}
	}
	t := &table{multi: map[string]*index{}}
	for _, e := range desc.KeySchema {
		if e.KeyType == types.KeyTypeHash {
			t.pk = aws.ToString(e.AttributeName)
		} else {
			t.sk = aws.ToString(e.AttributeName)
		}
	}
	for _, g := range desc.GlobalSecondaryIndexes {
		if ix := d.indexFromHidden(g); ix != nil {
			t.multi[ix.name] = ix
		}
	}
	d.mu.Lock()
	d.tables[aws.ToString(desc.TableName)] = t
	d.mu.Unlock()
	return t
}

func (d *Double) forget(name string) {
	d.mu.Lock()
	delete(d.tables, name)
	d.mu.Unlock()
}

// handle is the middleware: it rewrites each request the double concerns
// and each answer.
func (d *Double) handle(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
	var after func(result any) error
	var err error
	switch p := in.Parameters.(type) {
	case *dynamodb.CreateTableInput:
		in.Parameters, err = d.createTable(p)
		after = func(r any) error {
			d.forget(aws.ToString(p.TableName))
			d.describeOut(r.(*dynamodb.CreateTableOutput).TableDescription)
			return nil
		}
	case *dynamodb.UpdateTableInput:
		var created []string
		in.Parameters, created, err = d.updateTable(ctx, p)
		after = func(r any) error {
			d.forget(aws.ToString(p.TableName))
			if len(created) > 0 {
				if err := d.backfill(ctx, aws.ToString(p.TableName)); err != nil {
					return err
				}
			}
			d.describeOut(r.(*dynamodb.UpdateTableOutput).TableDescription)
			return nil
		}
	case *dynamodb.DescribeTableInput:
		after = func(r any) error {
			desc := r.(*dynamodb.DescribeTableOutput).Table
			d.learn(desc)
			d.describeOut(desc)
			return nil
		}
	case *dynamodb.DeleteTableInput:
		d.forget(aws.ToString(p.TableName))
		after = func(r any) error {
			d.forget(aws.ToString(p.TableName))
			d.describeOut(r.(*dynamodb.DeleteTableOutput).TableDescription)
			return nil
		}
	case *dynamodb.PutItemInput:
		var t *table
		if t, err = d.info(ctx, aws.ToString(p.TableName)); err == nil {
			q := *p
			if q.Item, err = withHidden(t, p.Item); err == nil {
				in.Parameters = &q
			}
		}
		after = func(r any) error { strip(r.(*dynamodb.PutItemOutput).Attributes); return nil }
	case *dynamodb.UpdateItemInput:
		after = func(r any) error {
			strip(r.(*dynamodb.UpdateItemOutput).Attributes)
			return d.repair(ctx, aws.ToString(p.TableName), p.Key)
		}
	case *dynamodb.DeleteItemInput:
		after = func(r any) error { strip(r.(*dynamodb.DeleteItemOutput).Attributes); return nil }
	case *dynamodb.GetItemInput:
		after = func(r any) error { strip(r.(*dynamodb.GetItemOutput).Item); return nil }
	case *dynamodb.BatchGetItemInput:
		after = func(r any) error {
			for _, items := range r.(*dynamodb.BatchGetItemOutput).Responses {
				stripAll(items)
			}
			return nil
		}
	case *dynamodb.TransactGetItemsInput:
		after = func(r any) error {
			for _, resp := range r.(*dynamodb.TransactGetItemsOutput).Responses {
				strip(resp.Item)
			}
			return nil
		}
	case *dynamodb.QueryInput:
		var ix *index
		in.Parameters, ix, err = d.query(ctx, p)
		after = func(r any) error {
			out := r.(*dynamodb.QueryOutput)
			stripAll(out.Items)
			return lastKey(ix, &out.LastEvaluatedKey)
		}
	case *dynamodb.ScanInput:
		var ix *index
		in.Parameters, ix, err = d.scan(ctx, p)
		after = func(r any) error {
			out := r.(*dynamodb.ScanOutput)
			stripAll(out.Items)
			return lastKey(ix, &out.LastEvaluatedKey)
		}
	case *dynamodb.TransactWriteItemsInput:
		var updates []types.Update
		in.Parameters, updates, err = d.transactWrite(ctx, p)
		after = func(any) error {
			for _, u := range updates {
				if err := d.repair(ctx, aws.ToString(u.TableName), u.Key); err != nil {
					return err
				}
			}
			return nil
		}
	case *dynamodb.BatchWriteItemInput:
		in.Parameters, err = d.batchWrite(ctx, p)
		after = func(r any) error {
			for _, reqs := range r.(*dynamodb.BatchWriteItemOutput).UnprocessedItems {
				for _, w := range reqs {
					if w.PutRequest != nil {
						strip(w.PutRequest.Item)
					}
				}
			}
			return nil
		}
	}
	if err != nil {
		return middleware.InitializeOutput{}, middleware.Metadata{}, asValidation(err)
	}
	out, md, err := next.HandleInitialize(ctx, in)
	if err != nil {
		stripError(err)
		return out, md, err
	}
	if after != nil && out.Result != nil {
		if aerr := after(out.Result); aerr != nil {
			return out, md, fmt.Errorf("multikey double: %w", aerr)
		}
	}
	return out, md, nil
}

// isHidden reports whether an attribute is one of the double's own.
func isHidden(name string) bool {
	return strings.HasPrefix(name, hashPrefix) || strings.HasPrefix(name, rngPrefix)
}

func strip(item map[string]types.AttributeValue) {
	maps.DeleteFunc(item, func(k string, _ types.AttributeValue) bool { return isHidden(k) })
}

func stripAll(items []map[string]types.AttributeValue) {
	for _, it := range items {
		strip(it)
	}
}

// stripError strips the items a refused write's error carries.
func stripError(err error) {
	var cc *types.ConditionalCheckFailedException
	if errors.As(err, &cc) {
		strip(cc.Item)
	}
	var tc *types.TransactionCanceledException
	if errors.As(err, &tc) {
		for _, r := range tc.CancellationReasons {
			strip(r.Item)
		}
	}
}

// withHidden returns item with the hidden attributes of every
// multi-attribute GSI of t that it belongs to, or an error where DynamoDB
// would refuse the item.
func withHidden(t *table, item map[string]types.AttributeValue) (map[string]types.AttributeValue, error) {
	if len(t.multi) == 0 {
		return item, nil
	}
	out := maps.Clone(item)
	strip(out)
	for _, ix := range t.multi {
		h, r, ok, err := ix.hidden(item)
		if err != nil {
			return nil, err
		}
		if ok {
			out[ix.hashAttr] = h
			if r != nil {
				out[ix.rngAttr] = r
			}
		}
	}
	return out, nil
}

// lastKey turns a LastEvaluatedKey of a hidden GSI back into the key
// DynamoDB returns: the base key and every key attribute of the index.
func lastKey(ix *index, key *map[string]types.AttributeValue) error {
	if ix == nil || *key == nil {
		return nil
	}
	comps, err := ix.components(*key)
	if err != nil {
		return err
	}
	out := map[string]types.AttributeValue{}
	for k, v := range *key {
		if !isHidden(k) {
			out[k] = v
		}
	}
	maps.Copy(out, comps)
	*key = out
	return nil
}

// startKey turns an ExclusiveStartKey on a multi-attribute GSI into one on
// the hidden GSI.
func startKey(t *table, ix *index, key map[string]types.AttributeValue) (map[string]types.AttributeValue, error) {
	if key == nil {
		return nil, nil
	}
	for k := range key {
		if k != t.pk && k != t.sk && ix.keyType(k) == "" {
			return nil, validation("The provided starting key is invalid: %s is not a key attribute of the table or of index %s", k, ix.name)
		}
	}
	h, r, ok, err := ix.hidden(key)
	if err != nil {
		return nil, validation("The provided starting key is invalid: %v", err)
	}
	if !ok {
		return nil, validation("The provided starting key is invalid: it misses a key attribute of index %s", ix.name)
	}
	out := map[string]types.AttributeValue{ix.hashAttr: h}
	if r != nil {
		out[ix.rngAttr] = r
	}
	for _, k := range []string{t.pk, t.sk} {
		if k == "" {
			continue
		}
		v, ok := key[k]
		if !ok {
			return nil, validation("The provided starting key is invalid: it misses the table's key attribute %s", k)
		}
		out[k] = v
	}
	return out, nil
}
