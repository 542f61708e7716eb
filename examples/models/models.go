// Package models declares the models of the example applications,
// examples/supportdesk's Ticket and examples/feed's Post, with the options
// each application opens its table with (an option function given a nil
// *Options sets nothing). They live in a package of their
// own so that cmd/ddbindex-demo, the operator command of the examples, is
// built from the very declarations the examples run with.
package models

import (
	"time"

	"github.com/ddbindex/ddbindex"
)

// Ticket is one support ticket (examples/supportdesk).
type Ticket struct {
	_ ddbindex.TableSpec `ddbindex:"supportdesk-tickets,pk=PK,sk=SK"`
	// Switching type=table to type=gsi (and adding pk=/sk= names) is the
	// whole migration between an index table and a GSI.
	_ ddbindex.IndexSpec `ddbindex:"by_status,type=table"`

	Team    string    `dynamodbav:"team"    ddbindex:"pk,label=TEAM;by_status.pk"`
	Status  string    `dynamodbav:"status"  ddbindex:"sk:0,label=STATUS;by_status.sk:0"`
	ID      string    `dynamodbav:"id"      ddbindex:"sk:1,label=TICKET"`
	Opened  time.Time `dynamodbav:"opened"  ddbindex:"by_status.sk:1"`
	Title   string    `dynamodbav:"title"`
	Version int64     `dynamodbav:"version" ddbindex:"version"`
}

// TicketOptions are the support desk's options: its index table is written
// in the same transaction as the ticket, so it needs no stream.
func TicketOptions(o *ddbindex.Options) {
	if o != nil {
		o.WriteThrough = true
	}
}

// Post is one post of the global feed (examples/feed). Every post is in the
// one global feed: Feed is the constant "global", the old GSI's sort = 0.
// The feed index's sort key is the 13-digit epoch-millisecond time the old
// GSI used, then the post id. A deleted post's tombstone lives a day
// (retention=). The feed's index table is kept from the base table's
// stream.
type Post struct {
	_ ddbindex.TableSpec `ddbindex:"feed-posts,retention=24h"`
	_ ddbindex.IndexSpec `ddbindex:"newest,type=table,shards=16"`

	ID        string    `dynamodbav:"id"         ddbindex:"pk"`
	Feed      string    `dynamodbav:"feed"       ddbindex:"newest.pk"`
	Published time.Time `dynamodbav:"published"  ddbindex:"newest.sk,format=unixms,width=13"`
	Author    string    `dynamodbav:"author"`
	Text      string    `dynamodbav:"text"`
}
