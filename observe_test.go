package ddbindex

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ddbindex/ddbindex/internal/bridge"
)

// TestPageMismatchItemTwice: a page fill is not a snapshot, so an item that
// moves later in the order between two requests of a page can come twice.
// Comparing such a page with the other form's reports it, on either side,
// and never indexes past the shorter page.
func TestPageMismatchItemTwice(t *testing.T) {
	t.Parallel()
	tb, err := New[kpStep1](kiFailingClient{t})
	require.NoError(t, err)
	d, err := tb.index("by_status")
	require.NoError(t, err)
	served, other := d.decl.forms[0], d.decl.forms[1]
	x := kpStep1{ID: "x", Team: "T", Status: "open", Created: 1}
	y := kpStep1{ID: "y", Team: "T", Status: "open", Created: 2}
	moved := x
	moved.Status = "shut"
	once := &Page[kpStep1]{Items: []kpStep1{x, y}}
	twice := &Page[kpStep1]{Items: []kpStep1{x, y, moved}}
	for _, c := range []struct {
		a, b *Page[kpStep1]
		form Kind
	}{{twice, once, served.kind}, {once, twice, other.kind}} {
		m := tb.pageMismatch(t.Context(), served, other, c.a, c.b, true)
		require.NotNil(t, m)
		require.Equal(t, bridge.MismatchExtra, m.Kind)
		require.Len(t, m.Keys, 1)
		require.Contains(t, m.Detail, "returned item")
		require.Contains(t, m.Detail, c.form.String())
	}
	require.Nil(t, tb.pageMismatch(t.Context(), served, other, once, once, true), "equal pages agree")
}
