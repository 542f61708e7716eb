package ddbindex

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/ddbindex/ddbindex/internal/av"
	"github.com/ddbindex/ddbindex/internal/bridge"
	"github.com/ddbindex/ddbindex/internal/retry"
)

// This file is the core's part of a backfill (package migrate's Backfill):
// the write each scanned base item needs to be in the form of an index that
// a migration introduces — an index table's entry, or a GSI's or LSI's
// derived key attributes on the base item — with the conditions that never
// overwrite a writer's newer work. It is the core's because only the core
// knows each form's physical layout and write rules. Package migrate owns
// the rest (scanning, segments, workers, the write-rate limit, progress,
// checkpoints) and reaches this file through internal/bridge, which the
// init function below connects: the root package exports nothing for it.

func init() {
	bridge.Backfiller = func(table any, index string) (bridge.Backfill, error) {
		b, ok := table.(backfillable)
		if !ok {
			return nil, fmt.Errorf("%w: Backfill: %T is not a *ddbindex.Table", ErrInvalidWrite, table)
		}
		return b.bridgeBackfill(index)
	}
}

// backfillable is what *Table[T] is to internal/bridge, whatever T.
type backfillable interface {
	bridgeBackfill(index string) (bridge.Backfill, error)
}

// bridgeBackfill is newBackfill for internal/bridge.
func (t *Table[T]) bridgeBackfill(index string) (bridge.Backfill, error) {
	if err := t.usable("Backfill", ErrInvalidWrite); err != nil {
		return nil, err
	}
	b, err := t.newBackfill(index)
	if err != nil {
		return nil, err // not a nil *backfiller in a non-nil interface
	}
	return b, nil
}

// backfillVersion is the version of entries a backfill writes: older than
// every change the stream brings.
var backfillVersion = &types.AttributeValueMemberN{Value: "0"}

// backfilled is the form of d's index that a backfill fills: the kept form
// of an index in migration (the form being introduced, in either
// direction), else the declared one.
func (d *layout) backfilled() *layout {
	return d.decl.forms[len(d.decl.forms)-1]
}

// backfiller writes what one index form needs of each scanned base item.
// It is read-only once made, so every worker of a backfill shares it.
type backfiller[T any] struct {
	t   *Table[T]
	d   *layout
	key string // the checkpoint key

	// For an index table: the condition of every put.
	putCond expression.Expression
	// For a GSI or LSI: the derived key attributes to write (none for
	// native keys), and the attributes its key is derived from, sorted.
	derived []*keyAttr
	sources []string
}

// newBackfill prepares the backfill of index: the kept form of an index in
// migration, else its declared form. It refuses, before any request, a
// read-only table and the base table (ErrUnsupported) and an index that is
// not declared (ErrInvalidQuery).
func (t *Table[T]) newBackfill(index string) (*backfiller[T], error) {
	if err := t.writable("Backfill"); err != nil {
		return nil, err
	}
	d, err := t.index(index)
	if err != nil {
		return nil, err
	}
	if d.kind == BaseTable {
		return nil, fmt.Errorf("%w: Backfill fills an index; %s has nothing to fill", ErrUnsupported, indexLabel(index))
	}
	d = d.backfilled()
	b := &backfiller[T]{t: t, d: d, key: bridge.CheckpointKey(t.TableName(), d.name, d.kind.String())}
	if d.ownTable {
		cond, err := expression.NewBuilder().WithCondition(expression.NameNoDotSplit(t.opts.VersionAttr).AttributeNotExists()).Build()
		if err != nil {
			return nil, writeErr("%w", err)
		}
		b.putCond = cond
		return b, nil
	}
	for _, k := range d.derivedAttrs() { // not model attributes, nor the base key an LSI shares
		b.derived = append(b.derived, k)
		for _, c := range k.components() {
			if !slices.Contains(b.sources, c.f.attr) {
				b.sources = append(b.sources, c.f.attr)
			}
		}
	}
	slices.Sort(b.sources)
	return b, nil
}

// Table returns the physical base table the backfill scans.
func (b *backfiller[T]) Table() string { return b.t.TableName() }

// Key returns the key the backfill's checkpoints are saved under.
func (b *backfiller[T]) Key() string { return b.key }

// Item backfills one scanned base item.
func (b *backfiller[T]) Item(ctx context.Context, img map[string]types.AttributeValue, o bridge.ItemOptions) (bridge.Outcome, error) {
	t := b.t
	live := t.liveImage(img)
	if live == nil {
		return bridge.Tombstone, nil
	}
	texts, err := t.s.imageTexts(live, nil, nil)
	if err != nil {
		return 0, fmt.Errorf("%w: %w", ErrMalformedItem, err)
	}
	if b.d.ownTable {
		return b.entry(ctx, live, texts, o)
	}
	return b.attributes(ctx, live, texts, o)
}

// entry puts an item's index-table entry unless one is there.
func (b *backfiller[T]) entry(ctx context.Context, img map[string]types.AttributeValue, texts keyTexts, o bridge.ItemOptions) (bridge.Outcome, error) {
	t := b.t
	e, err := t.imageEntry(b.d, img, texts, backfillVersion, 0)
	if err != nil {
		return 0, fmt.Errorf("%w: %w", ErrMalformedItem, err)
	}
	if e == nil {
		return bridge.Sparse, nil
	}
	table := t.tableOf(b.d)
	if err := b.wait(ctx, o, "PutItem", table, av.ItemSize(e)); err != nil {
		return 0, err
	}
	put := &dynamodb.PutItemInput{
		TableName: aws.String(table), Item: e, ConditionExpression: b.putCond.Condition(),
		ExpressionAttributeNames: b.putCond.Names(),
	}
	_, err = retry.Call(ctx, o.Retry, "PutItem", func() (*dynamodb.PutItemOutput, error) { return t.client.PutItem(ctx, put, o.ClientOptions...) })
	return b.outcome(err, table)
}

