package stream

import (
	"fmt"
	"slices"
	"time"

	"github.com/ddbindex/ddbindex"
	"github.com/ddbindex/ddbindex/internal/retry"
)

// This file holds the checks of the constructors' options: what a
// constructor cannot honour fails with an error matching
// ddbindex.ErrDeclaration that names the function and the option.

// declarationErr is an error of a constructor's options: an ErrDeclaration
// *ddbindex.Error, as the root's New returns.
func declarationErr(fn, format string, args ...any) error {
	return &ddbindex.Error{Sentinel: ddbindex.ErrDeclaration, Reason: "stream." + fn + ": " + fmt.Sprintf(format, args...)}
}

// applyOptions calls each of optFns on o, in order, refusing a nil one.
func applyOptions[O any](fn string, o *O, optFns []func(*O)) error {
	for i, f := range optFns {
		if f == nil {
			return declarationErr(fn, "option function %d is nil", i)
		}
		f(o)
	}
	return nil
}

// negativeOption is the error of an option below zero; def is its
// default.
func negativeOption(fn, option string, v int64, def any) error {
	shown := any(v)
	if d, ok := def.(time.Duration); ok {
		shown = time.Duration(v)
		def = d
	}
	return declarationErr(fn, "%s is %v; it cannot be negative (0 means the default, %v)", option, shown, def)
}

// checkRetry refuses RetryOptions with a negative field.
func checkRetry(fn, option string, r ddbindex.RetryOptions) error {
	switch {
	case r.MaxAttempts < 0:
		return negativeOption(fn, option+".MaxAttempts", int64(r.MaxAttempts), retry.DefaultAttempts)
	case r.BaseDelay < 0:
		return negativeOption(fn, option+".BaseDelay", int64(r.BaseDelay), retry.DefaultBaseDelay)
	case r.MaxDelay < 0:
		return negativeOption(fn, option+".MaxDelay", int64(r.MaxDelay), retry.DefaultMaxDelay)
	}
	return nil
}

// nilEntry refuses a nil function among per-call SDK options, which the
// SDK would call.
func nilEntry[O any](fn, option string, optFns []func(O)) error {
	if i := slices.IndexFunc(optFns, func(f func(O)) bool { return f == nil }); i >= 0 {
		return declarationErr(fn, "%s[%d] is nil", option, i)
	}
	return nil
}
