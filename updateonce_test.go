package ddbindex

import (
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/ddbindex/ddbindex/internal/faults"
)

// Tests of an Update that a second application would change again (an ADD
// to a number, arithmetic, list_append) whose UpdateItem fails after
// DynamoDB may have applied it: the SDK does not send it again, and Update
// reads the item back to tell (resend.go).

// TestUpdateLostAnswerThenAnotherWriteIsAppliedOnce: the first UpdateItem
// is applied but its answer lost, and another writer updates the item
// before the call learns anything more. Resending it would apply it a
// second time (its write token, the only trace of it, is written over);
// the update is applied once, and the call says that its outcome is
// unknown.
func TestUpdateLostAnswerThenAnotherWriteIsAppliedOnce(t *testing.T) {
	t.Parallel()
	for _, kind := range faults.Applied {
		t.Run(kind.String(), func(t *testing.T) {
			t.Parallel()
			s := newRTScript(map[string][]faults.Kind{"UpdateItem": {kind}})
			f, c, ft := rtTables[rtCounter](t, s.policy)
			ctx := t.Context()
			_, err := c.Put(ctx, rtCounter{ID: "c"})
			require.NoError(t, err)
			// The other writer comes before whichever request follows the
			// lost answer: a resent UpdateItem, or the read that settles it.
			var once sync.Once
			var otherErr error
			other := func(n int) {
				once.Do(func() { otherErr = c.Update(ctx, rtCounter{ID: "c"}, Add("n", 10)) })
			}
			s.before["UpdateItem"] = func(n int) {
				if n == 2 {
					other(n)
				}
			}
			s.before["GetItem"] = other
			s.arm()
			err = f.Update(ctx, rtCounter{ID: "c"}, Add("n", 1))
			require.NoError(t, otherErr)
			require.EqualValues(t, 11, wrNum(t, rtGet(t, c, rtCounter{ID: "c"})["n"]), "ADD 1 and ADD 10, each applied once")
			require.ErrorIs(t, err, ErrOutcomeUnknown)
			require.Equal(t, "DDBX-605", Code(err))
			require.NotErrorIs(t, err, ErrConflict)
			require.NotErrorIs(t, err, ErrDynamoDB)
			require.False(t, IsTransient(err), "sending it again may apply it twice")
			require.Contains(t, err.Error(), "Read the item to see whether your change is there")
			require.Equal(t, 1, ft.CountOp("UpdateItem", kind))
			require.Zero(t, ft.CountOp("UpdateItem", faults.None), "the UpdateItem was not sent again")
		})
	}
}

// TestUpdateNotIdempotentFailures: how each fault ends an update that adds
// to a number. A throttle is DynamoDB refusing the request: the SDK retries
// it. After a lost answer the item holds the call's token: applied. After a
// 5xx answer or a reset while sending, the item does not hold it, and
// nothing tells an update that was not applied from one written over: the
// outcome is unknown, and the item is as before.
func TestUpdateNotIdempotentFailures(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		kind    faults.Kind
		unknown bool
		n       int64
	}{
		{faults.Throttle, false, 1},
		{faults.ResetAfterApply, false, 1},
		{faults.LostResponse, false, 1},
		{faults.ServerError, true, 0},
		{faults.ResetBeforeSend, true, 0},
	} {
		t.Run(tc.kind.String(), func(t *testing.T) {
			t.Parallel()
			s := newRTScript(map[string][]faults.Kind{"UpdateItem": {tc.kind}})
			f, c, ft := rtTables[rtCounter](t, s.policy)
			_, err := c.Put(t.Context(), rtCounter{ID: "c"})
			require.NoError(t, err)
			s.arm()
			err = f.Update(t.Context(), rtCounter{ID: "c"}, Add("n", 1))
			if tc.unknown {
				require.ErrorIs(t, err, ErrOutcomeUnknown)
				require.Contains(t, err.Error(), "does not hold the update's write token")
			} else {
				require.NoError(t, err)
			}
			require.Equal(t, 1, ft.CountOp("UpdateItem", tc.kind))
			require.EqualValues(t, tc.n, wrNum(t, rtGet(t, c, rtCounter{ID: "c"})["n"]))
		})
	}
}

// TestUpdateIdempotentIsResent: an update that leaves the same item however
// often it is applied is resent by the SDK after a 5xx answer, as any
// request.
func TestUpdateIdempotentIsResent(t *testing.T) {
	t.Parallel()
	s := newRTScript(map[string][]faults.Kind{"UpdateItem": {faults.ServerError}})
	f, c, ft := rtTables[rtDoc](t, s.policy)
	v1, err := c.Put(t.Context(), rtDoc{ID: "d1", Topic: "go", Title: "one"})
	require.NoError(t, err)
	s.arm()
	require.NoError(t, f.Update(t.Context(), rtDoc{ID: "d1"}, Set("title", "two").Remove("score")))
	require.Equal(t, 1, ft.CountOp("UpdateItem", faults.ServerError))
	require.Equal(t, 1, ft.CountOp("UpdateItem", faults.None), "resent once")
	img := rtGet(t, c, v1)
	require.Equal(t, "two", syS(img["title"]))
}

func uoSS(v ...string) types.AttributeValue { return &types.AttributeValueMemberSS{Value: v} }

// TestIdempotentUpdates: which operations an update may apply twice.
func TestIdempotentUpdates(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		u    Update
		want bool
	}{
		{"set values", Set("a", 1).Set("b.c", "x"), true},
		{"remove", Remove("a"), true},
		{"add to a set", Add("tags", uoSS("x")).Add("ns", &types.AttributeValueMemberNS{Value: []string{"1"}}), true},
		{"delete from a set", Delete("tags", uoSS("x")), true},
		{"add to a number", Set("a", 1).Add("n", 1), false},
		{"arithmetic", Set("n", expression.Name("n").Plus(expression.Value(1))), false},
		{"list_append", Set("l", expression.ListAppend(expression.Name("l"), expression.Value([]string{"x"}))), false},
		{"if_not_exists (operands are not looked into)", Set("n", expression.IfNotExists(expression.Name("n"), expression.Value(0))), false},
	} {
		ops, err := tc.u.resolve()
		require.NoError(t, err, tc.name)
		require.Equal(t, tc.want, idempotent(ops), tc.name)
	}
}
