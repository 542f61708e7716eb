package ddbindex

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"
)

// roDead is the pattern, in reading order: 20 live entries (page 1), a run
// of 300 tombstones, 7 live, a run of 150 inside page 2, then 93 live. No
// tombstone follows a live entry a page could read past its end and leave
// for the next page, so a page fill that never reads a tombstone twice
// filters each exactly once over the whole partition.
func roDead() []bool {
	var dead []bool
	for _, r := range []struct {
		n    int
		dead bool
	}{{20, false}, {300, true}, {7, false}, {150, true}, {93, false}} {
		for range r.n {
			dead = append(dead, r.dead)
		}
	}
	return dead
}

// TestPageFillReadsEachTombstoneOnce reads a partition with runs of
// tombstones after page 1 and inside page 2 to its end, page by page, on
// every kind of sort key (a native Number with fractions, a native String, a
// native Binary ending in 0x00 bytes, a Number four entries share, and a
// derived composite key under an Eq prefix), on the GSI and on the index
// table, in both orders, with a cold memory and then a warm one. Whatever
// the key can express, a page that ends inside a run hands the next page the
// last position it evaluated, so over the partition each tombstone is read
// once (the Filtered sum equals the tombstones), and the items are the live
// ones in order.
func TestPageFillReadsEachTombstoneOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dead := roDead()
	roRun(t, ctx, "number", dead, func(seq int, feed string) ccNum {
		return ccNum{ID: fmt.Sprintf("id%04d", seq), Feed: feed, Seq: float64(seq) + 0.25}
	}, SortCondition{}, false)
	roRun(t, ctx, "string", dead, func(seq int, feed string) ccStr {
		return ccStr{ID: fmt.Sprintf("id%04d", seq), Feed: feed, Name: fmt.Sprintf("n%04d", seq)}
	}, SortCondition{}, false)
	roRun(t, ctx, "binary", dead, func(seq int, feed string) ccBin {
		return ccBin{ID: fmt.Sprintf("id%04d", seq), Feed: feed, Key: []byte{byte(seq >> 8), byte(seq), 0, 0}}
	}, SortCondition{}, false)
	roRun(t, ctx, "ties", dead, func(seq int, feed string) ccTie {
		return ccTie{ID: fmt.Sprintf("id%04d", seq), Feed: feed, Rank: int64(seq / 4)}
	}, SortCondition{}, true)
	roRun(t, ctx, "composite", dead, func(seq int, feed string) ccComp2 {
		return ccComp2{ID: fmt.Sprintf("id%04d", seq), Feed: feed, Kind: "a", Seq: int64(seq)}
	}, Eq("a"), false)
}

// roRun loads the partition dead describes (item seq 1..n in ascending
// order, made by mk) into a table of model T, one feed per order, writing
// both forms of the index, and reads it as TestPageFillReadsEachTombstoneOnce
// says (tied: the sort key orders groups of four items, each group in the
// server's order).
func roRun[T any](t *testing.T, ctx context.Context, name string, dead []bool, mk func(seq int, feed string) T, cond SortCondition, tied bool) {
	t.Run(name, func(t *testing.T) {
		t.Parallel()
		tb, _ := newTestTable[T](t)
		n := len(dead)
		tombstones := 0
		for _, d := range dead {
			if d {
				tombstones++
			}
		}
		for _, desc := range []bool{false, true} {
			feed := "asc"
			if desc {
				feed = "desc"
			}
			// Entry i in reading order is item seq i+1 ascending, n-i
			// descending.
			items := make([]T, n)
			for i := range dead {
				seq := i + 1
				if desc {
					seq = n - i
				}
				items[i] = mk(seq, feed)
			}
			var want []string
			for i, av := range applyLoad(t, tb, items, dead) {
				if !dead[i] {
					want = append(want, itemID(av))
				}
			}

			for _, form := range []Kind{GSI, IndexTable} {
				reader := coldMemo(tb) // what other reads of tb learnt does not count
				for _, memory := range []string{"cold", "warm"} {
					where := fmt.Sprintf("%s %s, %s memory", feed, form, memory)
					var got []string
					var st Stats
					cursor := ""
					for pages := 0; ; pages++ {
						require.Less(t, pages, 100, "%s: the pages end", where)
						q := reader.Query("feed", feed).Where(cond).Via(form).Limit(20).After(cursor)
						if desc {
							q = q.Desc()
						}
						pg, err := q.Page(ctx)
						require.NoError(t, err, where)
						for _, it := range pg.Items {
							av, err := tb.Marshal(it)
							require.NoError(t, err)
							got = append(got, itemID(av))
						}
						st.add(pg.Stats)
						if cursor = pg.Cursor; cursor == "" {
							break
						}
					}
					require.ElementsMatch(t, want, got, "%s: the live items, each once", where)
					require.Equal(t, roOrder(want, tied), roOrder(got, tied), "%s: the live items, in order (ties in any order)", where)
					require.Equal(t, tombstones, st.Filtered, "%s: each tombstone read once (%+v)", where, st)
				}
			}
		}
	})
}

// roOrder is the sort value of each item id ("id%04d" of seq) in ids: seq,
// or seq/4 when tied (the ties model).
func roOrder(ids []string, tied bool) []int {
	out := make([]int, len(ids))
	for i, id := range ids {
		seq, _ := strconv.Atoi(id[2:])
		if tied {
			seq /= 4
		}
		out[i] = seq
	}
	return out
}

// itemID is an item's id attribute.
func itemID(item map[string]types.AttributeValue) string {
	if s, ok := item["id"].(*types.AttributeValueMemberS); ok {
		return s.Value
	}
	return "?" + strconv.Itoa(len(item))
}
