package multikey

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// usedPlaceholders returns the #name and :value placeholders exprs use.
func usedPlaceholders(exprs []*string) (names, values map[string]bool) {
	names, values = map[string]bool{}, map[string]bool{}
	for _, e := range exprs {
		n, v := placeholders(aws.ToString(e))
		for _, x := range n {
			names[x] = true
		}
		for _, x := range v {
			values[x] = true
		}
	}
	return names, values
}

// checkUnused refuses placeholders no expression uses, as DynamoDB does
// ("Value provided in ExpressionAttributeNames unused in expressions").
func checkUnused(names map[string]string, values map[string]types.AttributeValue, exprs ...*string) error {
	usedN, usedV := usedPlaceholders(exprs)
	var unusedN, unusedV []string
	for k := range names {
		if !usedN[k] {
			unusedN = append(unusedN, k)
		}
	}
	for k := range values {
		if !usedV[k] {
			unusedV = append(unusedV, k)
		}
	}
	sort.Strings(unusedN)
	sort.Strings(unusedV)
	switch {
	case len(unusedN) > 0:
		return validation("Value provided in ExpressionAttributeNames unused in expressions: keys: {%s}", strings.Join(unusedN, ", "))
	case len(unusedV) > 0:
		return validation("Value provided in ExpressionAttributeValues unused in expressions: keys: {%s}", strings.Join(unusedV, ", "))
	}
	return nil
}

// prune drops the placeholders that none of exprs uses any more.
func prune(names map[string]string, values map[string]types.AttributeValue, exprs ...*string) (map[string]string, map[string]types.AttributeValue) {
	usedN, usedV := usedPlaceholders(exprs)
	maps.DeleteFunc(names, func(k, _ string) bool { return !usedN[k] })
	maps.DeleteFunc(values, func(k string, _ types.AttributeValue) bool { return !usedV[k] })
	if len(names) == 0 {
		names = nil
	}
	if len(values) == 0 {
		values = nil
	}
	return names, values
}

// multiIndex returns the table and the multi-attribute GSI a read names;
// nil when it names none.
func (d *Double) multiIndex(ctx context.Context, tableName, indexName *string) (*table, *index, error) {
	if indexName == nil {
		return nil, nil, nil
	}
	t, err := d.info(ctx, aws.ToString(tableName))
	if err != nil {
		return nil, nil, err
	}
	return t, t.multi[aws.ToString(indexName)], nil
}

// query rewrites a Query of a multi-attribute GSI into one of the hidden
// GSI that serves it, after the checks DynamoDB makes.
func (d *Double) query(ctx context.Context, p *dynamodb.QueryInput) (*dynamodb.QueryInput, *index, error) {
	t, ix, err := d.multiIndex(ctx, p.TableName, p.IndexName)
	if err != nil || ix == nil {
		return p, nil, err
	}
	if p.KeyConditions != nil || p.QueryFilter != nil || p.AttributesToGet != nil {
		return nil, nil, validation("multikey double: legacy Query parameters are not supported; use expressions")
	}
	if p.KeyConditionExpression == nil {
		return nil, nil, validation("Either the KeyConditions or KeyConditionExpression parameter must be specified in the request.")
	}
	if err := checkUnused(p.ExpressionAttributeNames, p.ExpressionAttributeValues, p.KeyConditionExpression, p.FilterExpression, p.ProjectionExpression); err != nil {
		return nil, nil, err
	}
	leaves, err := parseKeyCondition(aws.ToString(p.KeyConditionExpression), p.ExpressionAttributeNames, p.ExpressionAttributeValues)
	if err != nil {
		return nil, nil, validation("%v", err)
	}
	hash, op, lo, hi, err := ix.hiddenCondition(leaves)
	if err != nil {
		return nil, nil, validation("%v", err)
	}
	if p.FilterExpression != nil {
		refs, err := referencedNames(aws.ToString(p.FilterExpression), p.ExpressionAttributeNames)
		if err != nil {
			return nil, nil, validation("Invalid FilterExpression: %v", err)
		}
		for _, r := range refs {
			if ix.keyType(r) != "" {
				return nil, nil, validation("Filter Expression can only contain non-primary key attributes: Primary key attribute: %s", r)
			}
		}
	}
	q := *p
	names := maps.Clone(p.ExpressionAttributeNames)
	values := maps.Clone(p.ExpressionAttributeValues)
	if names == nil {
		names = map[string]string{}
	}
	if values == nil {
		values = map[string]types.AttributeValue{}
	}
	names["#mkh"], values[":mkh"] = ix.hashAttr, hexS(hash)
	kce := "#mkh = :mkh"
	switch {
	case lo != nil:
		names["#mkr"], values[":mklo"], values[":mkhi"] = ix.rngAttr, hexS(lo), hexS(hi)
		kce += " AND #mkr BETWEEN :mklo AND :mkhi"
	case hi != nil:
		names["#mkr"], values[":mkhi"] = ix.rngAttr, hexS(hi)
		kce += " AND #mkr " + op + " :mkhi"
	}
	q.KeyConditionExpression = aws.String(kce)
	q.ExpressionAttributeNames, q.ExpressionAttributeValues = prune(names, values, q.KeyConditionExpression, q.FilterExpression, q.ProjectionExpression)
	if q.ExclusiveStartKey, err = startKey(t, ix, p.ExclusiveStartKey); err != nil {
		return nil, nil, err
	}
	return &q, ix, nil
}

