// Package schema makes and checks the DynamoDB tables that a ddbindex
// model declares: the base table with its GSIs and LSIs, each index table,
// TTL where tombstones rely on it, the NEW_AND_OLD_IMAGES stream that keeps
// index tables, and the service's control table (routes, checkpoints).
//
//   - [CreateTables] creates them from the declarations and waits until they
//     are active: for tests, examples and bootstrapping.
//     [CreateTableInputs] and [ControlTableInput] return the same
//     CreateTable requests, for callers that create tables their own way.
//     The control table is no model's: its name is given to
//     ControlTableInput, [CheckControlTable] and PrepareOptions.ControlTable,
//     as to package migrate and package stream.
//   - [Check] compares the declarations with the live tables and reports
//     every difference in one [*Error] (ddbindex.ErrSchemaMismatch,
//     DDBX-500): run it at start-up, or in a deployment pipeline.
//     [CheckWithWarnings] returns besides what it accepts but reports (a
//     kept GSI, dropped at the end of a migration, that no read goes to).
//     [CheckControlTable] does the same for the control table.
//   - [Prepare] brings existing tables to what the declarations need: it
//     creates what is missing (tables, GSIs), enables the stream and TTL,
//     waits for what is being created, and reports what it did ([Report]).
//     It never deletes, and changes nothing when it finds a difference it
//     cannot close.
//
// It is a package of its own so that the root package stays the core a
// service imports to read and write. The physical layout of every index is
// the core's: this package asks it for a description of the tables a
// ddbindex.Table needs, and works from that.
//
//	tickets, err := ddbindex.New[Ticket](client)
//	...
//	if err := schema.Check(ctx, tickets, client); err != nil {
//		var se *schema.Error
//		if errors.As(err, &se) {
//			for _, p := range se.Problems {
//				log.Println(p)
//			}
//		}
//		return err
//	}
//
// Every error matches one sentinel of package ddbindex with errors.Is, and
// ddbindex.Code gives its code: a mismatch is an [*Error]
// (ddbindex.ErrSchemaMismatch), a failed call a *ddbindex.Error
// (ddbindex.ErrDynamoDB), options CreateTables or Prepare cannot honour (a
// nil option function, a negative duration; 0 means the default)
// ddbindex.ErrDeclaration, and a nil table or client
// ddbindex.ErrInvalidWrite (CreateTables, Prepare) or
// ddbindex.ErrInvalidQuery (Check, CheckControlTable, and a nil among
// their per-call options), all raised before any request; so is an empty
// control table name.
package schema
