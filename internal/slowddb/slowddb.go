// Package slowddb is an http.RoundTripper for ddbindex's tests that makes a
// local DynamoDB-compatible server (dynoxide, dynalite) behave, for global
// secondary indexes, the way DynamoDB itself does and the local servers do
// not:
//
//   - A GSI added to an existing table by UpdateTable is not ready at once.
//     DynamoDB reports it with IndexStatus CREATING, first while it
//     allocates resources (Backfilling false), then while it backfills the
//     table's items into it (Backfilling true), then ACTIVE ("Adding a
//     global secondary index to an existing table" in "Managing global
//     secondary indexes", Amazon DynamoDB Developer Guide,
//     https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/GSI.OnlineOps.html).
//     Until then the index cannot be read: DynamoDB answers a Query or Scan
//     of it with a ValidationException "Cannot read from backfilling global
//     secondary index: NAME".
//     The Transport reports such a GSI CREATING in the UpdateTable answer and
//     in the DescribeTable answers that follow, and refuses reads of it,
//     until Options.BackfillPolls DescribeTable answers have been given on
//     the table, or until Finish.
//   - Reads from a GSI are eventually consistent: "All reads from GSIs and
//     streams are eventually consistent", and "the responses may not reflect
//     the results of a recently completed write operation" ("DynamoDB read
//     consistency",
//     https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/HowItWorks.ReadConsistency.html);
//     DynamoDB propagates a table write to its GSIs asynchronously: "There
//     is always a short propagation delay" between a write to the table and
//     its data appearing in the index ("Using Global Secondary Indexes to
//     create an eventually consistent replica", Amazon DynamoDB Developer
//     Guide,
//     https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/bp-indexes-gsi-replica.html).
//     The Transport makes GSI reads see each item as it was Options.Delay
//     ticks of a logical clock ago, or as of the last Settle.
//
// Time is logical, so that tests do not depend on timing: the clock ticks
// once per request the Transport sees (any operation), and Settle makes
// every write so far visible, as when the propagation delay has passed.
//
// # How GSI reads lag
//
// The first GSI read of a table through the Transport makes the table
// tracked: the Transport creates a mirror table on the server (the table's
// name, "-lag-" and random digits, with the same key schema, GSIs and LSIs, on demand),
// copies the table's items into it, and from then on records, after every
// successful write to the table through the Transport (PutItem, UpdateItem,
// DeleteItem, TransactWriteItems, BatchWriteItem), the item's new image
// (read back with a consistent GetItem) on a list of pending writes. A GSI
// read first applies to the mirror, in order, the pending writes that are
// visible by then, then is sent to the mirror's GSI: the server evaluates
// the key condition, filter, projection, Limit and paging as it always
// does, on the table as it was. Reads of the table itself, GetItem and
// strongly consistent reads, and LSI reads are not delayed.
//
// Limits, all outside what ddbindex's tests do: writes to a tracked table
// that do not go through the Transport (another client's) never reach its
// GSI reads through the Transport, which read the mirror; a table becomes
// tracked at its first GSI read, with every write before
// visible; writes to a tracked table are serialized (each is followed by
// its GetItem); an UpdateTable that changes a tracked table's GSIs, or its
// DeleteTable, drops its mirror (the next GSI read makes a new one, with
// nothing pending); the Transport forwards requests whose body it rewrote
// with their original signature, which the local servers do not check (it
// is never put in front of DynamoDB itself). It does not refuse a second
// GSI create while one is CREATING (DynamoDB's LimitExceededException), nor
// set the table's own TableStatus to UPDATING, and a GSI that UpdateTable
// deletes is gone at once, as on the local servers (DynamoDB shows it
// DELETING a while).
package slowddb

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ddbindex/ddbindex/internal/faults"
)