// scan rewrites a Scan of a multi-attribute GSI into one of its hidden GSI.
func (d *Double) scan(ctx context.Context, p *dynamodb.ScanInput) (*dynamodb.ScanInput, *index, error) {
	t, ix, err := d.multiIndex(ctx, p.TableName, p.IndexName)
	if err != nil || ix == nil {
		return p, nil, err
	}
	q := *p
	// A Scan of an index lists only its items: those with hidden attributes.
	if q.ExclusiveStartKey, err = startKey(t, ix, p.ExclusiveStartKey); err != nil {
		return nil, nil, err
	}
	return &q, ix, nil
}

// transactWrite adds hidden attributes to the Puts of a TransactWriteItems
// and returns its Updates, whose items are repaired once it succeeds.
func (d *Double) transactWrite(ctx context.Context, p *dynamodb.TransactWriteItemsInput) (*dynamodb.TransactWriteItemsInput, []types.Update, error) {
	q := *p
	q.TransactItems = slices.Clone(p.TransactItems)
	var updates []types.Update
	for i, w := range q.TransactItems {
		switch {
		case w.Put != nil:
			t, err := d.info(ctx, aws.ToString(w.Put.TableName))
			if err != nil {
				return nil, nil, err
			}
			put := *w.Put
			if put.Item, err = withHidden(t, w.Put.Item); err != nil {
				return nil, nil, err
			}
			q.TransactItems[i].Put = &put
		case w.Update != nil:
			updates = append(updates, *w.Update)
		}
	}
	return &q, updates, nil
}

// batchWrite adds hidden attributes to the Puts of a BatchWriteItem.
func (d *Double) batchWrite(ctx context.Context, p *dynamodb.BatchWriteItemInput) (*dynamodb.BatchWriteItemInput, error) {
	q := *p
	q.RequestItems = map[string][]types.WriteRequest{}
	for name, reqs := range p.RequestItems {
		t, err := d.info(ctx, name)
		if err != nil {
			return nil, err
		}
		out := slices.Clone(reqs)
		for i, w := range out {
			if w.PutRequest == nil {
				continue
			}
			item, err := withHidden(t, w.PutRequest.Item)
			if err != nil {
				return nil, err
			}
			out[i].PutRequest = &types.PutRequest{Item: item}
		}
		q.RequestItems[name] = out
	}
	return &q, nil
}

// maxRepairs bounds the attempts to repair one item's hidden attributes
// against writers that keep changing it.
const maxRepairs = 100

// repair sets the hidden attributes of the item at key to what its key
// attributes are now, conditioned on their being as read, so that a
// concurrent write in between makes it read again.
func (d *Double) repair(ctx context.Context, name string, key map[string]types.AttributeValue) error {
	t, err := d.info(ctx, name)
	if err != nil || len(t.multi) == 0 {
		return err
	}
	for range maxRepairs {
		got, err := d.raw.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(name), Key: key, ConsistentRead: aws.Bool(true)})
		if err != nil {
			return err
		}
		if got.Item == nil {
			return nil
		}
		done, err := d.repairItem(ctx, name, t, key, got.Item)
		if done || err != nil {
			return err
		}
	}
	return fmt.Errorf("the hidden attributes of an item of %s changed under %d repairs", name, maxRepairs)
}