// attributes sets an item's derived key attributes of a GSI or LSI where
// they are not right, and removes stale ones from an item not in it.
func (b *backfiller[T]) attributes(ctx context.Context, img map[string]types.AttributeValue, texts keyTexts, o bridge.ItemOptions) (bridge.Outcome, error) {
	t := b.t
	want, in, err := b.d.keyValues(texts)
	if err != nil {
		return 0, fmt.Errorf("%w: %w", ErrMalformedItem, err)
	}
	var upd expression.UpdateBuilder
	changes := 0
	added, removed := 0, 0
	for _, k := range b.derived {
		have, has := img[k.attr]
		if k.shardOnly {
			// On every item, in the index or not (see layout.shardAttr).
			w, err := k.physical(texts.text)
			if err != nil {
				return 0, fmt.Errorf("%w: %w", ErrMalformedItem, err)
			}
			if has && av.Equal(have, w) {
				continue
			}
			upd = upd.Set(expression.NameNoDotSplit(k.attr), expression.Value(w))
			added += av.AttrSize(k.attr, w)
			changes++
			continue
		}
		switch {
		case in && (!has || !av.Equal(have, want[k.attr])):
			upd = upd.Set(expression.NameNoDotSplit(k.attr), expression.Value(want[k.attr]))
			added += av.AttrSize(k.attr, want[k.attr])
		case !in && has:
			upd = upd.Remove(expression.NameNoDotSplit(k.attr))
			removed += av.AttrSize(k.attr, have)
		default:
			continue
		}
		changes++
	}
	switch {
	case changes == 0 && in:
		return bridge.Unchanged, nil
	case changes == 0:
		return bridge.Sparse, nil
	}
	x, err := expression.NewBuilder().WithUpdate(upd).WithCondition(b.unchanged(img)).Build()
	if err != nil {
		return 0, writeErr("%w", err)
	}
	key := map[string]types.AttributeValue{}
	for _, k := range []*keyAttr{t.s.base.pk, t.s.base.sk} {
		if k != nil {
			key[k.attr] = img[k.attr]
		}
	}
	table := t.TableName()
	size := av.ItemSize(img)
	if err := b.wait(ctx, o, "UpdateItem", table, max(size, size+added-removed)); err != nil {
		return 0, err
	}
	req := &dynamodb.UpdateItemInput{
		TableName: aws.String(table), Key: key, UpdateExpression: x.Update(), ConditionExpression: x.Condition(),
		ExpressionAttributeNames: x.Names(), ExpressionAttributeValues: x.Values(),
	}
	_, err = retry.Call(ctx, o.Retry, "UpdateItem", func() (*dynamodb.UpdateItemOutput, error) { return t.client.UpdateItem(ctx, req, o.ClientOptions...) })
	return b.outcome(err, table)
}

// unchanged is the condition that a base item is still as scanned in img,
// and live: it exists, is not soft-deleted, holds the version it had (when
// the model has a version attribute and the item held it), and every
// attribute the index key is derived from as it was. The version alone
// does not do: an item deleted for good and created again starts at
// version 1 again, with other values, and the derived keys written are
// right for the stored item only when those attributes are. It is one flat
// AND of all its terms, which every server parses fast (chained Ands nest
// a parenthesis per term, which costs some local servers time exponential
// in the depth).
func (b *backfiller[T]) unchanged(img map[string]types.AttributeValue) expression.ConditionBuilder {
	t := b.t
	exists := expression.NameNoDotSplit(t.s.base.pk.attr).AttributeExists()
	live := live(expression.NameNoDotSplit(t.opts.DeletedAttr))
	var more []expression.ConditionBuilder
	if v := t.s.version; v != nil {
		if have, ok := img[v.attr]; ok {
			more = append(more, holds(v.attr, have))
		}
	}
	for _, a := range b.sources {
		if have, ok := img[a]; ok {
			more = append(more, holds(a, have))
		} else {
			more = append(more, expression.NameNoDotSplit(a).AttributeNotExists())
		}
	}
	return expression.And(exists, live, more...)
}

// outcome is a conditional write's outcome: Skipped when its condition
// failed.
func (b *backfiller[T]) outcome(err error, table string) (bridge.Outcome, error) {
	var ccf *types.ConditionalCheckFailedException
	switch {
	case errors.As(err, &ccf):
		return bridge.Skipped, nil
	case err != nil:
		return 0, fmt.Errorf("ddbindex: backfill of %s: %w", table, err)
	}
	return bridge.Written, nil
}

// wait asks o.Wait for the write units of a write of an item of size bytes
// (one per started KB); its error is a failed call of that write, not sent.
func (b *backfiller[T]) wait(ctx context.Context, o bridge.ItemOptions, op, table string, size int) error {
	if o.Wait == nil {
		return nil
	}
	if err := o.Wait(ctx, max(1, (size+1023)/1024)); err != nil {
		return &Error{Sentinel: ErrDynamoDB, Op: op, Table: table, Err: err}
	}
	return nil
}