// Options configure a Transport.
type Options struct {
	// Delay is how many ticks of the logical clock (requests through the
	// Transport) a write waits before GSI reads see it. 0: GSI reads are
	// not delayed.
	Delay int
	// BackfillPolls is how many DescribeTable answers on a table report a
	// GSI that UpdateTable added to it CREATING (the first with Backfilling
	// false, the rest true) before it is ACTIVE. 0: it stays CREATING until
	// Finish.
	BackfillPolls int
}

// Stats count what a Transport did.
type Stats struct {
	// Requests is the logical clock: the requests the Transport saw.
	Requests int64
	// Recorded counts the item images recorded after writes to tracked
	// tables; Applied those applied to the mirrors so far.
	Recorded, Applied int64
	// GSIReads counts the reads sent to a mirror's GSI; Lagging those made
	// while writes were held back from it.
	GSIReads, Lagging int64
	// Refused counts the reads refused because their GSI was CREATING.
	Refused int64
	// Creating counts the DescribeTable answers that reported a GSI CREATING.
	Creating int64
}

// Transport is the http.RoundTripper; see the package documentation.
type Transport struct {
	base http.RoundTripper
	o    Options

	// wmu is held shared by writes to untracked tables and exclusively by
	// writes to tracked tables and by the making and dropping of mirrors,
	// so that no write slips between a mirror's copy and its records.
	wmu sync.RWMutex

	mu       sync.Mutex
	now      int64 // the logical clock
	settled  int64 // writes at or before it are visible
	endpoint *url.URL
	header   http.Header
	tables   map[string]*tracked       // by base table name
	creating map[string]map[string]int // table → GSI → polls left (-1: until Finish)
	stats    Stats
}

// tracked is a table whose GSI reads lag.
type tracked struct {
	mirror string
	key    []string        // the table's key attributes
	gsis   map[string]bool // its GSIs

	// amu serializes applying pending writes and the reads of the mirror,
	// and the mirror's drop.
	amu     sync.Mutex
	pending []pendingWrite // under Transport.mu
}

// pendingWrite is an item's image after a write, not yet in the mirror.
type pendingWrite struct {
	at   int64
	key  json.RawMessage
	item json.RawMessage // nil: the item is gone
}

// New returns a Transport that sends through base (http.DefaultTransport
// when nil).
func New(base http.RoundTripper, o Options) *Transport {
	if base == nil {
		base = http.DefaultTransport
	}
	return &Transport{base: base, o: o, tables: map[string]*tracked{}, creating: map[string]map[string]int{}}
}

// Client returns an *http.Client over the Transport, for the HTTPClient of
// an SDK client's Options.
func (t *Transport) Client() *http.Client { return &http.Client{Transport: t} }

// Settle makes every write made so far visible to GSI reads, as when the
// propagation delay has passed.
func (t *Transport) Settle() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.settled = t.now
}

// Lagging reports how many writes GSI reads of table would not see now.
func (t *Transport) Lagging(table string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	tr := t.tables[table]
	if tr == nil {
		return 0
	}
	n := 0
	for _, w := range tr.pending {
		if !t.visible(w.at) {
			n++
		}
	}
	return n
}

// Finish ends the creation of GSI index on table: the next DescribeTable
// reports it ACTIVE, and it can be read.
func (t *Transport) Finish(table, index string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.creating[table], index)
}

// Stats returns what the Transport did so far.
func (t *Transport) Stats() Stats {
	t.mu.Lock()
	defer t.mu.Unlock()
	st := t.stats
	st.Requests = t.now
	return st
}

// Close deletes the mirror tables the Transport made.
func (t *Transport) Close(ctx context.Context) error {
	t.wmu.Lock()
	defer t.wmu.Unlock()
	t.mu.Lock()
	names := make([]string, 0, len(t.tables))
	for name := range t.tables {
		names = append(names, name)
	}
	t.mu.Unlock()
	var errs []error
	for _, name := range names {
		errs = append(errs, t.dropMirror(ctx, name))
	}
	return errors.Join(errs...)
}

