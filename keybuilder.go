package ddbindex

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// This file owns the composite key encoding: how one component value becomes
// order-preserving text, how texts join into one DynamoDB String, and how
// that string splits back. Nothing else in the package escapes or joins.
//
// The scheme (see docs/models.md, "Composite keys"):
//
//   - components are joined with '#' (0x23);
//   - inside a string component (which must be valid UTF-8), every byte
//     0x00–0x24 ('$' included) is written as '$' followed by two upper-case
//     hex digits; every other byte is kept;
//   - a []byte component is written as upper-case hex, two digits a byte;
//   - numbers and times have a text form that sorts as they do, and that never
//     contains a byte that needs escaping.
//
// '#' therefore never occurs inside a component (exact prefixes), and sorts
// below every byte that can start an encoded character (order preserved at
// component boundaries); "$XX" codes sort among themselves as the bytes they
// stand for, and below '%' (order preserved inside a component).

// separator is the byte that joins the components of a composite key.
const separator = '#'

// escapeByte is the byte that introduces a two-digit hex escape.
const escapeByte = '$'

// KeyTexter is implemented by types that provide their own key text. The text
// must sort (bytewise, as UTF-8) exactly as the values do, and distinct values
// must have distinct texts. It is escaped like any string component, so it may
// contain any character, but like a string it must be valid UTF-8.
type KeyTexter interface {
	KeyText() (string, error)
}

// KeyTextParser is implemented by pointers to types that implement [KeyTexter],
// to read a value back from its key text (for cursors and [DecodeKey]).
type KeyTextParser interface {
	ParseKeyText(text string) error
}

var (
	keyTexterType  = reflect.TypeFor[KeyTexter]()
	timeType       = reflect.TypeFor[time.Time]()
	errNaN         = errors.New("NaN has no place in an order")
	errNegative    = errors.New("negative values do not fit a fixed-width decimal")
	errMalformed   = errors.New("malformed key text")
	errUnsupported = errors.New("unsupported component type")
	errInvalidUTF8 = errors.New("not valid UTF-8, which a DynamoDB String needs")
)

// encKind is the family of a component's text form.
type encKind uint8

const (
	encString encKind = iota + 1 // strings and named string types: the text is the string
	encBytes                     // []byte: the text is the bytes
	encInt                       // signed integers
	encUint                      // unsigned integers
	encFloat                     // float32, float64
	encTime                      // time.Time
	encCustom                    // KeyTexter
)

// timeFormat selects the text form of a time.Time component.
type timeFormat uint8

const (
	timeRFC3339 timeFormat = iota // 2026-12-02T13:54:41.000000000Z (UTC, fixed width)
	timeUnixMilli
	timeUnix
	timeDate // 2026-12-02; the time must be midnight UTC
)

const rfc3339Fixed = "2006-01-02T15:04:05.000000000Z"

// encoder turns one component's Go value into its key text and back. It is
// chosen once per declared component (or per dynamic type for EncodeKey).
type encoder struct {
	kind  encKind
	bits  int        // integer and float size
	width int        // fixed decimal width; 0 means the full-range sortable form
	tf    timeFormat // for encTime
	typ   reflect.Type
}

// newEncoder picks the encoder for a component type with the given options.
func newEncoder(t reflect.Type, width int, format string) (encoder, error) {
	e := encoder{typ: t, width: width}
	switch {
	case t.Implements(keyTexterType):
		e.kind = encCustom
	case t == timeType:
		e.kind = encTime
		switch format {
		case "", "rfc3339":
			e.tf = timeRFC3339
		case "unixms":
			e.tf = timeUnixMilli
		case "unix":
			e.tf = timeUnix
		case "date":
			e.tf = timeDate
		default:
			return e, fmt.Errorf("unknown time format %q (want rfc3339, unixms, unix or date)", format)
		}
		if width > 0 && (e.tf == timeRFC3339 || e.tf == timeDate) {
			return e, errors.New("width applies to the unix and unixms time formats only")
		}
		format = ""
	case t.Kind() == reflect.String:
		e.kind = encString
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8:
		e.kind = encBytes
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Int64:
		e.kind, e.bits = encInt, t.Bits()
	case t.Kind() >= reflect.Uint && t.Kind() <= reflect.Uintptr:
		e.kind, e.bits = encUint, t.Bits()
	case t.Kind() == reflect.Float32 || t.Kind() == reflect.Float64:
		e.kind, e.bits = encFloat, t.Bits()
	default:
		return e, fmt.Errorf("%w %s (use a string, integer, float, time.Time, []byte, or a type implementing KeyTexter)", errUnsupported, t)
	}
	if format != "" {
		return e, fmt.Errorf("format=%s applies to time.Time components only", format)
	}
	if width != 0 {
		if width < 1 || width > 20 {
			return e, fmt.Errorf("width=%d is out of range (1 to 20)", width)
		}
		if e.kind != encInt && e.kind != encUint && e.kind != encTime {
			return e, fmt.Errorf("width applies to integer components (and unix times) only, not %s", t)
		}
	}
	return e, nil
}

