// Package migrate moves an index of a ddbindex model from one form to
// another (a GSI to an index table, or back) while a fleet runs: Backfill
// fills the form a migration introduces from the items already in the base
// table; the rest routes reads between the two forms an index keeps during
// the move, compares them, and says when the old form may go. Package
// ddbindex reaches the reads through two seams only, Options.Router and
// Options.Observer, so that a service that is not migrating, and every read
// of an index with one form, pays nothing for them.
//
// The migration, GSI to index table, in the four steps of the runbook in
// docs/migration.md:
//
//  1. Keep both forms. Declare the index type=gsi,keep=table, Prepare the
//     index table (and the control table), start the stream upkeep, deploy,
//     and [Backfill] the entries of the items written before. Reads still
//     use the GSI.
//  2. Route and compare. Give every instance a [Router] over the control
//     table (Options.Router) and [Shadows] (Options.Observer); route one
//     tenant to the table with [SetRoute], then a share (Route.Percent),
//     then every partition. Shadows compares a sampled share of the pages
//     served with the same page on the other form, and reports each
//     mismatch that a re-check confirms; [Compare] reads whole queries on
//     both forms, offline (the operator command's verify).
//  3. Switch. Declare type=table,keep=gsi and deploy: routes name forms,
//     not "declared" or "kept", so they mean the same to both steps, and
//     rolling back is the same path in reverse.
//  4. Drop. Once the metric ddbindex.migration.routed_reads shows no read
//     served by the GSI, drop it and declare type=table.
//
// [Routes] are static routes for the same purpose: in tests, in a service
// without a control table, or as a Router's Fallback.
//
// Every error the package returns matches one of package ddbindex's
// sentinels: options NewRouter, NewShadows or Backfill cannot honour (a nil
// option function or client, a value negative, NaN or out of range; 0 means
// the default) [ddbindex.ErrDeclaration], routes out of range
// [ddbindex.ErrInvalidQuery], a malformed route item
// [ddbindex.ErrMalformedItem], a failed request a [*ddbindex.Error].
package migrate