// visible reports whether a write recorded at tick at is visible to GSI
// reads now; under t.mu.
func (t *Transport) visible(at int64) bool {
	return at <= t.settled || at+int64(t.o.Delay) <= t.now
}

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		var err error
		body, err = io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
	}
	service, op, _ := strings.Cut(req.Header.Get("X-Amz-Target"), ".")
	t.mu.Lock()
	t.now++
	if t.endpoint == nil {
		u := *req.URL
		t.endpoint = &u
	}
	t.header = req.Header.Clone()
	t.mu.Unlock()
	if service != "DynamoDB_20120810" {
		return t.forward(req, body)
	}
	switch op {
	case "UpdateTable":
		return t.updateTable(req, body)
	case "DeleteTable":
		return t.deleteTable(req, body)
	case "DescribeTable":
		return t.describeTable(req, body)
	case "Query", "Scan":
		return t.read(req, body)
	case "PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem":
		return t.write(req, op, body)
	}
	return t.forward(req, body)
}

// forward sends the request on with body.
func (t *Transport) forward(req *http.Request, body []byte) (*http.Response, error) {
	out := req.Clone(req.Context())
	out.Body = io.NopCloser(bytes.NewReader(body))
	out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	out.ContentLength = int64(len(body))
	out.Header.Set("Content-Length", strconv.Itoa(len(body)))
	return t.base.RoundTrip(out)
}

// forwardRead forwards the request and reads the answer whole.
func (t *Transport) forwardRead(req *http.Request, body []byte) (*http.Response, []byte, error) {
	resp, err := t.forward(req, body)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, nil, err
	}
	return resp, b, nil
}

// withBody returns resp answering body instead.
func withBody(resp *http.Response, body []byte) *http.Response {
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
	resp.Header.Del("X-Amz-Crc32") // the body changed; the SDK checks it when present
	return resp
}

// tableName reads the TableName of a request body.
func tableName(body []byte) string {
	var in struct{ TableName string }
	_ = json.Unmarshal(body, &in)
	return in.TableName
}

func (t *Transport) updateTable(req *http.Request, body []byte) (*http.Response, error) {
	var in struct {
		TableName                   string
		GlobalSecondaryIndexUpdates []struct {
			Create *struct{ IndexName string }
			Delete *struct{ IndexName string }
		}
	}
	if json.Unmarshal(body, &in) != nil || len(in.GlobalSecondaryIndexUpdates) == 0 {
		return t.forward(req, body)
	}
	t.wmu.Lock()
	defer t.wmu.Unlock()
	if err := t.dropMirror(req.Context(), in.TableName); err != nil {
		return nil, err
	}
	resp, b, err := t.forwardRead(req, body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return withBodyOrNil(resp, b, err)
	}
	var created []string
	for _, u := range in.GlobalSecondaryIndexUpdates {
		if u.Create != nil {
			created = append(created, u.Create.IndexName)
		}
	}
	if len(created) == 0 {
		return withBody(resp, b), nil
	}
	t.mu.Lock()
	if t.creating[in.TableName] == nil {
		t.creating[in.TableName] = map[string]int{}
	}
	for _, name := range created {
		t.creating[in.TableName][name] = t.o.BackfillPolls
		if t.o.BackfillPolls == 0 {
			t.creating[in.TableName][name] = -1
		}
	}
	t.mu.Unlock()
	// DynamoDB answers with the new GSI CREATING, allocating resources.
	b = rewriteGSIs(b, "TableDescription", func(name string, g map[string]any) {
		if slices.Contains(created, name) {
			g["IndexStatus"], g["Backfilling"] = "CREATING", false
		}
	})
	return withBody(resp, b), nil
}

func withBodyOrNil(resp *http.Response, b []byte, err error) (*http.Response, error) {
	if err != nil {
		return nil, err
	}
	return withBody(resp, b), nil
}

