package migrate

import (
	"context"
	"time"
)

// SetBackfillClock replaces the clock and the wait of o's rate limit and
// progress reports, for the tests of package migrate_test.
func SetBackfillClock(o *BackfillOptions, now func() time.Time, sleep func(ctx context.Context, d time.Duration) error) {
	o.now, o.sleep = now, sleep
}
