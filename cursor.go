package ddbindex

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"math/bits"
	"reflect"
	"strings"
	"unicode/utf8"

	"github.com/ddbindex/ddbindex/internal/bridge"
)

// This file owns cursors: the only way a position crosses to a caller and
// back. A cursor is the unpadded URL-safe Base64 of
//
//	version   1 byte (cursorVersion)
//	flags     1 byte (bit 0: descending; bit 1: a next position follows;
//	          bit 2: the next position is a dead-through position, see below;
//	          bit 3: with bit 2, that position was evaluated on a form whose
//	          sort key may repeat)
//	index     uvarint length + logical index name ("" for the base table)
//	count     uvarint: number of fields
//	fields    count × (uvarint length + attribute name, uvarint length + key text)
//	[next]    count × (uvarint length + key text), then the 8-byte read
//	          digest, when flag bit 1 is set
//	[mac]     32 bytes of HMAC-SHA256 over everything before it, when signed
//	          (with Options.CursorKeys[0]; any of the keys verifies it)
//
// It names a logical position: the canonical key text of every field the
// index key and the base key are made of, so a cursor minted while an index
// was a GSI goes on working once it is an index table, and back. The fields
// are the last item of the page; next, when present, is the first live item
// after it, which the page fill read ahead: everything between the two was
// read and found dead, so the next page may start at next instead of reading
// them again. The read digest names what "dead" meant: the caller's filter
// and whether tombstones were included; a query whose digest differs starts
// after the last item instead. With bit 2, the next position is instead the
// last position the page fill evaluated, past the last item, through which
// everything was read and found dead: the next page starts exactly after it.
// It is the key of an item DynamoDB returned as LastEvaluatedKey, so it is a
// real start key on every key type, where a start key just before a live
// item cannot always be built (a multi-attribute sort key, a value at
// DynamoDB's limits, a tie with the page's last item). Where the sort key may repeat (a native GSI or LSI
// sort key), DynamoDB orders the entries that share a sort value, and a form
// whose sort key ends with the base key (an index table) may order them
// otherwise; bit 3 says which kind of form evaluated the position, and the
// next page starts from it only on a form of the same kind (else after the
// last item, reading the dead entries again rather than skipping a live one
// that the other order placed before the position). Decoding is strict: every
// field must be the index's, in order, of its declared form, and both
// positions must lie in the query's partition and range, next after the
// last item.

const (
	cursorVersion = 1
	flagDesc      = 1 << 0
	flagNext      = 1 << 1
	flagThrough   = 1 << 2
	flagTied      = 1 << 3
	macSize       = sha256.Size
)

var cursorEncoding = base64.RawURLEncoding.Strict()

// cursorPos is what a cursor names: the position after which the next page
// starts, and, when the page fill read it, the first live item after it,
// with the digest of the read that found the items between them dead.
type cursorPos struct {
	at      position
	next    position // nil when unknown
	through bool     // next is the last position evaluated, not a live item
	// tied: with through, next was evaluated on a form whose sort key may
	// repeat (its place among ties is the server's order).
	tied   bool
	digest readDigest
}

// readDigest identifies what a read counted as live: its filter (the
// caller's, not the tombstone rule, which each layout applies its own way)
// and whether it included tombstones.
type readDigest [8]byte