// isNumber reports whether the component is stored natively as a DynamoDB Number.
func (e encoder) isNumber() bool {
	return e.kind == encInt || e.kind == encUint || e.kind == encFloat
}

// appendKey appends v's key text, encoded for a composite key.
func (e encoder) appendKey(buf []byte, v reflect.Value) ([]byte, error) {
	switch e.kind {
	case encString:
		return e.appendText(buf, v.String())
	case encBytes:
		return appendHex(buf, v.Bytes()), nil
	case encCustom:
		s, err := v.Interface().(KeyTexter).KeyText()
		if err != nil {
			return buf, err
		}
		return e.appendText(buf, s)
	}
	return e.appendPlain(buf, v)
}

// appendText appends a component's key text, encoded for a composite key:
// strings (and KeyTexter texts) escaped, which needs valid UTF-8 since a
// DynamoDB String holds nothing else (the SDK would silently replace bad
// bytes, merging distinct keys); bytes as upper-case hex, two digits a
// byte, which keeps their order and any byte; numbers and times as they
// are.
func (e encoder) appendText(buf []byte, text string) ([]byte, error) {
	switch e.kind {
	case encString, encCustom:
		if !utf8.ValidString(text) {
			return buf, errInvalidUTF8
		}
		return appendEscaped(buf, text), nil
	case encBytes:
		return appendHex(buf, []byte(text)), nil
	}
	return append(buf, text...), nil
}

// componentText reverses appendText for one encoded component. Like
// appendText it refuses a string (or KeyTexter text) that is not valid
// UTF-8: appendText could not have written it.
func (e encoder) componentText(enc string) (string, error) {
	if e.kind == encBytes {
		return parseHex(enc)
	}
	s, err := unescape(enc)
	if err == nil && (e.kind == encString || e.kind == encCustom) && !utf8.ValidString(s) {
		return "", fmt.Errorf("%w: %w", errMalformed, errInvalidUTF8)
	}
	return s, err
}

// appendPlain appends the text of a number or time; such texts never need
// escaping.
func (e encoder) appendPlain(buf []byte, v reflect.Value) ([]byte, error) {
	switch e.kind {
	case encInt:
		return appendInt(buf, v.Int(), e.width)
	case encUint:
		return appendUint(buf, v.Uint(), e.width)
	case encFloat:
		return appendFloat(buf, v.Float())
	case encTime:
		return appendTime(buf, v.Interface().(time.Time), e.tf, e.width)
	}
	return buf, fmt.Errorf("%w %s", errUnsupported, e.typ)
}

// text returns v's key text, unescaped.
func (e encoder) text(v reflect.Value) (string, error) {
	switch e.kind {
	case encString:
		return v.String(), nil
	case encBytes:
		return string(v.Bytes()), nil
	case encCustom:
		return v.Interface().(KeyTexter).KeyText()
	}
	b, err := e.appendPlain(make([]byte, 0, 32), v)
	return string(b), err
}

// check reports whether text is a valid key text for this component.
func (e encoder) check(text string) error {
	switch e.kind {
	case encString, encBytes, encCustom:
		return nil
	case encInt:
		if e.width > 0 {
			u, err := parseFixed(text, e.width)
			if err == nil && (u > math.MaxInt64 || (e.bits < 64 && u >= 1<<(e.bits-1))) {
				return fmt.Errorf("%s overflows %s", text, e.typ)
			}
			return err
		}
		_, err := parseSortableInt(text, e.bits)
		return err
	case encUint:
		if e.width > 0 {
			u, err := parseFixed(text, e.width)
			if err == nil && e.bits < 64 && u>>e.bits != 0 {
				return fmt.Errorf("%s overflows %s", text, e.typ)
			}
			return err
		}
		_, err := parseSortableUint(text, e.bits)
		return err
	case encFloat:
		_, err := parseFloat(text, e.bits)
		return err
	case encTime:
		_, err := parseTime(text, e.tf, e.width)
		return err
	}
	return errUnsupported
}

