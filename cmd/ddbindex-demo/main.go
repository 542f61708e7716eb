// Command ddbindex-demo is the operator command of the example
// applications (examples/supportdesk and examples/feed), built by package
// ops from their models: it checks and prepares their tables, backfills,
// verifies and routes their indexes, explains their queries and decodes
// their cursors, without writing Go.
//
//	ddbindex-demo --endpoint http://127.0.0.1:8000 --table-prefix demo- check
//	ddbindex-demo cursor inspect CURSOR
//	ddbindex-demo help
//
// A service builds its own the same way, in a cmd/ of its repository,
// from its own models and options.
package main

import (
	"github.com/ddbindex/ddbindex/examples/models"
	"github.com/ddbindex/ddbindex/ops"
)

// demoModels are the example applications' models, with their options.
func demoModels() []ops.ModelDef {
	return []ops.ModelDef{
		ops.Model[models.Ticket](models.TicketOptions),
		ops.Model[models.Post](),
	}
}

func main() { ops.Main(demoModels()...) }
