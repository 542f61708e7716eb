package ddbindex

import (
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/ddbindex/ddbindex/internal/ddbtest"
)

// Tests of the tombstone rule as a model sees it: a field tagged
// ddbindex:"deleted" reads true for a tombstone (a soft-deleted item in the
// base table and its GSIs and LSIs; in an index table, the entry of a deleted
// item and the stale entry an item left when its index key changed), and is
// never stored.

// TestTombstoneFieldGSI reads a softdelete model's tombstones through the
// base table, a GSI and an LSI.
func TestTombstoneFieldGSI(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	tb, _ := newTestTable[upTicket](t)
	var its []upTicket
	for i := range 3 {
		it, err := tb.Put(ctx, upTicket{Team: "T", ID: fmt.Sprint(i), Status: "open", Opened: upT0, Queue: "Q", Prio: i})
		require.NoError(t, err)
		its = append(its, it)
	}
	require.NoError(t, tb.Delete(ctx, its[1]))
	deleted := func(items []upTicket) map[string]bool {
		out := map[string]bool{}
		for _, it := range items {
			out[it.ID] = it.Deleted
		}
		return out
	}
	for _, q := range []Query[upTicket]{
		tb.Query("", "T").ConsistentRead(),
		tb.Query("by_status", "T").Where(Eq("open")),
		tb.Query("by_rank", "Q"),
		tb.Query("by_prio", "T").ConsistentRead(),
		tb.Query("by_status", "T").Project("title"), // the marker is read too
	} {
		all := wrPage(t, q.IncludeDeleted())
		require.Equal(t, map[string]bool{"0": false, "1": true, "2": false}, deleted(all), "%+v", q)
		live := wrPage(t, q)
		require.Equal(t, map[string]bool{"0": false, "2": false}, deleted(live))
		var seen []bool
		for it, err := range q.IncludeDeleted().All(ctx) {
			require.NoError(t, err)
			seen = append(seen, it.Deleted)
		}
		require.Equal(t, []bool{false, true, false}, seen, "All fills the field too")
	}

	// The field is never stored: Put refuses a value read from a
	// tombstone, and writes nothing for a live one.
	tomb := wrPage(t, tb.Query("", "T").ConsistentRead().IncludeDeleted().Where(Eq("1")))[0]
	require.True(t, tomb.Deleted)
	_, err := tb.Put(ctx, tomb)
	require.ErrorIs(t, err, ErrInvalidWrite)
	require.ErrorContains(t, err, "upTicket.Deleted is true")
	require.ErrorContains(t, err, "clear it to create the item again")
	tomb.Deleted = false
	back, err := tb.Put(ctx, tomb)
	require.NoError(t, err, "with the tombstone's version, as before")
	require.EqualValues(t, 3, back.Ver)
	require.False(t, wrPage(t, tb.Query("", "T").ConsistentRead().Where(Eq("1")))[0].Deleted)
}

// tsNote has an index table and names its tombstone flag after the
// tombstone marker itself: the reserved attribute name is allowed for it.
type tsNote struct {
	_     TableSpec `ddbindex:"ts-notes"`
	_     IndexSpec `ddbindex:"by_topic,type=table"`
	Team  string    `dynamodbav:"team" ddbindex:"pk;by_topic.pk"`
	ID    string    `dynamodbav:"id" ddbindex:"sk"`
	Topic string    `dynamodbav:"topic" ddbindex:"by_topic.sk"`
	Text  string    `dynamodbav:"text"`
	Gone  bool      `dynamodbav:"_deleted" ddbindex:"deleted"`
}