// parse reads text into dst, which must be settable and of the encoder's type.
func (e encoder) parse(text string, dst reflect.Value) error {
	switch e.kind {
	case encString:
		dst.SetString(text)
		return nil
	case encBytes:
		dst.SetBytes([]byte(text))
		return nil
	case encCustom:
		p, ok := dst.Addr().Interface().(KeyTextParser)
		if !ok {
			return fmt.Errorf("%s implements KeyTexter but *%s does not implement KeyTextParser", e.typ, e.typ)
		}
		return p.ParseKeyText(text)
	case encInt:
		var n int64
		var err error
		if e.width > 0 {
			var u uint64
			u, err = parseFixed(text, e.width)
			if err == nil && (u > math.MaxInt64 || (e.bits < 64 && u >= 1<<(e.bits-1))) {
				err = fmt.Errorf("%s overflows %s", text, e.typ)
			}
			n = int64(u)
		} else {
			n, err = parseSortableInt(text, e.bits)
		}
		if err != nil {
			return err
		}
		dst.SetInt(n)
		return nil
	case encUint:
		if err := e.check(text); err != nil {
			return err
		}
		var u uint64
		if e.width > 0 {
			u, _ = parseFixed(text, e.width)
		} else {
			u, _ = parseSortableUint(text, e.bits)
		}
		dst.SetUint(u)
		return nil
	case encFloat:
		f, err := parseFloat(text, e.bits)
		if err != nil {
			return err
		}
		dst.SetFloat(f)
		return nil
	case encTime:
		t, err := parseTime(text, e.tf, e.width)
		if err != nil {
			return err
		}
		dst.Set(reflect.ValueOf(t))
		return nil
	}
	return errUnsupported
}

// numberText converts a component's key text to the decimal text of a
// DynamoDB Number (for a component stored natively as N).
func (e encoder) numberText(text string) (string, error) {
	switch e.kind {
	case encInt:
		n, err := parseSortableInt(text, e.bits)
		if err != nil {
			return "", err
		}
		return strconv.FormatInt(n, 10), nil
	case encUint:
		u, err := parseSortableUint(text, e.bits)
		if err != nil {
			return "", err
		}
		return strconv.FormatUint(u, 10), nil
	case encFloat:
		f, err := parseFloat(text, e.bits)
		if err != nil {
			return "", err
		}
		if err := numberRange(f); err != nil {
			return "", err
		}
		return strconv.FormatFloat(f, 'g', -1, e.bits), nil
	}
	return "", fmt.Errorf("%s is not stored as a Number", e.typ)
}

// numberRange refuses a float that a DynamoDB Number cannot hold, by the
// check of every Number the library writes (checkNumber).
func numberRange(f float64) error {
	return checkNumber(strconv.FormatFloat(f, 'g', -1, 64))
}

// storable refuses the key text of a float that the item's own attribute,
// a DynamoDB Number, could not hold: a key built from it would key an item
// that can never be stored (and a cursor at it names no item).
func (e encoder) storable(text string) error {
	if e.kind != encFloat {
		return nil
	}
	f, err := parseFloat(text, e.bits)
	if err != nil {
		return err
	}
	return numberRange(f)
}

// textFromNumber converts a DynamoDB Number's decimal text to the component's
// key text.
func (e encoder) textFromNumber(num string) (string, error) {
	var b []byte
	var err error
	switch e.kind {
	case encInt:
		n, perr := strconv.ParseInt(num, 10, e.bits)
		if perr != nil {
			f, ferr := strconv.ParseFloat(num, 64)
			if ferr != nil || f != math.Trunc(f) || f < math.MinInt64 || f >= math.MaxInt64 {
				return "", fmt.Errorf("%q is not a %s: %w", num, e.typ, errMalformed)
			}
			n = int64(f)
			if e.bits < 64 && (n < -(1<<(e.bits-1)) || n >= 1<<(e.bits-1)) {
				return "", fmt.Errorf("%q overflows %s", num, e.typ)
			}
		}
		b, err = appendInt(nil, n, 0)
	case encUint:
		u, perr := strconv.ParseUint(num, 10, e.bits)
		if perr != nil {
			return "", fmt.Errorf("%q is not a %s: %w", num, e.typ, errMalformed)
		}
		b, err = appendUint(nil, u, 0)
	case encFloat:
		f, perr := strconv.ParseFloat(num, e.bits)
		if perr != nil {
			return "", fmt.Errorf("%q is not a %s: %w", num, e.typ, errMalformed)
		}
		b, err = appendFloat(nil, f)
	default:
		return "", fmt.Errorf("%s is not stored as a Number", e.typ)
	}
	return string(b), err
}