// encodeCursor mints the cursor for c in d.
func encodeCursor(d *layout, c cursorPos, desc bool, key []byte) string {
	n := 2 + stringSize(d.name) + uvarintSize(uint64(len(d.slots)))
	for i, f := range d.slots {
		n += stringSize(f.attr) + stringSize(c.at[i])
	}
	for _, t := range c.next {
		n += stringSize(t)
	}
	if c.next != nil {
		n += len(c.digest)
	}
	if key != nil {
		n += macSize
	}
	// One buffer holds the body and, after it, its Base64 text.
	b := make([]byte, 0, n+cursorEncoding.EncodedLen(n))
	flags := byte(0)
	if desc {
		flags |= flagDesc
	}
	if c.next != nil {
		flags |= flagNext
		if c.through {
			flags |= flagThrough
			if c.tied {
				flags |= flagTied
			}
		}
	}
	b = append(b, cursorVersion, flags)
	b = appendString(b, d.name)
	b = binary.AppendUvarint(b, uint64(len(d.slots)))
	for i, f := range d.slots {
		b = appendString(b, f.attr)
		b = appendString(b, c.at[i])
	}
	for _, t := range c.next {
		b = appendString(b, t)
	}
	if c.next != nil {
		b = append(b, c.digest[:]...)
	}
	if key != nil {
		m := hmac.New(sha256.New, key)
		m.Write(b)
		b = m.Sum(b)
	}
	raw := len(b)
	out := b[raw : raw+cursorEncoding.EncodedLen(raw)]
	cursorEncoding.Encode(out, b)
	return string(out)
}

// uvarintSize is the length of v's varint.
func uvarintSize(v uint64) int { return max(1, (bits.Len64(v)+6)/7) }

// stringSize is the length of s as appendString writes it.
func stringSize(s string) int { return uvarintSize(uint64(len(s))) + len(s) }

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// cursorReader reads the fields of a decoded cursor, bounds-checked. Its
// methods return "" or what is wrong.
type cursorReader struct {
	s   string
	off int
}

// uvarint reads a minimal unsigned varint: each value has one encoding, so
// each position has one cursor.
func (r *cursorReader) uvarint() (uint64, string) {
	var v uint64
	for i := 0; ; i++ { // ends by the 10th byte: below 0x80, or overflow
		if r.off+i >= len(r.s) {
			return 0, "truncated"
		}
		c := r.s[r.off+i]
		if i == binary.MaxVarintLen64-1 && c > 1 {
			return 0, "varint overflows 64 bits"
		}
		v |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			if c == 0 && i > 0 {
				return 0, "non-minimal varint"
			}
			r.off += i + 1
			return v, ""
		}
	}
}

func (r *cursorReader) str() (string, string) {
	n, bad := r.uvarint()
	if bad != "" {
		return "", bad
	}
	if n > uint64(len(r.s)-r.off) {
		return "", "truncated"
	}
	s := r.s[r.off : r.off+int(n)]
	r.off += int(n)
	return s, ""
}

// decodeCursor strictly decodes a cursor minted for d, and returns its
// positions. It checks the size cap, the encoding (canonical: no line breaks,
// minimal varints), the signature, the version, the order, the index, and
// every field's name, order and form. The caller checks the positions against
// the query's partition and condition.
func decodeCursor(d *layout, token string, desc bool, o *settings) (cursorPos, error) {
	c, _, err := readCursor(d, token, &desc, o)
	return c, err
}

