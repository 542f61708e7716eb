package schema

import (
	"cmp"
	"fmt"
	"strings"

	"github.com/ddbindex/ddbindex"
)

// This file holds the package's error type, Error, and the errors of its
// arguments. As every error of the module, they match a sentinel of package
// ddbindex with errors.Is, and ddbindex.Code gives its code.

// Error lists every difference between the declarations and the live
// tables: what [Check] or [CheckControlTable] found, what [Prepare] cannot close, or the step
// Prepare could not finish. It matches [ddbindex.ErrSchemaMismatch] (code
// DDBX-500).
type Error struct {
	// Problems are the differences, one sentence each.
	Problems []string
	// Warnings are what [CheckWithWarnings] accepts but reports, one
	// sentence each (a kept form that does not exist and that no read goes
	// to), when it finds problems as well.
	Warnings []string
	// intro replaces the opening words of the text; "" for Check's.
	intro string
}

// Error lists the problems, one a line.
func (e *Error) Error() string {
	if e == nil {
		return ddbindex.ErrSchemaMismatch.Error()
	}
	s := fmt.Sprintf("ddbindex: %s [%s]:\n  - %s",
		cmp.Or(e.intro, "the live schema does not match the declarations"),
		e.Code(), strings.Join(e.Problems, "\n  - "))
	for _, w := range e.Warnings {
		s += "\n  - (warning) " + w
	}
	return s
}

// Is makes Error match [ddbindex.ErrSchemaMismatch].
func (e *Error) Is(target error) bool { return target == ddbindex.ErrSchemaMismatch }

// Code returns ddbindex.ErrSchemaMismatch's code, so that [ddbindex.Code]
// gives it.
func (e *Error) Code() string { return ddbindex.Code(ddbindex.ErrSchemaMismatch) }

// invalid is an error of a call's arguments, matching sentinel:
// ddbindex.ErrDeclaration for options CreateTables and Prepare cannot
// honour; for a nil table or client, or an empty name,
// ddbindex.ErrInvalidWrite (CreateTables and Prepare, which change tables)
// or ddbindex.ErrInvalidQuery (Check and CheckControlTable, which read them,
// and a nil among their per-call options). It is raised before any request.
func invalid(sentinel error, op, format string, args ...any) error {
	if sentinel == ddbindex.ErrDeclaration {
		// As the root's New returns it.
		return &ddbindex.Error{Sentinel: sentinel, Reason: "schema." + op + ": " + fmt.Sprintf(format, args...)}
	}
	return fmt.Errorf("%w: schema.%s: "+format, append([]any{sentinel, op}, args...)...)
}
