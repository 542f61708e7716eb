package ddbindex

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/require"

	"github.com/ddbindex/ddbindex/internal/ddbtest"
)

// TestPutCreatesOverVanishingTombstone: Put at version 0 finds a tombstone
// (which counts as absent) and creates the item over it, but TTL deletes the
// tombstone between Put's finding it and its write. The key is free: the
// item is created as a new one, at version 1, in both upkeep modes.
func TestPutCreatesOverVanishingTombstone(t *testing.T) {
	t.Parallel()
	for _, wt := range []bool{false, true} {
		t.Run(map[bool]string{false: "from the stream", true: "write-through"}[wt], func(t *testing.T) {
			t.Parallel()
			if wt {
				ddbtest.Require(t, ddbtest.Transactions)
			}
			s := newRTScript(nil)
			f, c, _ := rtTables[wrTicket](t, s.policy, func(o *Options) { o.WriteThrough = wt })
			ctx := t.Context()
			v1, err := c.Put(ctx, wrTicket{Team: "T", Status: "open", ID: "1", Created: wrT0, Title: "one"})
			require.NoError(t, err)
			require.NoError(t, c.Delete(ctx, v1))
			key, _, err := c.keyOf(&v1)
			require.NoError(t, err)
			ttl := func() { // what TTL does: delete the tombstone for good
				_, err := c.client.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(c.TableName()), Key: key})
				require.NoError(t, err)
			}
			// From the stream, Put's first PutItem finds the tombstone and
			// its second one creates the item over it; written through, its
			// read finds the tombstone and its transaction writes over it.
			op, at := "PutItem", 2
			if wt {
				op, at = "TransactWriteItems", 1
			}
			s.before[op] = func(n int) {
				if n == at {
					ttl()
				}
			}
			s.arm()
			got, err := f.Put(ctx, wrTicket{Team: "T", Status: "open", ID: "1", Created: wrT0, Title: "again"})
			require.NoError(t, err, "the key is free: a creation at version 0 succeeds")
			require.EqualValues(t, 1, got.Ver, "a new item: the tombstone, and its version, are gone")
			img := rtGet(t, c, v1)
			require.Equal(t, "again", syS(img["title"]))
			require.EqualValues(t, 1, wrNum(t, img["ver"]))
			require.False(t, wrBool(img["_deleted"]))
		})
	}
}