// ---- text forms ------------------------------------------------------------

// appendInt appends the text of n: with width > 0, exactly width decimal
// digits (n must be non-negative and fit); otherwise the full-range form.
//
// The full-range form is a length letter followed by the digits. For n >= 0
// with L digits the letter is 'a'+L-1 ("a0", "b42", "m1733000000000"). For
// n < 0 whose magnitude has L digits the letter is 'Z'-(L-1) and the digits are
// the nines' complement of the magnitude ("Z8" is -1, "Y00" is -99). Shorter
// negative magnitudes sort after longer ones, all negatives before all
// non-negatives, and equal lengths digit by digit.
func appendInt(buf []byte, n int64, width int) ([]byte, error) {
	if width > 0 {
		if n < 0 {
			return buf, fmt.Errorf("%d: %w", n, errNegative)
		}
		return appendFixed(buf, uint64(n), width)
	}
	if n >= 0 {
		return appendSortableUint(buf, uint64(n)), nil
	}
	mag := uint64(-(n + 1)) + 1 // safe for MinInt64
	var digits [20]byte
	d := strconv.AppendUint(digits[:0], mag, 10)
	buf = append(buf, byte('Z'-(len(d)-1)))
	for _, c := range d {
		buf = append(buf, '9'-(c-'0'))
	}
	return buf, nil
}

func appendUint(buf []byte, u uint64, width int) ([]byte, error) {
	if width > 0 {
		return appendFixed(buf, u, width)
	}
	return appendSortableUint(buf, u), nil
}

func appendSortableUint(buf []byte, u uint64) []byte {
	var digits [20]byte
	d := strconv.AppendUint(digits[:0], u, 10)
	buf = append(buf, byte('a'+len(d)-1))
	return append(buf, d...)
}

func appendFixed(buf []byte, u uint64, width int) ([]byte, error) {
	var digits [20]byte
	d := strconv.AppendUint(digits[:0], u, 10)
	if len(d) > width {
		return buf, fmt.Errorf("%d has %d digits, more than the declared width %d", u, len(d), width)
	}
	for i := len(d); i < width; i++ {
		buf = append(buf, '0')
	}
	return append(buf, d...), nil
}

// appendFloat appends 16 upper-case hex digits of the float's bits, mapped so
// that unsigned order equals numeric order (the sign bit flipped for positive
// numbers, all bits flipped for negative ones). -0 is written as 0; NaN is
// rejected.
func appendFloat(buf []byte, f float64) ([]byte, error) {
	if math.IsNaN(f) {
		return buf, errNaN
	}
	if f == 0 {
		f = 0 // -0 and +0 are one value
	}
	bits := math.Float64bits(f)
	if bits>>63 == 1 {
		bits = ^bits
	} else {
		bits |= 1 << 63
	}
	const hexdigits = "0123456789ABCDEF"
	for shift := 60; shift >= 0; shift -= 4 {
		buf = append(buf, hexdigits[(bits>>uint(shift))&0xF])
	}
	return buf, nil
}

func appendTime(buf []byte, t time.Time, tf timeFormat, width int) ([]byte, error) {
	switch tf {
	case timeUnixMilli:
		if t.Nanosecond()%int(time.Millisecond) != 0 {
			return buf, fmt.Errorf("%s has sub-millisecond precision, which format=unixms would drop (and mis-order against it): truncate it first", t.Format(time.RFC3339Nano))
		}
		return appendInt(buf, t.UnixMilli(), width)
	case timeUnix:
		if t.Nanosecond() != 0 {
			return buf, fmt.Errorf("%s has sub-second precision, which format=unix would drop (and mis-order against it): truncate it first", t.Format(time.RFC3339Nano))
		}
		return appendInt(buf, t.Unix(), width)
	}
	t = t.UTC()
	if y := t.Year(); y < 0 || y > 9999 {
		return buf, fmt.Errorf("year %d is outside 0000-9999, which a fixed-width time text needs", y)
	}
	if tf == timeDate {
		if t.Hour() != 0 || t.Minute() != 0 || t.Second() != 0 || t.Nanosecond() != 0 {
			return buf, fmt.Errorf("%s is not midnight UTC, which format=date needs", t.Format(time.RFC3339Nano))
		}
		return t.AppendFormat(buf, time.DateOnly), nil
	}
	return t.AppendFormat(buf, rfc3339Fixed), nil
}

