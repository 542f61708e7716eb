package ops

import (
	"encoding"
	"encoding/hex"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/ddbindex/ddbindex"
)

// This file turns key component values given on the command line into the
// Go values a query takes, and values back into text.
//
// A tuple is one value per component, separated by commas: "TEAM-7" for a
// one-component partition, "open,2026-12-01T09:00:00Z" for two sort
// components. A backslash makes the next character literal ("a\,b" is one
// value, "a,b"). Each value is read as its component's type: a string as
// it is; an integer or float in decimal; a time.Time in RFC 3339 (or a date,
// 2026-12-01, as midnight UTC); []byte in hexadecimal; a type whose pointer
// is a ddbindex.KeyTextParser by its key text, else one whose pointer is an
// encoding.TextUnmarshaler by its text.

// splitTuple splits a tuple at its unescaped commas.
func splitTuple(s string) ([]string, error) {
	var out []string
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\':
			if i+1 == len(s) {
				return nil, fmt.Errorf("%q ends with a lone backslash", s)
			}
			i++
			b.WriteByte(s[i])
		case ',':
			out = append(out, b.String())
			b.Reset()
		default:
			b.WriteByte(c)
		}
	}
	return append(out, b.String()), nil
}

// parseTuple reads a tuple as values of the leading components of comps.
func parseTuple(s string, comps []ddbindex.KeyComponent, what string) ([]any, error) {
	texts, err := splitTuple(s)
	if err != nil {
		return nil, err
	}
	if len(texts) > len(comps) {
		return nil, fmt.Errorf("%s %q has %d values; the key has %d components (%s)", what, s, len(texts), len(comps), componentNames(comps))
	}
	values := make([]any, len(texts))
	for i, text := range texts {
		if values[i], err = parseValue(text, comps[i]); err != nil {
			return nil, fmt.Errorf("%s %q: %w", what, s, err)
		}
	}
	return values, nil
}

// componentNames lists components as "team (string), opened (time.Time)".
func componentNames(comps []ddbindex.KeyComponent) string {
	if len(comps) == 0 {
		return "none"
	}
	names := make([]string, len(comps))
	for i, c := range comps {
		names[i] = fmt.Sprintf("%s (%s)", c.Attr, c.Type)
	}
	return strings.Join(names, ", ")
}

var (
	timeType            = reflect.TypeFor[time.Time]()
	keyTextParserType   = reflect.TypeFor[ddbindex.KeyTextParser]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// parseValue reads text as a value of component c's type. A panic in the
// type's own parser (ParseKeyText, UnmarshalText) is an error too.
func parseValue(text string, c ddbindex.KeyComponent) (_ any, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s (%s): its parser panicked on %q: %v", c.Attr, c.Type, text, r)
		}
	}()
	t := c.Type
	p := reflect.New(t)
	bad := func(err error) (any, error) {
		return nil, fmt.Errorf("%s (%s): %w", c.Attr, t, err)
	}
	switch {
	case reflect.PointerTo(t).Implements(keyTextParserType):
		if err := p.Interface().(ddbindex.KeyTextParser).ParseKeyText(text); err != nil {
			return bad(err)
		}
		return p.Elem().Interface(), nil
	case t == timeType:
		v, err := time.Parse(time.RFC3339Nano, text)
		if err != nil {
			d, errDate := time.Parse(time.DateOnly, text)
			if errDate != nil {
				return bad(errors.New("want RFC 3339 (2026-12-01T09:00:00Z) or a date (2026-12-01)"))
			}
			v = d
		}
		return v, nil
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8:
		b, err := hex.DecodeString(text)
		if err != nil {
			return bad(errors.New("want hexadecimal"))
		}
		p.Elem().SetBytes(b)
		return p.Elem().Interface(), nil
	case reflect.PointerTo(t).Implements(textUnmarshalerType):
		if err := p.Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(text)); err != nil {
			return bad(err)
		}
		return p.Elem().Interface(), nil
	}
	v := p.Elem()
	switch k := t.Kind(); {
	case k == reflect.String:
		v.SetString(text)
	case k >= reflect.Int && k <= reflect.Int64:
		n, err := strconv.ParseInt(text, 10, t.Bits())
		if err != nil {
			return bad(errors.New("want a decimal integer in range"))
		}
		v.SetInt(n)
	case k >= reflect.Uint && k <= reflect.Uintptr:
		n, err := strconv.ParseUint(text, 10, t.Bits())
		if err != nil {
			return bad(errors.New("want a decimal integer in range, 0 or more"))
		}
		v.SetUint(n)
	case k == reflect.Float32 || k == reflect.Float64:
		f, err := strconv.ParseFloat(text, t.Bits())
		if err != nil {
			return bad(errors.New("want a decimal number"))
		}
		v.SetFloat(f)
	default:
		return bad(errors.New("the command line cannot give values of this type"))
	}
	return v.Interface(), nil
}

// formatValue writes a key component value as parseValue reads it.
func formatValue(v any) string {
	switch v := v.(type) {
	case nil:
		return "?"
	case time.Time:
		return v.UTC().Format(time.RFC3339Nano)
	case []byte:
		return hex.EncodeToString(v)
	case ddbindex.KeyTexter:
		if s, err := v.KeyText(); err == nil {
			return s
		}
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Slice && rv.Type().Elem().Kind() == reflect.Uint8 {
		return hex.EncodeToString(rv.Bytes())
	}
	return fmt.Sprint(v)
}

// formatTuple writes values as a tuple, escaping what splitTuple splits on.
func formatTuple(values []any) string {
	esc := strings.NewReplacer(`\`, `\\`, `,`, `\,`)
	texts := make([]string, len(values))
	for i, v := range values {
		texts[i] = esc.Replace(formatValue(v))
	}
	return strings.Join(texts, ",")
}