// repairItem writes the hidden attributes item needs, conditioned on the
// item being as read; done is false when the condition failed.
func (d *Double) repairItem(ctx context.Context, name string, t *table, key, item map[string]types.AttributeValue) (done bool, err error) {
	names := map[string]string{}
	values := map[string]types.AttributeValue{}
	var sets, removes, conds []string
	n := 0
	ph := func(attr string) string {
		n++
		k := fmt.Sprintf("#a%d", n)
		names[k] = attr
		return k
	}
	val := func(av types.AttributeValue) string {
		n++
		k := fmt.Sprintf(":v%d", n)
		values[k] = av
		return k
	}
	asRead := func(attr string) {
		if v, ok := item[attr]; ok {
			conds = append(conds, ph(attr)+" = "+val(v))
		} else {
			conds = append(conds, "attribute_not_exists("+ph(attr)+")")
		}
	}
	for _, k := range []string{t.pk} {
		conds = append(conds, "attribute_exists("+ph(k)+")")
	}
	seen := map[string]bool{}
	for _, ix := range sortedIndexes(t) {
		for _, a := range append(slices.Clone(ix.hash), ix.rng...) {
			if !seen[a.name] {
				seen[a.name] = true
				asRead(a.name)
			}
		}
		want := map[string]types.AttributeValue{}
		h, r, ok, herr := ix.hidden(item)
		if herr == nil && ok {
			want[ix.hashAttr] = h
			if r != nil {
				want[ix.rngAttr] = r
			}
		}
		for _, attr := range []string{ix.hashAttr, ix.rngAttr} {
			if attr == "" {
				continue
			}
			cur, has := item[attr]
			w, wants := want[attr]
			asRead(attr)
			switch {
			case wants && (!has || !sameS(cur, w)):
				sets = append(sets, ph(attr)+" = "+val(w))
			case !wants && has:
				removes = append(removes, ph(attr))
			}
		}
	}
	if len(sets) == 0 && len(removes) == 0 {
		return true, nil
	}
	var upd []string
	if len(sets) > 0 {
		upd = append(upd, "SET "+strings.Join(sets, ", "))
	}
	if len(removes) > 0 {
		upd = append(upd, "REMOVE "+strings.Join(removes, ", "))
	}
	in := &dynamodb.UpdateItemInput{
		TableName:                 aws.String(name),
		Key:                       key,
		UpdateExpression:          aws.String(strings.Join(upd, " ")),
		ConditionExpression:       aws.String(strings.Join(conds, " AND ")),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
	}
	if len(values) == 0 {
		in.ExpressionAttributeValues = nil
	}
	if _, err := d.raw.UpdateItem(ctx, in); err != nil {
		var cc *types.ConditionalCheckFailedException
		if errors.As(err, &cc) {
			return false, nil
		}
		return false, err
	}
	return true, nil
}

func sameS(a, b types.AttributeValue) bool {
	x, ok1 := a.(*types.AttributeValueMemberS)
	y, ok2 := b.(*types.AttributeValueMemberS)
	return ok1 && ok2 && x.Value == y.Value
}

func sortedIndexes(t *table) []*index {
	out := slices.Collect(maps.Values(t.multi))
	slices.SortFunc(out, func(a, b *index) int { return strings.Compare(a.name, b.name) })
	return out
}

// backfill gives every item of a table the hidden attributes of its
// multi-attribute GSIs, as DynamoDB backfills a GSI that UpdateTable adds.
func (d *Double) backfill(ctx context.Context, name string) error {
	t, err := d.info(ctx, name)
	if err != nil || len(t.multi) == 0 {
		return err
	}
	var start map[string]types.AttributeValue
	for {
		out, err := d.raw.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(name), ConsistentRead: aws.Bool(true), ExclusiveStartKey: start})
		if err != nil {
			return err
		}
		for _, item := range out.Items {
			key := map[string]types.AttributeValue{t.pk: item[t.pk]}
			if t.sk != "" {
				key[t.sk] = item[t.sk]
			}
			if done, err := d.repairItem(ctx, name, t, key, item); err != nil {
				return err
			} else if !done {
				if err := d.repair(ctx, name, key); err != nil {
					return err
				}
			}
		}
		if out.LastEvaluatedKey == nil {
			return nil
		}
		start = out.LastEvaluatedKey
	}
}