func parseFixed(text string, width int) (uint64, error) {
	if len(text) != width {
		return 0, fmt.Errorf("%q is not %d digits: %w", text, width, errMalformed)
	}
	for i := 0; i < len(text); i++ {
		if text[i] < '0' || text[i] > '9' {
			return 0, fmt.Errorf("%q is not %d digits: %w", text, width, errMalformed)
		}
	}
	u, err := strconv.ParseUint(text, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q: %w", text, errMalformed)
	}
	return u, nil
}

func parseSortableUint(text string, bits int) (uint64, error) {
	if len(text) < 2 || text[0] < 'a' || text[0] > 't' || int(text[0]-'a')+2 != len(text) ||
		(len(text) > 2 && text[1] == '0') {
		return 0, fmt.Errorf("%q is not a non-negative integer key text: %w", text, errMalformed)
	}
	for i := 1; i < len(text); i++ {
		if text[i] < '0' || text[i] > '9' {
			return 0, fmt.Errorf("%q is not an integer key text: %w", text, errMalformed)
		}
	}
	u, err := strconv.ParseUint(text[1:], 10, bits)
	if err != nil {
		return 0, fmt.Errorf("%q overflows uint%d: %w", text, bits, errMalformed)
	}
	return u, nil
}

func parseSortableInt(text string, bits int) (int64, error) {
	if len(text) >= 2 && text[0] >= 'a' {
		u, err := parseSortableUint(text, 64)
		if err != nil {
			return 0, err
		}
		if u > uint64(1)<<(bits-1)-1 {
			return 0, fmt.Errorf("%q overflows int%d: %w", text, bits, errMalformed)
		}
		return int64(u), nil
	}
	// Negative: 'Z'-(L-1), then the nines' complement of the magnitude.
	if len(text) < 2 || text[0] < 'H' || text[0] > 'Z' || int('Z'-text[0])+2 != len(text) {
		return 0, fmt.Errorf("%q is not an integer key text: %w", text, errMalformed)
	}
	var mag uint64
	for i := 1; i < len(text); i++ {
		c := text[i]
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("%q is not an integer key text: %w", text, errMalformed)
		}
		d := uint64('9' - c)
		if i == 1 && d == 0 {
			return 0, fmt.Errorf("%q has a leading zero: %w", text, errMalformed)
		}
		if mag > (math.MaxUint64-d)/10 {
			return 0, fmt.Errorf("%q overflows int%d: %w", text, bits, errMalformed)
		}
		mag = mag*10 + d
	}
	if mag == 0 || mag > uint64(1)<<(bits-1) {
		return 0, fmt.Errorf("%q is out of range for int%d: %w", text, bits, errMalformed)
	}
	return -int64(mag-1) - 1, nil
}

func parseFloat(text string, bitSize int) (float64, error) {
	if len(text) != 16 {
		return 0, fmt.Errorf("%q is not a float key text: %w", text, errMalformed)
	}
	var bits uint64
	for i := 0; i < 16; i++ {
		c := text[i]
		var d byte
		switch {
		case c >= '0' && c <= '9':
			d = c - '0'
		case c >= 'A' && c <= 'F':
			d = c - 'A' + 10
		default:
			return 0, fmt.Errorf("%q is not a float key text: %w", text, errMalformed)
		}
		bits = bits<<4 | uint64(d)
	}
	if bits>>63 == 1 {
		bits &^= 1 << 63
	} else {
		bits = ^bits
	}
	f := math.Float64frombits(bits)
	if math.IsNaN(f) || (f == 0 && math.Signbit(f)) {
		return 0, fmt.Errorf("%q is not a canonical float key text: %w", text, errMalformed)
	}
	if bitSize == 32 && float64(float32(f)) != f {
		return 0, fmt.Errorf("%q is not a float32: %w", text, errMalformed)
	}
	return f, nil
}

func parseTime(text string, tf timeFormat, width int) (time.Time, error) {
	switch tf {
	case timeUnixMilli, timeUnix:
		var n int64
		var err error
		if width > 0 {
			var u uint64
			u, err = parseFixed(text, width)
			if u > math.MaxInt64 {
				err = fmt.Errorf("%q overflows int64: %w", text, errMalformed)
			}
			n = int64(u)
		} else {
			n, err = parseSortableInt(text, 64)
		}
		if err != nil {
			return time.Time{}, err
		}
		if tf == timeUnix {
			return time.Unix(n, 0).UTC(), nil
		}
		return time.UnixMilli(n).UTC(), nil
	case timeDate:
		t, err := time.Parse(time.DateOnly, text)
		if err != nil || t.Format(time.DateOnly) != text {
			return time.Time{}, fmt.Errorf("%q is not a date key text: %w", text, errMalformed)
		}
		return t, nil
	}
	t, err := time.Parse(rfc3339Fixed, text)
	if err != nil || t.Format(rfc3339Fixed) != text {
		return time.Time{}, fmt.Errorf("%q is not a time key text: %w", text, errMalformed)
	}
	return t, nil
}

