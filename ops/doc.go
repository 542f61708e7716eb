// Package ops builds the operator command of a service that uses ddbindex:
// the migration and upkeep steps (check, prepare, backfill, verify, route)
// and the diagnostics (explain, cursor inspect), run without writing Go.
//
// The command is compiled with the application's own models and options,
// in a cmd/ of its repository, so it sees the tables, routes and cursors
// the application does:
//
//	package main
//
//	import (
//		"example.com/tickets/model"
//		"github.com/ddbindex/ddbindex/ops"
//	)
//
//	func main() {
//		ops.Main(
//			ops.Model[model.Ticket](model.Options).ControlTable(model.ControlTable),
//			ops.Model[model.Post](model.Options).ControlTable(model.ControlTable),
//		)
//	}
//
// Usage:
//
//	NAME [flags] check                 the live tables against the declarations (schema.Check)
//	NAME [flags] prepare               create what is missing: tables, GSIs, stream, TTL, control table (schema.Prepare)
//	NAME [flags] backfill --index I    fill the form a migration introduces (Backfill): --workers,
//	                                   --segment/--total-segments, --rate (write units a second),
//	                                   resuming from positions saved in the control table (--restart
//	                                   forgets them); a progress bar on a terminal, quiet elsewhere
//	NAME [flags] verify                compare the two forms of an index (migrate.Compare) over
//	                                   --partition P..., --partitions-from FILE, or --sample N partitions
//	                                   of a scan; a JSON report, exit 1 on a mismatch
//	NAME [flags] route [show]          the routes of the indexes that keep two forms
//	NAME [flags] route set --index I --to gsi|lsi|table [--partition P]... [--percent N]
//	                                   (at least one): those partitions read --to, the others the other form
//	NAME [flags] explain --index I --partition P [--eq|--lt|--le|--gt|--ge|--begins-with T]
//	                     [--between LO --between HI] [--desc] [--limit N] [--after CURSOR] [--via FORM]
//	NAME [flags] cursor inspect [--index I] [--partition P ...] CURSOR|-
//	                                   decode a cursor; with a query's flags, say whether it accepts it
//
// Every command takes, before or after its name: --model (a Go type name or
// base table name; by default every model, or the one that declares
// --index), --table-prefix (put before every name the application's
// Options.TableName maps to), --control-table (instead of the one
// [ModelDef.ControlTable] names; the control table is the service's, no
// model's, and --table-prefix leaves it alone), and --endpoint, --region and --profile, on top of
// the standard AWS configuration chain (environment, shared files, IAM
// roles). Key values are given as tuples: one value per component,
// separated by commas ("TEAM-7", "open,2"), each read as its component's
// type (RFC 3339 for times, hexadecimal for bytes).
//
// Exit status, as diff's: 0 when the command did its work and found
// nothing wrong, 1 when it found a problem (the schema differs, the forms
// differ, a cursor is refused), 2 when it could not run (a usage error, a
// failed call).
//
// [Run] is the command with its streams and client as arguments, for
// tests; [Main] runs it on the process's.
package ops