func (t *Transport) deleteTable(req *http.Request, body []byte) (*http.Response, error) {
	name := tableName(body)
	t.wmu.Lock()
	defer t.wmu.Unlock()
	if err := t.dropMirror(req.Context(), name); err != nil {
		return nil, err
	}
	t.mu.Lock()
	delete(t.creating, name)
	t.mu.Unlock()
	return t.forward(req, body)
}

func (t *Transport) describeTable(req *http.Request, body []byte) (*http.Response, error) {
	name := tableName(body)
	t.mu.Lock()
	n := len(t.creating[name])
	t.mu.Unlock()
	if n == 0 {
		return t.forward(req, body)
	}
	resp, b, err := t.forwardRead(req, body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return withBodyOrNil(resp, b, err)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	b = rewriteGSIs(b, "Table", func(index string, g map[string]any) {
		left, ok := t.creating[name][index]
		if !ok {
			return
		}
		switch {
		case left == 0:
			delete(t.creating[name], index) // ACTIVE, as the server says
			return
		case left > 0:
			t.creating[name][index] = left - 1
		}
		t.stats.Creating++
		// The first poll finds it allocating resources, the others backfilling.
		g["IndexStatus"], g["Backfilling"] = "CREATING", left != t.o.BackfillPolls
	})
	return withBody(resp, b), nil
}

// rewriteGSIs applies fn to each GSI of the table description under field
// of a JSON answer; the answer as it was when it cannot be read.
func rewriteGSIs(b []byte, field string, fn func(name string, g map[string]any)) []byte {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var out map[string]any
	if dec.Decode(&out) != nil {
		return b
	}
	desc, _ := out[field].(map[string]any)
	gsis, _ := desc["GlobalSecondaryIndexes"].([]any)
	for _, g := range gsis {
		if g, ok := g.(map[string]any); ok {
			name, _ := g["IndexName"].(string)
			fn(name, g)
		}
	}
	nb, err := json.Marshal(out)
	if err != nil {
		return b
	}
	return nb
}

// read serves a Query or Scan: refused on a CREATING GSI, from the mirror
// on a GSI of a table whose GSI reads lag.
func (t *Transport) read(req *http.Request, body []byte) (*http.Response, error) {
	var in struct{ TableName, IndexName string }
	if json.Unmarshal(body, &in) != nil || in.IndexName == "" {
		return t.forward(req, body)
	}
	t.mu.Lock()
	_, creating := t.creating[in.TableName][in.IndexName]
	if creating {
		t.stats.Refused++
	}
	t.mu.Unlock()
	if creating {
		return faults.ErrorResponse(req, http.StatusBadRequest, "ValidationException",
			"Cannot read from backfilling global secondary index: "+in.IndexName, "SLOWDDB0000000000000000000000000000000000000000000000"), nil
	}
	if t.o.Delay == 0 {
		return t.forward(req, body)
	}
	tr, err := t.track(req.Context(), in.TableName)
	if err != nil {
		return nil, fmt.Errorf("slowddb: mirroring %s: %w", in.TableName, err)
	}
	if tr == nil || !tr.gsis[in.IndexName] {
		return t.forward(req, body) // an LSI, or no such table: the server says
	}
	tr.amu.Lock()
	defer tr.amu.Unlock()
	if err := t.apply(req.Context(), tr); err != nil {
		return nil, fmt.Errorf("slowddb: applying writes to %s: %w", tr.mirror, err)
	}
	mb, err := setField(body, "TableName", tr.mirror)
	if err != nil {
		return t.forward(req, body)
	}
	resp, b, err := t.forwardRead(req, mb)
	if err != nil {
		return nil, err
	}
	b = bytes.ReplaceAll(b, []byte(strconv.Quote(tr.mirror)), []byte(strconv.Quote(in.TableName)))
	return withBody(resp, b), nil
}

// apply writes the pending writes visible now to tr's mirror; under tr.amu.
func (t *Transport) apply(ctx context.Context, tr *tracked) error {
	t.mu.Lock()
	n := 0
	for n < len(tr.pending) && t.visible(tr.pending[n].at) {
		n++
	}
	ready := slices.Clone(tr.pending[:n])
	t.stats.GSIReads++
	if n < len(tr.pending) {
		t.stats.Lagging++
	}
	t.mu.Unlock()
	for _, w := range ready {
		var err error
		if w.item != nil {
			_, err = t.call(ctx, "PutItem", map[string]any{"TableName": tr.mirror, "Item": w.item})
		} else {
			_, err = t.call(ctx, "DeleteItem", map[string]any{"TableName": tr.mirror, "Key": w.key})
		}
		if err != nil {
			return err
		}
	}
	t.mu.Lock()
	tr.pending = tr.pending[n:]
	t.stats.Applied += int64(n)
	t.mu.Unlock()
	return nil
}

// keyed is one item a write request names, by its key or its whole item.
type keyed struct {
	table string
	key   map[string]json.RawMessage
	item  map[string]json.RawMessage
}

// written lists the items a write request writes.
func written(op string, body []byte) []keyed {
	type ref struct {
		TableName string
		Key, Item map[string]json.RawMessage
	}
	var out []keyed
	add := func(r *ref) {
		if r != nil {
			out = append(out, keyed{table: r.TableName, key: r.Key, item: r.Item})
		}
	}
	switch op {
	case "PutItem", "UpdateItem", "DeleteItem":
		var r ref
		if json.Unmarshal(body, &r) == nil {
			add(&r)
		}
	case "TransactWriteItems":
		var in struct {
			TransactItems []struct{ Put, Update, Delete *ref }
		}
		if json.Unmarshal(body, &in) == nil {
			for _, it := range in.TransactItems {
				add(it.Put)
				add(it.Update)
				add(it.Delete)
			}
		}
	case "BatchWriteItem":
		var in struct {
			RequestItems map[string][]struct {
				PutRequest    *struct{ Item map[string]json.RawMessage }
				DeleteRequest *struct{ Key map[string]json.RawMessage }
			}
		}
		if json.Unmarshal(body, &in) == nil {
			for table, reqs := range in.RequestItems {
				for _, r := range reqs {
					if r.PutRequest != nil {
						out = append(out, keyed{table: table, item: r.PutRequest.Item})
					}
					if r.DeleteRequest != nil {
						out = append(out, keyed{table: table, key: r.DeleteRequest.Key})
					}
				}
			}
		}
	}
	return out
}

// write forwards a write; to a tracked table, it records the new images of
// the items it wrote.
func (t *Transport) write(req *http.Request, op string, body []byte) (*http.Response, error) {
	items := written(op, body)
	anyTracked := func() bool {
		t.mu.Lock()
		defer t.mu.Unlock()
		for _, k := range items {
			if t.tables[k.table] != nil {
				return true
			}
		}
		return false
	}
	t.wmu.RLock()
	if !anyTracked() {
		defer t.wmu.RUnlock()
		return t.forward(req, body)
	}
	t.wmu.RUnlock()
	t.wmu.Lock()
	defer t.wmu.Unlock()
	resp, b, err := t.forwardRead(req, body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return withBodyOrNil(resp, b, err)
	}
	for _, k := range items {
		t.mu.Lock()
		tr := t.tables[k.table]
		t.mu.Unlock()
		if tr == nil {
			continue
		}
		key := k.key
		if key == nil {
			key = map[string]json.RawMessage{}
			for _, a := range tr.key {
				key[a] = k.item[a]
			}
		}
		kb, err := json.Marshal(key)
		if err != nil {
			return nil, err
		}
		got, err := t.call(req.Context(), "GetItem", map[string]any{"TableName": k.table, "Key": json.RawMessage(kb), "ConsistentRead": true})
		if err != nil {
			return nil, fmt.Errorf("slowddb: reading back %s: %w", k.table, err)
		}
		var out struct{ Item json.RawMessage }
		if err := json.Unmarshal(got, &out); err != nil {
			return nil, err
		}
		if len(out.Item) == 0 || string(out.Item) == "null" {
			out.Item = nil
		}
		t.mu.Lock()
		tr.pending = append(tr.pending, pendingWrite{at: t.now, key: kb, item: out.Item})
		t.stats.Recorded++
		t.mu.Unlock()
	}
	return withBody(resp, b), nil
}

// tableDesc is what the Transport reads of a DescribeTable answer.
type tableDesc struct {
	Table struct {
		TableStatus            string
		AttributeDefinitions   json.RawMessage
		KeySchema              []struct{ AttributeName, KeyType string }
		GlobalSecondaryIndexes []struct {
			IndexName   string
			IndexStatus string
			KeySchema   json.RawMessage
			Projection  json.RawMessage
		}
		LocalSecondaryIndexes []struct {
			IndexName  string
			KeySchema  json.RawMessage
			Projection json.RawMessage
		}
	}
}

// track returns the tracked table of name, making its mirror the first
// time; nil when the table has no GSI (or does not exist).
func (t *Transport) track(ctx context.Context, name string) (*tracked, error) {
	t.mu.Lock()
	tr := t.tables[name]
	t.mu.Unlock()
	if tr != nil {
		return tr, nil
	}
	t.wmu.Lock()
	defer t.wmu.Unlock()
	t.mu.Lock()
	tr = t.tables[name]
	t.mu.Unlock()
	if tr != nil {
		return tr, nil
	}
	b, err := t.call(ctx, "DescribeTable", map[string]any{"TableName": name})
	if err != nil {
		return nil, nil // the read itself will fail as the server says
	}
	var d tableDesc
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, err
	}
	if len(d.Table.GlobalSecondaryIndexes) == 0 {
		return nil, nil
	}
	tr = &tracked{mirror: name + "-lag-" + randomSuffix(), gsis: map[string]bool{}}
	create := map[string]any{
		"TableName":            tr.mirror,
		"AttributeDefinitions": d.Table.AttributeDefinitions,
		"BillingMode":          "PAY_PER_REQUEST",
	}
	var keySchema []map[string]string
	for _, k := range d.Table.KeySchema {
		tr.key = append(tr.key, k.AttributeName)
		keySchema = append(keySchema, map[string]string{"AttributeName": k.AttributeName, "KeyType": k.KeyType})
	}
	create["KeySchema"] = keySchema
	var gsis, lsis []map[string]any
	for _, g := range d.Table.GlobalSecondaryIndexes {
		tr.gsis[g.IndexName] = true
		gsis = append(gsis, map[string]any{"IndexName": g.IndexName, "KeySchema": g.KeySchema, "Projection": g.Projection})
	}
	create["GlobalSecondaryIndexes"] = gsis
	for _, l := range d.Table.LocalSecondaryIndexes {
		lsis = append(lsis, map[string]any{"IndexName": l.IndexName, "KeySchema": l.KeySchema, "Projection": l.Projection})
	}
	if len(lsis) > 0 {
		create["LocalSecondaryIndexes"] = lsis
	}
	if _, err := t.call(ctx, "CreateTable", create); err != nil {
		return nil, err
	}
	if err := t.waitActive(ctx, tr.mirror); err != nil {
		return nil, err
	}
	if err := t.copyItems(ctx, name, tr.mirror); err != nil {
		return nil, err
	}
	t.mu.Lock()
	t.tables[name] = tr
	t.mu.Unlock()
	return tr, nil
}