// ---- escaping and joining --------------------------------------------------

const hexUpper = "0123456789ABCDEF"

// needsEscape reports whether b is written as "$XX" inside a component.
func needsEscape(b byte) bool { return b <= escapeByte }

// appendEscaped appends s with every byte 0x00-0x24 written as "$XX".
func appendEscaped(buf []byte, s string) []byte {
	start := 0
	for i := 0; i < len(s); i++ {
		if c := s[i]; needsEscape(c) {
			buf = append(buf, s[start:i]...)
			buf = append(buf, escapeByte, hexUpper[c>>4], hexUpper[c&0xF])
			start = i + 1
		}
	}
	return append(buf, s[start:]...)
}

// appendHex appends the bytes as upper-case hex, two digits a byte: the
// composite form of a []byte component.
func appendHex(buf []byte, s []byte) []byte {
	for _, c := range s {
		buf = append(buf, hexUpper[c>>4], hexUpper[c&0xF])
	}
	return buf
}

// parseHex reverses appendHex, rejecting anything appendHex could not have
// written.
func parseHex(s string) (string, error) {
	if len(s)%2 != 0 {
		return "", fmt.Errorf("odd-length hex %q: %w", s, errMalformed)
	}
	b := make([]byte, len(s)/2)
	for i := range b {
		hi, lo := unhex(s[2*i]), unhex(s[2*i+1])
		if hi < 0 || lo < 0 {
			return "", fmt.Errorf("bad hex %q: %w", s, errMalformed)
		}
		b[i] = byte(hi<<4 | lo)
	}
	return string(b), nil
}

// unescape reverses appendEscaped. It rejects text that appendEscaped could not
// have written (a raw byte that should have been escaped, an escape of a byte
// that should not have been, a malformed escape), so every component has
// exactly one encoding.
func unescape(s string) (string, error) {
	i := strings.IndexByte(s, escapeByte)
	if i < 0 {
		for j := 0; j < len(s); j++ {
			if needsEscape(s[j]) {
				return "", fmt.Errorf("byte 0x%02X must be escaped: %w", s[j], errMalformed)
			}
		}
		return s, nil
	}
	b := make([]byte, 0, len(s))
	for j := 0; j < len(s); j++ {
		c := s[j]
		if c != escapeByte {
			if needsEscape(c) {
				return "", fmt.Errorf("byte 0x%02X must be escaped: %w", c, errMalformed)
			}
			b = append(b, c)
			continue
		}
		if j+2 >= len(s) {
			return "", fmt.Errorf("truncated escape at byte %d: %w", j, errMalformed)
		}
		hi, lo := unhex(s[j+1]), unhex(s[j+2])
		if hi < 0 || lo < 0 {
			return "", fmt.Errorf("bad escape %q: %w", s[j:j+3], errMalformed)
		}
		v := byte(hi<<4 | lo)
		if !needsEscape(v) {
			return "", fmt.Errorf("escape %q stands for a byte that is never escaped: %w", s[j:j+3], errMalformed)
		}
		b = append(b, v)
		j += 2
	}
	return string(b), nil
}

