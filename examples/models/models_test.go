package models_test

import (
	"testing"

	"github.com/ddbindex/ddbindex/examples/models"
	"github.com/ddbindex/ddbindex/internal/nilwalk"
)

// TestNilSafety calls the option functions with a nil and a zero
// *Options, and fails on a panic, or when an exported function is not
// walked.
func TestNilSafety(t *testing.T) {
	t.Parallel()
	var w nilwalk.Walker
	w.Walk(t, models.TicketOptions)
	w.Covers(t, ".")
}
