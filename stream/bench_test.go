package stream

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/stretchr/testify/require"

	"github.com/ddbindex/ddbindex"
	"github.com/ddbindex/ddbindex/internal/ddbtest"
)

// BenchmarkStreamConsumer measures how fast the consumer applies a stream:
// the same 300 records (puts, moves, updates, deletes of tickets; about 1.6
// index-table writes each), replayed into fresh index tables each
// iteration, with one worker and with 16, reported as records/s, and for 16
// workers as the speedup over one worker in the same run.
//
// "server" talks to the local server directly: on a small machine the
// server's CPU, not the round trip, limits it, so parallel apply gains
// little. "rtt=3ms" adds a fixed 3 ms to every request, a model of AWS's
// network round trip, where apply is bound by latency as it is in
// production: there, one worker applies about one record per round trip,
// and 16 apply up to 16.
func BenchmarkStreamConsumer(b *testing.B) {
	ddbtest.Require(b, ddbtest.Streams)
	ddbtest.Require(b, ddbtest.Transactions)
	tb, c := newTestTable[stTicket](b, stFixedNow)
	n := cfWorkload(b, tb, "T1", 300, 3)
	sc := ddbtest.StreamsClient(b)
	rate := map[string]float64{}
	var mu sync.Mutex
	for _, rtt := range []time.Duration{0, 3 * time.Millisecond} {
		name := "server"
		if rtt > 0 {
			name = fmt.Sprintf("rtt=%v", rtt)
		}
		// Both variants use a transport that keeps enough connections
		// for 16 workers; the SDK's default keeps 10 per host.
		hc := &http.Client{Transport: &sbLatency{rtt: rtt, base: &http.Transport{MaxIdleConns: 64, MaxIdleConnsPerHost: 64}}}
		db := dynamodb.New(c.Options(), func(o *dynamodb.Options) { o.HTTPClient = hc })
		streams := dynamodbstreams.New(sc.Options(), func(o *dynamodbstreams.Options) { o.HTTPClient = hc })
		for _, workers := range []int{1, 16} {
			b.Run(fmt.Sprintf("%s/workers=%d", name, workers), func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					_, names := freshIndexes(b, tb, stBase, fmt.Sprintf("%s-%d-%d", name, workers, i), stFixedNow)
					target, err := ddbindex.New[stTicket](db, stFixedNow, func(o *ddbindex.Options) { o.TableName = names })
					require.NoError(b, err)
					cons := newConsumer(b, target, streams, &MemoryCheckpoints{}, func(o *ConsumerOptions) { o.Workers = workers })
					b.StartTimer()
					st, err := cons.Poll(b.Context())
					require.NoError(b, err)
					require.Equal(b, n, st.Changes)
				}
				perSec := float64(n*b.N) / b.Elapsed().Seconds()
				b.ReportMetric(perSec, "records/s")
				mu.Lock()
				defer mu.Unlock()
				if workers == 1 {
					rate[name] = perSec
				} else if one := rate[name]; one > 0 {
					b.ReportMetric(perSec/one, "x-vs-1-worker")
				}
			})
		}
	}
}

// sbLatency adds a fixed delay to every request.
type sbLatency struct {
	rtt  time.Duration
	base http.RoundTripper
}

func (l *sbLatency) RoundTrip(r *http.Request) (*http.Response, error) {
	if l.rtt > 0 {
		t := time.NewTimer(l.rtt)
		select {
		case <-r.Context().Done():
			t.Stop()
			return nil, r.Context().Err()
		case <-t.C:
		}
	}
	return l.base.RoundTrip(r)
}