// readCursor is decodeCursor with the order to check in wantDesc; nil accepts
// either order. It also returns the order the cursor was minted for.
func readCursor(d *layout, token string, wantDesc *bool, o *settings) (cursorPos, bool, error) {
	var none cursorPos
	if len(token) > o.MaxCursorBytes {
		return none, false, cursorErr(nil, "%d bytes is over the %d-byte cap", len(token), o.MaxCursorBytes)
	}
	// The decoder skips CR and LF even in strict mode; a cursor has none.
	if strings.ContainsAny(token, "\r\n") {
		return none, false, cursorErr(nil, "not unpadded URL-safe Base64 (line break)")
	}
	raw, err := cursorEncoding.DecodeString(token)
	if err != nil {
		return none, false, cursorErr(nil, "not unpadded URL-safe Base64")
	}
	if len(o.CursorKeys) > 0 {
		if len(raw) < macSize+2 {
			return none, false, cursorErr(nil, "too short to carry a signature")
		}
		body, sig := raw[:len(raw)-macSize], raw[len(raw)-macSize:]
		if !signedByAny(body, sig, o.CursorKeys) {
			return none, false, cursorErr(nil, "signature does not match")
		}
		raw = body
	}
	if len(raw) < 2 {
		return none, false, cursorErr(nil, "truncated")
	}
	if raw[0] != cursorVersion {
		return none, false, cursorErr(nil, "unknown version %d", raw[0])
	}
	if raw[1]&^(flagDesc|flagNext|flagThrough|flagTied) != 0 || raw[1]&(flagNext|flagThrough) == flagThrough ||
		raw[1]&(flagThrough|flagTied) == flagTied {
		return none, false, cursorErr(nil, "unknown flags 0x%02x", raw[1])
	}
	if wantDesc != nil && (raw[1]&flagDesc != 0) != *wantDesc {
		if *wantDesc {
			return none, false, cursorErr(nil, "minted for an ascending query, used in a descending one")
		}
		return none, false, cursorErr(nil, "minted for a descending query, used in an ascending one")
	}
	r := cursorReader{s: string(raw), off: 2}
	name, bad := r.str()
	if bad != "" {
		return none, false, cursorErr(nil, "index name: %s", bad)
	}
	if name != d.name {
		return none, false, cursorErr(nil, "minted for %s, used on %s", untrustedLabel(name), indexLabel(d.name))
	}
	count, bad := r.uvarint()
	if bad != "" {
		return none, false, cursorErr(nil, "field count: %s", bad)
	}
	if count != uint64(len(d.slots)) {
		return none, false, cursorErr(nil, "%d fields, %s has %d", count, indexLabel(d.name), len(d.slots))
	}
	at := make(position, len(d.slots))
	for i, f := range d.slots {
		attr, bad := r.str()
		if bad != "" {
			return none, false, cursorErr(nil, "name of field %d: %s", i, bad)
		}
		if attr != f.attr {
			return none, false, cursorErr(nil, "field %d is %q, want %q", i, untrusted(attr), f.attr)
		}
		if at[i], err = r.text(f, ""); err != nil {
			return none, false, err
		}
	}
	c := cursorPos{at: at, through: raw[1]&flagThrough != 0, tied: raw[1]&flagTied != 0}
	if raw[1]&flagNext != 0 {
		c.next = make(position, len(d.slots))
		for i, f := range d.slots {
			if c.next[i], err = r.text(f, "next position: "); err != nil {
				return none, false, err
			}
		}
		if len(r.s)-r.off < len(c.digest) {
			return none, false, cursorErr(nil, "next position: truncated read digest")
		}
		r.off += copy(c.digest[:], r.s[r.off:])
	}
	if r.off != len(r.s) {
		return none, false, cursorErr(nil, "%d trailing bytes", len(r.s)-r.off)
	}
	return c, raw[1]&flagDesc != 0, nil
}

// signedByAny reports whether sig is the HMAC-SHA256 of body under one of
// keys. Every key is tried, so the time taken does not tell which matched.
func signedByAny(body, sig []byte, keys [][]byte) bool {
	ok := false
	for _, k := range keys {
		m := hmac.New(sha256.New, k)
		m.Write(body)
		if hmac.Equal(m.Sum(nil), sig) {
			ok = true
		}
	}
	return ok
}

// text reads the key text of field f and checks its form; where prefixes
// the reason of an error.
func (r *cursorReader) text(f *field, where string) (string, error) {
	text, bad := r.str()
	if bad != "" {
		return "", cursorErr(nil, "%svalue of %s: %s", where, f.attr, bad)
	}
	switch f.canon.kind {
	case encString, encCustom:
		// Stored in a DynamoDB String.
		if !utf8.ValidString(text) {
			return "", cursorErr(nil, "%svalue of %s is not valid UTF-8", where, f.attr)
		}
	}
	if err := checkText(f, text); err != nil {
		return "", cursorErr(err, "%svalue of %s is not a %s", where, f.attr, f.typ)
	}
	return text, nil
}

