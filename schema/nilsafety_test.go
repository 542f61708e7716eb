package schema_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ddbindex/ddbindex"
	"github.com/ddbindex/ddbindex/internal/nilwalk"
	"github.com/ddbindex/ddbindex/schema"
)

// nilDoc is the model the nil-safety walk instantiates the functions with.
type nilDoc struct {
	_ ddbindex.TableSpec `ddbindex:"schema-nil-safety"`
	_ ddbindex.IndexSpec `ddbindex:"by_owner,type=table"`

	ID    string `dynamodbav:"id"    ddbindex:"pk"`
	Owner string `dynamodbav:"owner" ddbindex:"by_owner.pk"`
}

// TestNilSafety calls every exported function and method of the package
// with zero and nil arguments, with a nil, a zero and a real Table (made
// from a nil client), and fails on a panic or an error without a code. It
// fails too when an exported function or method is not walked.
func TestNilSafety(t *testing.T) {
	t.Parallel()
	tb, err := ddbindex.New[nilDoc](nil)
	require.NoError(t, err)
	w := nilwalk.Walker{
		Values: []any{tb},
		Err:    func(err error) bool { return ddbindex.Code(err) != "" },
	}
	w.Walk(t, schema.Check[nilDoc])
	w.Walk(t, schema.CheckWithWarnings[nilDoc])
	w.Walk(t, schema.CreateTables[nilDoc])
	w.Walk(t, schema.CreateTableInputs[nilDoc])
	w.Walk(t, schema.ControlTableInput)
	w.Walk(t, schema.CheckControlTable)
	w.Walk(t, schema.Prepare[nilDoc])
	w.Walk(t, schema.Report.Changed)
	w.Walk(t, (*schema.Error).Error)
	w.Walk(t, (*schema.Error).Is)
	w.Walk(t, (*schema.Error).Code)
	w.Covers(t, ".")
}
