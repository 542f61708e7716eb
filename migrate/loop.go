package migrate

import (
	"context"
	"fmt"
	"sync"

	"github.com/ddbindex/ddbindex"
)

// loop is the one goroutine a Router or a Fleet owns: Start starts it
// once, Close stops it and waits until it has ended, and no Start comes
// after Close.
type loop struct {
	mu      sync.Mutex
	started bool
	closed  bool
	cancel  context.CancelFunc // stops the goroutine; nil before start
	done    chan struct{}      // closed when the goroutine has ended
}

// start runs run on a goroutine of its own, with a context that ends with
// ctx or at stop. owner names the type in its errors ("Router", "Fleet"):
// a start after start or stop fails with an error matching
// [ddbindex.ErrInvalidQuery].
func (l *loop) start(ctx context.Context, owner string, run func(context.Context)) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.closed:
		return fmt.Errorf("%w: migrate.%s.Start: the %s is closed", ddbindex.ErrInvalidQuery, owner, owner)
	case l.started:
		return fmt.Errorf("%w: migrate.%s.Start: the %s is started already", ddbindex.ErrInvalidQuery, owner, owner)
	}
	l.started = true
	ctx, l.cancel = context.WithCancel(ctx)
	done := make(chan struct{})
	l.done = done
	go func() {
		defer close(done)
		run(ctx)
	}()
	return nil
}

// stop marks the loop closed, stops its goroutine and waits until it has
// ended; first is false when the loop was stopped before.
func (l *loop) stop() (first bool) {
	l.mu.Lock()
	first = !l.closed
	l.closed = true
	cancel, done := l.cancel, l.done
	l.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
	return first
}
