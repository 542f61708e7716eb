//go:build race

package ddbindex

// raceEnabled reports whether the tests run under the race detector, which
// changes allocation counts (sync.Pool drops entries at random).
const raceEnabled = true
