// Package ops builds the operator command of a service that uses ddbindex:
// the migration and upkeep steps (check, prepare, backfill, verify, route,
// rollout status, shadow set, drop) and the diagnostics (explain, cursor
// inspect, doctor), run without writing Go.
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
//	                                   of a scan; the partitions that differ compared again after
//	                                   --recheck D (5s), those equal then reported as lag; a JSON
//	                                   report, exit 1 on a mismatch that stays
//	NAME [flags] route [show]          the routes of the indexes that keep two forms
//	NAME [flags] route set --index I --to gsi|lsi|table [--partition P]... [--percent N] [--force]
//	                                   (at least one): those partitions read --to, the others the other form;
//	                                   refused while a live instance does not keep the form, or before the
//	                                   control table records that the backfill of a kept index table or
//	                                   GSI finished (--force overrides)
//	NAME [flags] rollout status [--window D]
//	                                   the fleet view (migrate.Fleet): which instances keep, serve and
//	                                   shadow which form, stale routes, reads per form within --window
//	                                   (1h) and when each form last served one
//	NAME [flags] shadow set --index I --rate R
//	                                   the share of an index's pages the fleet's Shadows compare (0 to 1),
//	                                   at run time (migrate.SetShadow)
//	NAME [flags] drop --index I --form gsi|native-gsi|table [--quiet-for D] [--force]
//	                                   delete an index's kept GSI or index table, refused while the fleet
//	                                   view says it is in use or served a read within --quiet-for (1h)
//	NAME [flags] explain --index I --partition P [--eq|--lt|--le|--gt|--ge|--begins-with T]
//	                     [--between LO --between HI] [--desc] [--limit N] [--after CURSOR] [--via FORM]
//	NAME [flags] cursor inspect [--index I] [--partition P ...] CURSOR|-
//	                                   decode a cursor; with a query's flags, say whether it accepts it
//	NAME [flags] doctor FILE|-         read throttling reasons from log lines: which table or GSI was
//	                                   throttled, and what to do; sends nothing
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
// differ, a cursor is refused, doctor found a throttled table), 2 when it
// could not run (a usage error, a failed call, a refusal of a guard).
//
// [Run] is the command with its streams and client as arguments, for
// tests; [Main] runs it on the process's.
package ops
