package ops_test

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/ddbindex/ddbindex/ops"
)

// The command of an application whose Ticket keeps its by_status index as
// a GSI and an index table (see Ticket in this package's tests), asked how
// a query reads: explain sends nothing, so it needs no server. In the
// application's cmd/ the same is one line: ops.Main(ops.Model[Ticket]()).
func ExampleRun() {
	code := ops.Run(context.Background(),
		[]string{"tickets-ops", "--table-prefix", "prod-", "explain", "--index", "by_status", "--partition", "TEAM-7", "--eq", "open", "--limit", "20"},
		strings.NewReader(""), os.Stdout, os.Stderr, []ops.ModelDef{ops.Model[Ticket]()})
	fmt.Println("exit status", code)
	// Output:
	// Ticket index by_status, partition TEAM-7, = (open), ascending:
	// the first request, to the gsi by_status of table prod-tickets:
	// Query table prod-tickets index by_status (gsi)
	//   KeyCondition: (team = "TEAM-7") AND (begins_with(_sk, "open#"))
	//   Limit: 20, ScanIndexForward: true
	// the same query on the other form the index keeps, the index table prod-tickets-by_status:
	// Query table prod-tickets-by_status (table)
	//   KeyCondition: (team = "TEAM-7") AND (begins_with(_sk, "open#"))
	//   Filter:       (attribute_not_exists(_deleted)) OR (_deleted <> true)
	//   Limit: 20, ScanIndexForward: true
	// exit status 0
}