// waitActive polls until the mirror and its GSIs are ACTIVE: dynalite
// creates tables after a pause.
func (t *Transport) waitActive(ctx context.Context, name string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		b, err := t.call(ctx, "DescribeTable", map[string]any{"TableName": name})
		if err != nil {
			return err
		}
		var d tableDesc
		if err := json.Unmarshal(b, &d); err != nil {
			return err
		}
		active := d.Table.TableStatus == "ACTIVE"
		for _, g := range d.Table.GlobalSecondaryIndexes {
			active = active && (g.IndexStatus == "" || g.IndexStatus == "ACTIVE")
		}
		if active {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("table %s not ACTIVE: %w", name, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// copyItems copies the items of table into mirror.
func (t *Transport) copyItems(ctx context.Context, table, mirror string) error {
	var start json.RawMessage
	for {
		in := map[string]any{"TableName": table, "ConsistentRead": true}
		if start != nil {
			in["ExclusiveStartKey"] = start
		}
		b, err := t.call(ctx, "Scan", in)
		if err != nil {
			return err
		}
		var out struct {
			Items            []json.RawMessage
			LastEvaluatedKey json.RawMessage
		}
		if err := json.Unmarshal(b, &out); err != nil {
			return err
		}
		for len(out.Items) > 0 {
			n := min(25, len(out.Items))
			var reqs []any
			for _, it := range out.Items[:n] {
				reqs = append(reqs, map[string]any{"PutRequest": map[string]any{"Item": it}})
			}
			out.Items = out.Items[n:]
			batch := map[string]any{mirror: reqs}
			for len(batch) > 0 {
				rb, err := t.call(ctx, "BatchWriteItem", map[string]any{"RequestItems": batch})
				if err != nil {
					return err
				}
				var res struct{ UnprocessedItems map[string]any }
				if err := json.Unmarshal(rb, &res); err != nil {
					return err
				}
				batch = res.UnprocessedItems
			}
		}
		if len(out.LastEvaluatedKey) == 0 || string(out.LastEvaluatedKey) == "null" {
			return nil
		}
		start = out.LastEvaluatedKey
	}
}

// dropMirror deletes table's mirror and forgets its pending writes; under
// t.wmu.
func (t *Transport) dropMirror(ctx context.Context, table string) error {
	t.mu.Lock()
	tr := t.tables[table]
	delete(t.tables, table)
	t.mu.Unlock()
	if tr == nil {
		return nil
	}
	tr.amu.Lock()
	defer tr.amu.Unlock()
	_, err := t.call(ctx, "DeleteTable", map[string]any{"TableName": tr.mirror})
	var ae *apiError
	if errors.As(err, &ae) && strings.HasSuffix(ae.code, "ResourceNotFoundException") {
		return nil
	}
	return err
}

// apiError is an error answer to one of the Transport's own calls.
type apiError struct {
	op, code, msg string
}

func (e *apiError) Error() string { return e.op + ": " + e.code + ": " + e.msg }

// call sends one request of the Transport's own to the server the clients
// talk to, with the headers of the last request it saw.
func (t *Transport) call(ctx context.Context, op string, in any) (json.RawMessage, error) {
	body, err := json.Marshal(in)
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	endpoint, header := t.endpoint, t.header.Clone()
	t.mu.Unlock()
	if endpoint == nil {
		return nil, errors.New("slowddb: no request seen yet, so no endpoint")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint.String(), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	for _, h := range []string{"Authorization", "X-Amz-Date", "X-Amz-Security-Token", "User-Agent"} {
		if v := header.Get(h); v != "" {
			req.Header.Set(h, v)
		}
	}
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	req.Header.Set("X-Amz-Target", "DynamoDB_20120810."+op)
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Type    string `json:"__type"`
			Message string `json:"message"`
		}
		_ = json.Unmarshal(b, &e)
		return nil, &apiError{op: op, code: e.Type, msg: e.Message + " (" + resp.Status + ")"}
	}
	return b, nil
}

// randomSuffix returns 8 random hex digits, which keep the mirrors of
// Transports that share a server apart.
func randomSuffix() string {
	var b [4]byte
	rand.Read(b[:]) // never fails: crypto/rand crashes the program instead
	return hex.EncodeToString(b[:])
}

// setField returns the JSON object body with field set to value.
func setField(body []byte, field, value string) ([]byte, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, err
	}
	v, err := json.Marshal(value)
	if err != nil {
		return nil, err
	}
	m[field] = v
	return json.Marshal(m)
}
