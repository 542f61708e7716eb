package ddbindex

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"
)

// pfCycleClient answers every Query with no items and the next of its
// LastEvaluatedKeys in turn, round and round: a server that cycles between
// positions instead of advancing. A canned response: it tests the pager's
// guard, not DynamoDB.
type pfCycleClient struct {
	curxNoCallClient
	keys  []map[string]types.AttributeValue
	calls int
}

func (c *pfCycleClient) Query(_ context.Context, _ *dynamodb.QueryInput, _ ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	c.calls++
	if c.calls > 20 {
		c.t.Errorf("the pager sent %d requests to a server cycling through %d positions", c.calls, len(c.keys))
		return &dynamodb.QueryOutput{}, nil
	}
	return &dynamodb.QueryOutput{LastEvaluatedKey: c.keys[(c.calls-1)%len(c.keys)]}, nil
}

// TestPageFillCycleGuard: a server whose LastEvaluatedKey goes A, B, C, A
// ends the call with ErrNoProgress at the first repeat, not only when an
// answer repeats the request's own start key.
func TestPageFillCycleGuard(t *testing.T) {
	t.Parallel()
	for _, n := range []int{2, 3} {
		c := &pfCycleClient{curxNoCallClient: curxNoCallClient{t: t}}
		tb, err := New[curxTicket](c)
		require.NoError(t, err)
		d := curxDef(t, tb, "by_status")
		for _, it := range curxItems("T1", n) {
			k, err := d.startKey(curxPos(t, tb, d, it))
			require.NoError(t, err)
			c.keys = append(c.keys, k)
		}
		p, err := tb.Query("by_status", "T1").Limit(5).Page(context.Background())
		require.ErrorIs(t, err, ErrNoProgress)
		require.Contains(t, err.Error(), "already answered in this call")
		require.Nil(t, p)
		require.Equal(t, n+1, c.calls, "stops at the first repeated position")
	}
}

// pfLong is a model whose keys can be long.
type pfLong struct {
	_  TableSpec `ddbindex:"pf-long"`
	PK string    `dynamodbav:"pk" ddbindex:"pk"`
	SK string    `dynamodbav:"sk" ddbindex:"sk"`
}

// TestPageFillRefusesToMintOversizedCursor: a page whose cursor would be over
// Options.MaxCursorBytes fails, saying so, instead of handing out a cursor the
// next call would refuse.
func TestPageFillRefusesToMintOversizedCursor(t *testing.T) {
	t.Parallel()
	tb, _ := newTestTable[pfLong](t, func(o *Options) { o.MaxCursorBytes = 200 })
	putBase(t, tb, pfLong{PK: "p", SK: strings.Repeat("a", 100)}, pfLong{PK: "p", SK: strings.Repeat("b", 300)}, pfLong{PK: "p", SK: "c"})
	p, err := tb.Query("", "p").Limit(1).Page(context.Background())
	require.NoError(t, err, "a 100-byte key makes a cursor under 200 bytes")
	require.NotEmpty(t, p.Cursor)
	_, err = tb.Query("", "p").Limit(1).After(p.Cursor).Page(context.Background())
	require.ErrorIs(t, err, ErrInvalidQuery)
	require.Contains(t, err.Error(), "over Options.MaxCursorBytes (200)")
}
