package migrate_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ddbindex/ddbindex"
	"github.com/ddbindex/ddbindex/internal/nilwalk"
	"github.com/ddbindex/ddbindex/migrate"
)

// nilDoc is the model the nil-safety walk instantiates Backfill with.
type nilDoc struct {
	_ ddbindex.TableSpec `ddbindex:"migrate-nil-safety"`
	_ ddbindex.IndexSpec `ddbindex:"by_owner,type=table"`

	ID    string `dynamodbav:"id"    ddbindex:"pk"`
	Owner string `dynamodbav:"owner" ddbindex:"by_owner.pk"`
}

// TestNilSafety calls every exported function and method of the package
// with zero and nil arguments, on nil and zero receivers and with a Table
// made from a nil client, and fails on a panic or an error without a code.
// It fails too when an exported function or method is not walked.
func TestNilSafety(t *testing.T) {
	t.Parallel()
	tb, err := ddbindex.New[nilDoc](nil)
	require.NoError(t, err)
	w := nilwalk.Walker{
		Values: []any{tb, "by_owner"},
		Err:    func(err error) bool { return ddbindex.Code(err) != "" },
	}
	w.Walk(t, migrate.Backfill[nilDoc])
	w.Walk(t, migrate.BackfillOptions.Validate)
	w.Walk(t, (*migrate.MemoryCheckpoints).Load)
	w.Walk(t, (*migrate.MemoryCheckpoints).Save)
	w.Walk(t, (*migrate.MemoryCheckpoints).Clear)
	w.Walk(t, (*migrate.DynamoDBCheckpoints).Load)
	w.Walk(t, (*migrate.DynamoDBCheckpoints).Save)
	w.Walk(t, (*migrate.DynamoDBCheckpoints).Clear)
	w.Walk(t, migrate.ForgetBackfill[nilDoc])
	w.Walk(t, migrate.Compare[nilDoc])
	w.Walk(t, (*migrate.Comparison).Equal)
	w.Walk(t, migrate.NewFleet)
	w.Walk(t, migrate.ReadFleet)
	w.Walk(t, migrate.Register[nilDoc])
	w.Walk(t, migrate.SetShadow[nilDoc])
	w.Walk(t, (*migrate.Fleet).Close)
	w.Walk(t, (*migrate.Fleet).Flush)
	w.Walk(t, (*migrate.Fleet).Instance)
	w.Walk(t, (*migrate.Fleet).ObserveRead)
	w.Walk(t, (*migrate.Fleet).Start)
	w.Walk(t, (*migrate.FleetStatus).CheckDrop)
	w.Walk(t, (*migrate.FleetStatus).Lacking)
	w.Walk(t, (*migrate.FleetStatus).LastServed)
	w.Walk(t, (*migrate.FleetStatus).Live)
	w.Walk(t, (*migrate.FleetStatus).Served)
	w.Walk(t, (*migrate.FleetStatus).Using)
	w.Walk(t, (*migrate.Router).ShadowRates)
	w.Walk(t, migrate.NewRouter)
	w.Walk(t, migrate.NewShadows)
	w.Walk(t, migrate.Route.Validate)
	w.Walk(t, migrate.Routes.Route)
	w.Walk(t, migrate.Routes.Validate)
	w.Walk(t, migrate.Routes.MayRoute)
	w.Walk(t, migrate.SetRoute[nilDoc])
	w.Walk(t, (*migrate.Router).Close)
	w.Walk(t, (*migrate.Router).Err)
	w.Walk(t, (*migrate.Router).Refresh)
	w.Walk(t, (*migrate.Router).Route)
	w.Walk(t, (*migrate.Router).Routes)
	w.Walk(t, (*migrate.Router).MayRoute)
	w.Walk(t, (*migrate.Router).Start)
	w.Walk(t, (*migrate.Shadows).Close)
	w.Walk(t, (*migrate.Shadows).ObserveRead)
	w.Walk(t, (*migrate.Shadows).Stats)
	w.Walk(t, (*migrate.Shadows).Wait)
	w.Covers(t, ".")
}