func unhex(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// ---- composite keys: joining, labels, prefixes and bounds --------------------
//
// Every composite key the package writes, and every prefix or bound it asks
// DynamoDB to compare with one, is built by the functions below.

// appendComponent appends component i (counting from 0) of a composite key:
// the separator before every component but the first, the component's label
// and a separator if it has one, then text encoded as enc encodes it.
func appendComponent(b []byte, i int, label string, enc encoder, text string) ([]byte, error) {
	if i > 0 {
		b = append(b, separator)
	}
	if label != "" {
		b = append(appendEscaped(b, label), separator)
	}
	return enc.appendText(b, text)
}

// labelText is a label as it stands, encoded, in a composite key.
func labelText(label string) string { return string(appendEscaped(nil, label)) }

// exactPrefix returns the prefix of exactly the keys whose leading components
// encode to p and that have more components after them:
// begins_with(key, exactPrefix(p)) holds for them and for no other key.
func exactPrefix(p string) string { return p + string(separator) }

// lowerBound returns the key text that sorts above every key whose leading
// components are less than p's and at or below every key whose leading
// components equal p's. When p is a whole key (more is false) that is p;
// otherwise it is p and a separator, since the separator sorts below every
// byte that can follow p inside its last component.
//
//	leading < p:  key < lowerBound(p)     leading >= p: key >= lowerBound(p)
func lowerBound(p string, more bool) string {
	if !more {
		return p
	}
	return p + string(separator)
}

// upperBound returns the key text that sorts above every key whose leading
// components equal p's (p, a separator and anything) and below every key
// whose leading components are greater: p itself for a whole key, otherwise p
// and the escape byte, which sorts above the separator and below every byte
// that can make p's last component greater, so a greater component (such as
// p's text followed by "$00") sorts after it.
//
//	leading <= p: key < upperBound(p)    leading > p: key > upperBound(p)
//
// For a whole key the comparisons are the plain ones: key <= p, key > p.
func upperBound(p string, more bool) string {
	if !more {
		return p
	}
	return p + string(escapeByte)
}

// compositeSuccessor returns a text that sorts after the composite key key
// and before every composite key greater than it: key and '!'. No byte of a
// composite key is below the separator '#' (escaped bytes are written as
// "$XX"), so a greater key that starts with key goes on with a byte above
// '!', and any other greater key differs from key before its end.
func compositeSuccessor(key string) string { return key + "!" }

// maxShards caps shards=: a query of a sharded index sends a request to
// every shard.
const maxShards = 1024

// shardOf returns the shard, from 0 to n-1, of an item of an index sharded n
// ways: h, the FNV-1a (64-bit) hash of the canonical texts of its base key
// fields in declaration order, each preceded by its length as a uvarint,
// mixed by MurmurHash3's 64-bit finalizer (fmix64: FNV alone spreads keys
// that differ in their last bytes poorly), mod n. It
// depends on the base key alone, so an item keeps its shard for life, and
// on nothing but the texts, so it is the same in every process and release.
func shardOf(text func(*field) string, by []*field, n int) int {
	h := fnv.New64a()
	var b []byte
	for _, f := range by {
		t := text(f)
		h.Write(binary.AppendUvarint(b[:0], uint64(len(t))))
		h.Write([]byte(t))
	}
	return int(fmix64(h.Sum64()) % uint64(n))
}

// fmix64 is MurmurHash3's 64-bit finalizer: every input bit affects every
// output bit.
func fmix64(x uint64) uint64 {
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}

// appendShard appends the shard component of a sharded partition key: the
// separator, then the shard in decimal.
func appendShard(b []byte, shard int) []byte {
	return strconv.AppendInt(append(b, separator), int64(shard), 10)
}

// parseShard reads a shard component (still encoded: decimal digits need no
// escaping) of an index sharded n ways.
func parseShard(enc string, n int) (int, error) {
	v, err := strconv.Atoi(enc)
	if err != nil || v < 0 || v >= n || strconv.Itoa(v) != enc {
		return 0, fmt.Errorf("shard %q is not a shard from 0 to %d: %w", enc, n-1, errMalformed)
	}
	return v, nil
}

// splitRaw splits an encoded composite key at its separators, leaving each
// component encoded.
func splitRaw(key string) []string { return strings.Split(key, string(separator)) }

// splitKey splits an encoded composite key into its unescaped component texts.
func splitKey(key string) ([]string, error) {
	n := strings.Count(key, string(separator)) + 1
	out := make([]string, 0, n)
	for {
		i := strings.IndexByte(key, separator)
		part := key
		if i >= 0 {
			part = key[:i]
		}
		t, err := unescape(part)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
		if i < 0 {
			return out, nil
		}
		key = key[i+1:]
	}
}

// ---- the exported helpers ----------------------------------------------------

// EncodeKey encodes components into one composite key string with their default
// formats, joined with '#' (which never occurs inside a component): strings as
// they are (bytes 0x00-0x24 escaped; a string that is not valid UTF-8 is an
// error), []byte as upper-case hex, integers and floats in the full-range
// order-preserving form, times as fixed-width RFC 3339 in UTC.
// The byte order of the results equals the component-wise order of the
// inputs, component types being equal position by position. Its errors match
// [ErrInvalidKey].
//
//	EncodeKey("open", int64(42), "TICKET#8842") == "open#b42#TICKET$238842"
func EncodeKey(components ...any) (string, error) {
	b, err := appendComponents(make([]byte, 0, 64), components)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// KeyPrefix returns the exact-match prefix for keys whose leading components
// equal components: the encoded components followed by the separator '#'.
// begins_with(key, KeyPrefix(p...)) holds exactly when the leading components
// of key equal p, and more components follow. Its errors match
// [ErrInvalidKey].
func KeyPrefix(components ...any) (string, error) {
	b, err := appendComponents(make([]byte, 0, 64), components)
	if err != nil {
		return "", err
	}
	return exactPrefix(string(b)), nil
}

func appendComponents(b []byte, components []any) ([]byte, error) {
	for i, c := range components {
		// The common component types are appended in place, without their
		// text as a string first: what defaultText and appendComponent
		// would write, with no allocation.
		switch v := c.(type) {
		case string:
			if utf8.ValidString(v) {
				if i > 0 {
					b = append(b, separator)
				}
				b = appendEscaped(b, v)
				continue
			}
		case int64:
			if i > 0 {
				b = append(b, separator)
			}
			b, _ = appendInt(b, v, 0) // fails only for a width
			continue
		case int:
			if i > 0 {
				b = append(b, separator)
			}
			b, _ = appendInt(b, int64(v), 0)
			continue
		}
		e, text, err := defaultText(c)
		if err == nil {
			b, err = appendComponent(b, i, "", e, text)
		}
		if err != nil {
			return nil, fmt.Errorf("%w: component %d: %w", ErrInvalidKey, i, err)
		}
	}
	return b, nil
}

// Encoders of the common component types, chosen without reflection.
var (
	stringEncoder = encoder{kind: encString, typ: reflect.TypeFor[string]()}
	int64Encoder  = encoder{kind: encInt, bits: 64, typ: reflect.TypeFor[int64]()}
	customEncoder = encoder{kind: encCustom, typ: keyTexterType}
	timeEncoder   = encoder{kind: encTime, tf: timeRFC3339, typ: timeType}
)

// defaultText returns the encoder of a component of any supported type in
// its default form, and the component's key text.
func defaultText(c any) (encoder, string, error) {
	switch v := c.(type) {
	case string:
		return stringEncoder, v, nil
	case int64:
		t, err := int64Encoder.text(reflect.ValueOf(v))
		return int64Encoder, t, err
	case int:
		t, err := int64Encoder.text(reflect.ValueOf(int64(v)))
		return int64Encoder, t, err
	case KeyTexter:
		t, err := v.KeyText()
		return customEncoder, t, err
	case time.Time:
		t, err := timeEncoder.text(reflect.ValueOf(v))
		return timeEncoder, t, err
	case nil:
		return encoder{}, "", errors.New("nil has no key text")
	}
	rv := reflect.ValueOf(c)
	e, err := newEncoder(rv.Type(), 0, "")
	if err != nil {
		return e, "", err
	}
	t, err := e.text(rv)
	return e, t, err
}

// DecodeKey splits an encoded composite key and reads each component into the
// matching pointer of into, with default formats; the number of components
// must equal len(into). Every malformed text is an error: a key that EncodeKey
// could not have produced does not decode. Its errors (a pointer missing
// among into included) match [ErrInvalidKey].
func DecodeKey(key string, into ...any) error {
	texts := splitRaw(key)
	if len(texts) != len(into) {
		return fmt.Errorf("%w: decode: %d components, want %d: %w", ErrInvalidKey, len(texts), len(into), errMalformed)
	}
	for i, p := range into {
		rv := reflect.ValueOf(p)
		if rv.Kind() != reflect.Pointer || rv.IsNil() {
			return fmt.Errorf("%w: decode: argument %d is %T, not a non-nil pointer", ErrInvalidKey, i, p)
		}
		e, err := newEncoder(rv.Elem().Type(), 0, "")
		if err != nil {
			return fmt.Errorf("%w: decode: component %d: %w", ErrInvalidKey, i, err)
		}
		text, err := e.componentText(texts[i])
		if err != nil {
			return fmt.Errorf("%w: decode: component %d: %w", ErrInvalidKey, i, err)
		}
		if err := e.parse(text, rv.Elem()); err != nil {
			return fmt.Errorf("%w: decode: component %d: %w", ErrInvalidKey, i, err)
		}
	}
	return nil
}

// SplitKey splits an encoded composite key at each '#' into its unescaped
// component texts, for tooling that inspects keys without knowing their
// types ([]byte components come out as their hex text). Its errors match
// [ErrInvalidKey].
func SplitKey(key string) ([]string, error) {
	texts, err := splitKey(key)
	if err != nil {
		return nil, fmt.Errorf("%w: split: %w", ErrInvalidKey, err)
	}
	return texts, nil
}