// TestTombstoneFieldIndexTable reads an index table's tombstones: the entry
// of a deleted item, and the stale entry an item leaves behind when its index
// key changes, kept from the stream (Apply) and written through.
func TestTombstoneFieldIndexTable(t *testing.T) {
	t.Parallel()
	for _, wt := range []bool{false, true} {
		t.Run(fmt.Sprintf("writeThrough=%v", wt), func(t *testing.T) {
			t.Parallel()
			if wt {
				ddbtest.Require(t, ddbtest.Transactions)
			}
			ctx := t.Context()
			tb, _ := newTestTable[tsNote](t, func(o *Options) { o.WriteThrough = wt })
			version := 0
			write := func(old *tsNote, now *tsNote) {
				t.Helper()
				var c Change
				if old != nil {
					c.Old = wrRaw(t, tb, *old)
				}
				switch {
				case now != nil:
					_, err := tb.Put(ctx, *now)
					require.NoError(t, err)
					c.New = wrRaw(t, tb, *now)
				default:
					require.NoError(t, tb.Delete(ctx, *old))
				}
				if !wt {
					version++
					c.Version = fmt.Sprint(version)
					_, err := tb.Apply(ctx, []Change{c})
					require.NoError(t, err)
				}
			}
			a := tsNote{Team: "T", ID: "1", Topic: "a", Text: "one"}
			b := tsNote{Team: "T", ID: "2", Topic: "b", Text: "two"}
			write(nil, &a)
			write(nil, &b)
			c := a
			c.Topic = "c" // a's entry becomes stale
			write(&a, &c)
			write(&b, nil) // b's entry becomes a tombstone

			all := wrIndex(t, tb, "by_topic", true, "T")
			got := map[string]bool{}
			for _, e := range all {
				got[e.Topic] = e.Gone
			}
			require.Equal(t, map[string]bool{"a": true, "b": true, "c": false}, got)
			require.Equal(t, []tsNote{c}, wrIndex(t, tb, "by_topic", false, "T"))
			require.Equal(t, []tsNote{c}, wrIndex(t, tb, "", true, "T"), "the base table deletes for real")

			// Never stored: Marshal and Put leave the attribute out.
			img, err := tb.Marshal(c)
			require.NoError(t, err)
			require.NotContains(t, img, "_deleted")
			require.NotContains(t, wrRaw(t, tb, c), "_deleted")
			gone := c
			gone.Gone = true
			_, err = tb.Put(ctx, gone)
			require.ErrorIs(t, err, ErrInvalidWrite)
			require.ErrorContains(t, err, "tsNote.Gone is true")
		})
	}
}

// TestTombstoneFieldDeclaration: the tag's rules.
func TestTombstoneFieldDeclaration(t *testing.T) {
	t.Parallel()
	type notBool struct {
		_    TableSpec `ddbindex:"tt-x"`
		K    string    `dynamodbav:"k" ddbindex:"pk"`
		Gone int       `ddbindex:"deleted"`
	}
	type twice struct {
		_     TableSpec `ddbindex:"tt-x"`
		K     string    `dynamodbav:"k" ddbindex:"pk"`
		Gone  bool      `ddbindex:"deleted"`
		Gone2 bool      `ddbindex:"deleted"`
	}
	type unexported struct {
		_    TableSpec `ddbindex:"tt-x"`
		K    string    `dynamodbav:"k" ddbindex:"pk"`
		gone bool      `ddbindex:"deleted"`
	}
	type reserved struct {
		_    TableSpec `ddbindex:"tt-x"`
		K    string    `dynamodbav:"k" ddbindex:"pk"`
		Gone bool      `dynamodbav:"_deleted"`
	}
	_ = unexported{}.gone
	for name, err := range map[string]error{
		"not a bool": func() error { _, err := New[notBool](&wrNoClient{}); return err }(),
		"twice":      func() error { _, err := New[twice](&wrNoClient{}); return err }(),
		"unexported": func() error { _, err := New[unexported](&wrNoClient{}); return err }(),
	} {
		require.ErrorIs(t, err, ErrDeclaration, name)
		require.ErrorContains(t, err, "deleted field", name)
	}
	_, err := New[reserved](&wrNoClient{})
	require.ErrorIs(t, err, ErrDeclaration, "a plain model attribute may not take the marker's name")
	require.ErrorContains(t, err, "reserved")
	_, err = New[tsNote](&wrNoClient{})
	require.NoError(t, err, "the deleted field may")

	// Not stored, so no attribute of the model: reads set it from the
	// marker, not from an attribute of its own name.
	tb, err := New[upTicket](&wrNoClient{})
	require.NoError(t, err)
	var v upTicket
	require.NoError(t, tb.unmarshalItem(map[string]types.AttributeValue{"_deleted": &types.AttributeValueMemberBOOL{Value: true}}, &v))
	require.True(t, v.Deleted)
	v.Deleted = true
	require.NoError(t, tb.unmarshalItem(map[string]types.AttributeValue{"_deleted": &types.AttributeValueMemberBOOL{Value: false}}, &v))
	require.False(t, v.Deleted)
}