// checkText reports whether text is the canonical key text of a value of f.
// A KeyTexter's text must parse back (when *T is a KeyTextParser) to a value
// whose KeyText is text itself; a panic in that user code is an error too.
func checkText(f *field, text string) (err error) {
	if f.canon.kind != encCustom {
		return f.canon.check(text)
	}
	v := reflect.New(f.typ)
	p, ok := v.Interface().(KeyTextParser)
	if !ok {
		return nil // nothing to check it with: any text the type could have
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s panicked on the text: %v", f.typ, r)
		}
	}()
	if err := p.ParseKeyText(text); err != nil {
		return err
	}
	back, err := v.Elem().Interface().(KeyTexter).KeyText()
	if err != nil {
		return err
	}
	if back != text {
		return fmt.Errorf("%q is not canonical: the value's key text is %q", untrusted(text), back)
	}
	return nil
}

// untrusted shortens text from a cursor for an error message (which %q then
// quotes).
func untrusted(s string) string {
	const max = 64
	if len(s) > max {
		return s[:max] + "..."
	}
	return s
}

// untrustedLabel is indexLabel for a name read from a cursor: quoted and
// shortened, since it may hold anything.
func untrustedLabel(name string) string {
	if name == "" {
		return indexLabel(name)
	}
	return fmt.Sprintf("index %q", untrusted(name))
}

func init() {
	bridge.InspectCursor = func(table any, index, cursor string) (*bridge.Cursor, error) {
		t, ok := table.(inspectable)
		if !ok {
			return nil, fmt.Errorf("%w: InspectCursor: %T is not a *ddbindex.Table", ErrInvalidQuery, table)
		}
		return t.inspectCursor(index, cursor)
	}
}

// inspectable is what *Table[T] is to internal/bridge, whatever T.
type inspectable interface {
	inspectCursor(index, cursor string) (*bridge.Cursor, error)
}

// inspectCursor decodes a cursor as a query of the named index ("" for the
// base table) would, and returns what it holds: for package ops's
// InspectCursor and its "cursor inspect" command, through internal/bridge.
// It sends nothing.
//
// It makes every check that does not depend on the query: the size cap,
// the encoding, the signature (Options.CursorKeys), the version, the index,
// each field's name, order and declared form, that the position makes a
// start key for each form of the index, and that the next position, when
// there is one, follows the position (a query whose filter differs from
// the one that minted the cursor ignores the next position, and does not
// check it). What depends on the query, its partition, sort condition and
// order, a query's Page, All or Explain checks with the cursor given to
// After. A cursor that fails a check is a *Error (matching
// [ErrInvalidCursor]) whose Reason says which; an index the model does not
// declare is an [ErrInvalidQuery] *Error.
func (t *Table[T]) inspectCursor(index, cursor string) (*bridge.Cursor, error) {
	if err := t.usable("InspectCursor", ErrInvalidQuery); err != nil {
		return nil, err
	}
	d, err := t.index(index)
	if err != nil {
		return nil, err
	}
	c, desc, err := readCursor(d, cursor, nil, &t.opts)
	if err != nil {
		return nil, err
	}
	forms := d.decl.forms // the base table's is empty
	if len(forms) == 0 {
		forms = []*layout{d}
	}
	for _, f := range forms {
		if _, err := f.startKey(c.at); err != nil {
			return nil, cursorErr(err, "position does not make a start key")
		}
		if c.next != nil {
			if _, err := f.startKey(c.next); err != nil {
				return nil, cursorErr(err, "next position: position does not make a start key")
			}
		}
	}
	if c.next != nil && !d.follows(c.next, c.at, desc) {
		return nil, cursorErr(nil, "the next position does not follow the position")
	}
	info := &bridge.Cursor{Index: d.name, Desc: desc, Signed: len(t.opts.CursorKeys) > 0, Position: cursorFields(d, c.at)}
	if c.next != nil {
		info.Next, info.Through = cursorFields(d, c.next), c.through
	}
	return info, nil
}

// cursorFields names the texts of pos by d's slots, with their values.
func cursorFields(d *layout, pos position) []bridge.CursorField {
	out := make([]bridge.CursorField, len(d.slots))
	for i, f := range d.slots {
		out[i] = bridge.CursorField{Attr: f.attr, Text: pos[i]}
		v := reflect.New(f.typ).Elem()
		if f.canon.parse(pos[i], v) == nil {
			out[i].Value = v.Interface()
		}
	}
	return out
}
