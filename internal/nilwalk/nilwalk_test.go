package nilwalk_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ddbindex/ddbindex/internal/nilwalk"
)

// recorder is a testing.TB that records failures instead of failing.
type recorder struct {
	testing.TB
	failures []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.failures = append(r.failures, fmt.Sprintf(format, args...))
}

func (r *recorder) Fatalf(format string, args ...any) { r.Errorf(format, args...) }

// Stack is a generic type whose methods the walker is given.
type Stack[T any] struct{ items []T }

// Push panics on a nil Stack.
func (s *Stack[T]) Push(v T) { s.items = append(s.items, v) }

// Len is nil-safe.
func (s *Stack[T]) Len() int {
	if s == nil {
		return 0
	}
	return len(s.items)
}

// Top is a value method.
func (s Stack[T]) Top() (T, error) {
	var zero T
	if len(s.items) == 0 {
		return zero, errors.New("empty")
	}
	return s.items[len(s.items)-1], nil
}

// Each returns an iterator that panics when ranged over on a nil Stack.
func (s *Stack[T]) Each() iter.Seq[T] {
	return func(yield func(T) bool) {
		for _, v := range s.items {
			if !yield(v) {
				return
			}
		}
	}
}

// Forever returns an iterator that never ends unless its consumer stops.
func Forever() iter.Seq[int] {
	return func(yield func(int) bool) {
		for i := 0; ; i++ {
			if !yield(i) {
				return
			}
		}
	}
}

func TestWalkReportsPanics(t *testing.T) {
	t.Parallel()
	r := &recorder{TB: t}
	var w nilwalk.Walker
	w.Walk(r, (*Stack[int]).Push)
	w.Walk(r, (*Stack[int]).Len)
	w.Walk(r, Stack[string].Top)
	w.Walk(r, (*Stack[int]).Each)
	w.Walk(r, Forever)
	require.Len(t, r.failures, 2, "%q", r.failures)
	require.Contains(t, r.failures[0], "Stack.Push(nil, zero int) panicked")
	require.Contains(t, r.failures[1], "ranging over what Stack.Each(nil) returned panicked")
}

func TestWalkArguments(t *testing.T) {
	t.Parallel()
	var got []string
	record := func(ctx context.Context, s *Stack[int], n int, opts ...func(*int)) {
		got = append(got, fmt.Sprintf("ctx=%v s=%v n=%d opts=%d", ctx != nil, s, n, len(opts)))
		if len(opts) > 0 {
			require.Nil(t, opts[0])
		}
	}
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	w := nilwalk.Walker{
		Context: func() context.Context { return canceled },
		Values:  []any{&Stack[int]{items: []int{1}}, 7, "unused"},
	}
	w.Walk(t, record)
	require.ElementsMatch(t, []string{
		"ctx=true s=<nil> n=0 opts=0", "ctx=true s=<nil> n=0 opts=1",
		"ctx=true s=<nil> n=7 opts=0", "ctx=true s=<nil> n=7 opts=1",
		"ctx=true s=&{[]} n=0 opts=0", "ctx=true s=&{[]} n=0 opts=1",
		"ctx=true s=&{[]} n=7 opts=0", "ctx=true s=&{[]} n=7 opts=1",
		"ctx=true s=&{[1]} n=0 opts=0", "ctx=true s=&{[1]} n=0 opts=1",
		"ctx=true s=&{[1]} n=7 opts=0", "ctx=true s=&{[1]} n=7 opts=1",
	}, got)

	var ctxs []context.Context
	w.Walk(t, func(ctx context.Context) { ctxs = append(ctxs, ctx) })
	require.Equal(t, []context.Context{canceled}, ctxs)
}

func TestWalkChecksErrors(t *testing.T) {
	t.Parallel()
	r := &recorder{TB: t}
	w := nilwalk.Walker{Err: func(err error) bool { return !strings.Contains(err.Error(), "empty") }}
	w.Walk(r, Stack[string].Top)
	require.Len(t, r.failures, 1, "%q", r.failures)
	require.Contains(t, r.failures[0], "Stack.Top(zero nilwalk_test.Stack[string]) returned an error that the check refuses: empty")
}

func TestExported(t *testing.T) {
	t.Parallel()
	names, err := nilwalk.Exported("testdata/fixture")
	require.NoError(t, err)
	require.Equal(t, []string{"Box.Get", "New", "Pair.Swap"}, names)
}

func TestCovers(t *testing.T) {
	t.Parallel()
	r := &recorder{TB: t}
	var w nilwalk.Walker
	w.Skip(r, "New", "made by the test")
	w.Walk(r, (*Stack[int]).Len) // not the fixture's
	w.Covers(r, "testdata/fixture")
	require.ElementsMatch(t, []string{
		"nilwalk: exported Box.Get of testdata/fixture is not walked: add it to the test",
		"nilwalk: exported Pair.Swap of testdata/fixture is not walked: add it to the test",
		"nilwalk: walked Stack.Len, which testdata/fixture does not declare as an exported function or method",
	}, r.failures)

	r = &recorder{TB: t}
	w.Skip(r, "Box.Get", "")
	require.Equal(t, []string{"nilwalk: Skip of Box.Get without a reason"}, r.failures)
}
