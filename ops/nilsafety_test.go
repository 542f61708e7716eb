package ops_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ddbindex/ddbindex"
	"github.com/ddbindex/ddbindex/internal/nilwalk"
	"github.com/ddbindex/ddbindex/ops"
)

// TestNilSafety calls every exported function of the package with zero
// and nil arguments, and with command lines that send no request (a
// client made from the AWS configuration would look for credentials), and
// fails on a panic. It fails too when an exported function is not walked.
func TestNilSafety(t *testing.T) {
	t.Parallel()
	w := nilwalk.Walker{Values: []any{
		[]string{"ddbindex-ops"},
		[]string{"ddbindex-ops", "help"},
		[]string{"ddbindex-ops", "explain", "--index", "by_status", "--partition", "TEAM-7"}, // sends nothing
		[]string{"ddbindex-ops", "cursor", "inspect", "--index", "by_status", "-"},
		[]ops.ModelDef{{}},
		[]ops.ModelDef{ops.Model[Ticket](), ops.Model[Note](nil)},
		new(bytes.Buffer), // stdin, stdout and stderr
	}}
	w.Walk(t, ops.Model[Ticket])
	w.Walk(t, ops.ModelDef.ControlTable)
	w.Walk(t, ops.InspectCursor[Ticket])
	w.Walk(t, ops.Run)
	w.Skip(t, "Main", "it exits the process; it passes its arguments to Run")
	w.Covers(t, ".")

	// A zero ModelDef and a nil option function are usage errors.
	explain := []string{"ddbindex-ops", "explain", "--index", "by_status", "--partition", "TEAM-7"}
	var stderr bytes.Buffer
	code := ops.Run(context.Background(), explain, nil, nil, &stderr, []ops.ModelDef{{}})
	require.Equal(t, 2, code)
	require.Contains(t, stderr.String(), "model 0 is a zero ModelDef")
	stderr.Reset()
	code = ops.Run(context.Background(), explain, nil, nil, &stderr, []ops.ModelDef{ops.Model[Ticket]()}, nil)
	require.Equal(t, 2, code)
	require.Contains(t, stderr.String(), "RunOptions function 0 is nil")
	stderr.Reset()
	code = ops.Run(context.Background(), explain, nil, nil, &stderr, []ops.ModelDef{ops.Model[Ticket](nil)})
	require.Equal(t, 2, code)
	require.Contains(t, stderr.String(), "option function 0 is nil")

	// InspectCursor on a nil or zero Table is a query error.
	for name, tb := range map[string]*ddbindex.Table[Ticket]{"nil": nil, "zero": new(ddbindex.Table[Ticket])} {
		info, err := ops.InspectCursor(tb, "by_status", "")
		require.ErrorIs(t, err, ddbindex.ErrInvalidQuery, name)
		require.Nil(t, info, name)
	}
}
