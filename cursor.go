package ddbindex

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"unicode/utf8"
)

// This file owns cursors: the only way a position crosses to a caller and
// back. A cursor is the unpadded URL-safe Base64 of
//
//	version   1 byte (cursorVersion)
//	flags     1 byte (bit 0: descending)
//	index     uvarint length + logical index name ("" for the base table)
//	count     uvarint: number of fields
//	fields    count × (uvarint length + attribute name, uvarint length + key text)
//	[mac]     32 bytes of HMAC-SHA256 over everything before it, when signed
//
// It names a logical position: the canonical key text of every field the
// index key and the base key are made of, so a cursor minted while an index
// was a GSI goes on working once it is an index table, and back. Decoding is
// strict: every field must be the index's, in order, of its declared form,
// and the position must lie in the query's partition and range.

const (
	cursorVersion = 1
	flagDesc      = 1 << 0
	macSize       = sha256.Size
)

var cursorEncoding = base64.RawURLEncoding.Strict()

// encodeCursor mints the cursor for a position in d.
func encodeCursor(d *keyDef, pos position, desc bool, key []byte) string {
	n := 2 + binary.MaxVarintLen64*2 + len(d.name)
	for i, f := range d.slots {
		n += 2*binary.MaxVarintLen64 + len(f.attr) + len(pos[i])
	}
	if key != nil {
		n += macSize
	}
	b := make([]byte, 0, n)
	flags := byte(0)
	if desc {
		flags |= flagDesc
	}
	b = append(b, cursorVersion, flags)
	b = appendString(b, d.name)
	b = binary.AppendUvarint(b, uint64(len(d.slots)))
	for i, f := range d.slots {
		b = appendString(b, f.attr)
		b = appendString(b, pos[i])
	}
	if key != nil {
		m := hmac.New(sha256.New, key)
		m.Write(b)
		b = m.Sum(b)
	}
	return cursorEncoding.EncodeToString(b)
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// cursorReader reads the fields of a decoded cursor, bounds-checked.
type cursorReader struct {
	s   string
	off int
}

func (r *cursorReader) uvarint() (uint64, bool) {
	v, n := binary.Uvarint([]byte(r.s[r.off:min(len(r.s), r.off+binary.MaxVarintLen64)]))
	if n <= 0 {
		return 0, false
	}
	r.off += n
	return v, true
}

func (r *cursorReader) str() (string, bool) {
	n, ok := r.uvarint()
	if !ok || n > uint64(len(r.s)-r.off) {
		return "", false
	}
	s := r.s[r.off : r.off+int(n)]
	r.off += int(n)
	return s, true
}

// decodeCursor strictly decodes a cursor minted for d, and returns its
// position. It checks the size cap, the encoding, the signature, the version,
// the order, the index, and every field's name, order and form. The caller
// checks the position against the query's partition and condition.
func decodeCursor(d *keyDef, token string, desc bool, o *Options) (position, error) {
	if len(token) > o.MaxCursorBytes {
		return nil, cursorErr(nil, "%d bytes is over the %d-byte cap", len(token), o.MaxCursorBytes)
	}
	raw, err := cursorEncoding.DecodeString(token)
	if err != nil {
		return nil, cursorErr(nil, "not unpadded URL-safe Base64")
	}
	if o.CursorKey != nil {
		if len(raw) < macSize+2 {
			return nil, cursorErr(nil, "too short to carry a signature")
		}
		body, sig := raw[:len(raw)-macSize], raw[len(raw)-macSize:]
		m := hmac.New(sha256.New, o.CursorKey)
		m.Write(body)
		if !hmac.Equal(m.Sum(nil), sig) {
			return nil, cursorErr(nil, "signature does not match")
		}
		raw = body
	}
	if len(raw) < 2 {
		return nil, cursorErr(nil, "truncated")
	}
	if raw[0] != cursorVersion {
		return nil, cursorErr(nil, "unknown version %d", raw[0])
	}
	if raw[1]&^flagDesc != 0 {
		return nil, cursorErr(nil, "unknown flags 0x%02x", raw[1])
	}
	if (raw[1]&flagDesc != 0) != desc {
		if desc {
			return nil, cursorErr(nil, "minted for an ascending query, used in a descending one")
		}
		return nil, cursorErr(nil, "minted for a descending query, used in an ascending one")
	}
	r := cursorReader{s: string(raw), off: 2}
	name, ok := r.str()
	if !ok {
		return nil, cursorErr(nil, "truncated index name")
	}
	if name != d.name {
		return nil, cursorErr(nil, "minted for %s, used on %s", indexLabel(name), indexLabel(d.name))
	}
	count, ok := r.uvarint()
	if !ok {
		return nil, cursorErr(nil, "truncated field count")
	}
	if count != uint64(len(d.slots)) {
		return nil, cursorErr(nil, "%d fields, %s has %d", count, indexLabel(d.name), len(d.slots))
	}
	pos := make(position, len(d.slots))
	for i, f := range d.slots {
		attr, ok := r.str()
		if !ok {
			return nil, cursorErr(nil, "truncated at field %d", i)
		}
		if attr != f.attr {
			return nil, cursorErr(nil, "field %d is %q, want %q", i, attr, f.attr)
		}
		text, ok := r.str()
		if !ok {
			return nil, cursorErr(nil, "truncated value of %s", attr)
		}
		if err := f.canon.check(text); err != nil {
			return nil, cursorErr(err, "value of %s is not a %s", attr, f.typ)
		}
		if f.canon.kind == encString && !utf8.ValidString(text) {
			return nil, cursorErr(nil, "value of %s is not valid UTF-8", attr)
		}
		pos[i] = text
	}
	if r.off != len(r.s) {
		return nil, cursorErr(nil, "%d trailing bytes", len(r.s)-r.off)
	}
	return pos, nil
}
