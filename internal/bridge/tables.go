package bridge

import "github.com/ddbindex/ddbindex/internal/spec"

// Tables returns the description of the physical tables that table needs;
// table must be a non-nil *ddbindex.Table[T] (else an error matching
// ddbindex.ErrInvalidWrite). The description is built anew on every call,
// and shares nothing with the model. Package ddbindex sets it in an init
// function (spec.go); package schema calls it.
var Tables func(table any) (*spec.Tables, error)
