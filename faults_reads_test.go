package ddbindex

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/stretchr/testify/require"

	"github.com/ddbindex/ddbindex/internal/ddbtest"
	"github.com/ddbindex/ddbindex/internal/faults"
)

// TestFaultsReads runs page chains, All and Exists through a transport that
// throttles, fails with 500s, resets connections and loses responses, at 5%
// with the SDK's standard retryer and at 30% with a retryer without a retry
// quota, and requires the exact live items of ground truth: a call either
// returns its exact page or an error, and the caller's retry of a failed call
// (with the same cursor) gives the same page.
func TestFaultsReads(t *testing.T) {
	t.Parallel()
	tb, _ := newTestTable[benchFeedItem](t)
	dead := make([]bool, 300)
	for i := range dead {
		dead[i] = i%7 != 0 && (i/40)%2 == 1 || i%5 == 0 // dense stretches, runs, and scattered tombstones
	}
	benchLoad(t, tb, "c", dead)
	var truth []string
	for i, d := range dead {
		if !d {
			truth = append(truth, benchNewFeedItem("c", int64(i+1)).ID)
		}
	}
	for _, c := range []struct {
		name    string
		rate    float64
		retryer func() aws.Retryer
	}{
		{"5% standard retryer", 0.05, nil},
		{"30% no-quota retryer", 0.30, ddbtest.NoQuotaRetryer(12)},
	} {
		t.Run(c.name, func(t *testing.T) {
			db, _, ft := ddbtest.Faulty(t, faults.Random(c.rate, 7, nil, "Query"), c.retryer)
			ft2 := coldMemo(tb)
			ft2.client = calls{db}
			ctx := context.Background()
			retry := func(what string, call func() error) {
				t.Helper()
				var err error
				for range 20 {
					if err = call(); err == nil {
						return
					}
					require.True(t, faults.IsInjected(err), "%s: only injected faults fail a call: %v", what, err)
				}
				require.NoError(t, err, "%s: 20 tries", what)
			}
			for _, desc := range []bool{false, true} {
				want := slices.Clone(truth)
				if desc {
					slices.Reverse(want)
				}
				for _, limit := range []int{1, 7, 20} {
					q := ft2.Query("feed", "c").Limit(limit)
					if desc {
						q = q.Desc()
					}
					var got []string
					cursor := ""
					for {
						var p *Page[benchFeedItem]
						retry(fmt.Sprintf("page after %q", cursor), func() (err error) {
							p, err = q.After(cursor).Page(ctx)
							return err
						})
						for _, it := range p.Items {
							got = append(got, it.ID)
						}
						if cursor = p.Cursor; cursor == "" {
							break
						}
						require.Len(t, p.Items, limit)
					}
					require.Equal(t, want, got, "desc=%v limit=%d: pages", desc, limit)
				}
				retry("All", func() error {
					var got []string
					q := ft2.Query("feed", "c")
					if desc {
						q = q.Desc()
					}
					for it, err := range q.All(ctx) {
						if err != nil {
							return err
						}
						got = append(got, it.ID)
					}
					require.Equal(t, want, got, "All")
					return nil
				})
			}
			retry("Exists", func() error {
				ok, err := ft2.Query("feed", "c").Exists(ctx)
				if err == nil {
					require.True(t, ok)
				}
				return err
			})
			require.Positive(t, ft.Injected(), "faults were injected")
			t.Logf("faults: %s", ft.Summary())
		})
	}
}
