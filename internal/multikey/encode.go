package multikey

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// The hidden key attributes hold a tuple of key attribute values as the
// lower-case hex of an order-preserving byte encoding: comparing two hidden
// values as Strings (byte by byte) compares their tuples component by
// component, each by DynamoDB's order for its type (Numbers by value,
// Strings and Binaries by unsigned bytes).
//
// Each component's encoding delimits itself, so a tuple is the
// concatenation of its components' encodings, and the tuples that begin
// with the same leading components are exactly the hidden values that begin
// with those components' encoding. No component's encoding ends with the
// byte 0xFF, which the bounds below rely on.
//
//   - A String or Binary: its bytes with 0x00 written as 0x00 0xFF, then the
//     terminator 0x00 0x00 (which sorts below 0x00 0xFF and below any other
//     byte, so a value sorts before every longer value it is a prefix of).
//   - A Number 0.d1d2...dn × 10^e (d1 > 0, dn > 0): zero is 0x01 0x00; a
//     positive Number is 0x02, e + 0x8000 in two bytes, each digit as
//     0x10 + d, and the terminator 0x00; a negative Number is 0x00, 0x7FFF - e
//     in two bytes, each digit as 0x19 - d, and the terminator 0x20.

// maxHiddenBytes caps an encoded tuple: its hex must fit DynamoDB's limit
// for a sort key value (1,024 bytes). Bounds are padded to it.
const maxHiddenBytes = 512

// encodeValue appends the encoding of av, of type typ, to dst.
func encodeValue(dst []byte, typ types.ScalarAttributeType, av types.AttributeValue) ([]byte, error) {
	switch typ {
	case types.ScalarAttributeTypeS:
		v, ok := av.(*types.AttributeValueMemberS)
		if !ok {
			return nil, typeMismatch(typ, av)
		}
		return append(escapeBytes(dst, []byte(v.Value)), 0x00, 0x00), nil
	case types.ScalarAttributeTypeB:
		v, ok := av.(*types.AttributeValueMemberB)
		if !ok {
			return nil, typeMismatch(typ, av)
		}
		return append(escapeBytes(dst, v.Value), 0x00, 0x00), nil
	case types.ScalarAttributeTypeN:
		v, ok := av.(*types.AttributeValueMemberN)
		if !ok {
			return nil, typeMismatch(typ, av)
		}
		neg, digits, exp, err := parseNumber(v.Value)
		if err != nil {
			return nil, err
		}
		return encodeNumber(dst, neg, digits, exp), nil
	}
	return nil, fmt.Errorf("unsupported key attribute type %q", typ)
}

// escapeBytes appends b with each 0x00 written as 0x00 0xFF.
func escapeBytes(dst, b []byte) []byte {
	for _, c := range b {
		dst = append(dst, c)
		if c == 0x00 {
			dst = append(dst, 0xFF)
		}
	}
	return dst
}

func encodeNumber(dst []byte, neg bool, digits string, exp int) []byte {
	switch {
	case digits == "":
		return append(dst, 0x01, 0x00)
	case !neg:
		e := exp + 0x8000
		dst = append(dst, 0x02, byte(e>>8), byte(e))
		for i := 0; i < len(digits); i++ {
			dst = append(dst, 0x10+digits[i]-'0')
		}
		return append(dst, 0x00)
	default:
		e := 0x7FFF - exp
		dst = append(dst, 0x00, byte(e>>8), byte(e))
		for i := 0; i < len(digits); i++ {
			dst = append(dst, 0x19-(digits[i]-'0'))
		}
		return append(dst, 0x20)
	}
}

// parseNumber reads a DynamoDB Number as a sign, its significant digits
// (no leading or trailing zeros; "" for zero) and the exponent e with
// value = 0.digits × 10^e.
func parseNumber(s string) (neg bool, digits string, exp int, err error) {
	bad := fmt.Errorf("the parameter cannot be converted to a numeric value: %s", s)
	t := strings.TrimSpace(s)
	if t == "" {
		return false, "", 0, bad
	}
	switch t[0] {
	case '-':
		neg, t = true, t[1:]
	case '+':
		t = t[1:]
	}
	mant, e10 := t, 0
	if i := strings.IndexAny(t, "eE"); i >= 0 {
		mant = t[:i]
		n, perr := strconv.Atoi(t[i+1:])
		if perr != nil {
			return false, "", 0, bad
		}
		e10 = n
	}
	intPart, frac, _ := strings.Cut(mant, ".")
	if intPart == "" && frac == "" {
		return false, "", 0, bad
	}
	for _, c := range intPart + frac {
		if c < '0' || c > '9' {
			return false, "", 0, bad
		}
	}
	all := intPart + frac
	exp = len(intPart) + e10
	trimmed := strings.TrimLeft(all, "0")
	exp -= len(all) - len(trimmed)
	digits = strings.TrimRight(trimmed, "0")
	if digits == "" {
		return false, "", 0, nil
	}
	if len(digits) > 38 {
		return false, "", 0, fmt.Errorf("attempting to store more than 38 significant digits in a Number: %s", s)
	}
	return neg, digits, exp, nil
}

// decodeTuple reads the encoded tuple b of the given types back into
// attribute values (Numbers in their shortest decimal form).
func decodeTuple(b []byte, typs []types.ScalarAttributeType) ([]types.AttributeValue, error) {
	out := make([]types.AttributeValue, 0, len(typs))
	for _, typ := range typs {
		var av types.AttributeValue
		var err error
		av, b, err = decodeValue(b, typ)
		if err != nil {
			return nil, err
		}
		out = append(out, av)
	}
	if len(b) != 0 {
		return nil, fmt.Errorf("%d bytes after the last key attribute", len(b))
	}
	return out, nil
}

func decodeValue(b []byte, typ types.ScalarAttributeType) (types.AttributeValue, []byte, error) {
	short := fmt.Errorf("truncated %s key attribute", typ)
	switch typ {
	case types.ScalarAttributeTypeS, types.ScalarAttributeTypeB:
		var v []byte
		for i := 0; ; i++ {
			if i >= len(b) {
				return nil, nil, short
			}
			if b[i] != 0x00 {
				v = append(v, b[i])
				continue
			}
			if i+1 >= len(b) {
				return nil, nil, short
			}
			if b[i+1] == 0x00 {
				rest := b[i+2:]
				if typ == types.ScalarAttributeTypeS {
					return &types.AttributeValueMemberS{Value: string(v)}, rest, nil
				}
				if v == nil {
					v = []byte{}
				}
				return &types.AttributeValueMemberB{Value: v}, rest, nil
			}
			v = append(v, 0x00)
			i++
		}
	case types.ScalarAttributeTypeN:
		if len(b) < 2 {
			return nil, nil, short
		}
		if b[0] == 0x01 {
			return &types.AttributeValueMemberN{Value: "0"}, b[2:], nil
		}
		if len(b) < 4 {
			return nil, nil, short
		}
		neg := b[0] == 0x00
		e := int(b[1])<<8 | int(b[2])
		var sb strings.Builder
		i := 3
		for ; i < len(b) && b[i] >= 0x10 && b[i] <= 0x19; i++ {
			d := b[i] - 0x10
			if neg {
				d = 0x19 - b[i]
			}
			sb.WriteByte('0' + d)
		}
		if i >= len(b) {
			return nil, nil, short
		}
		exp := e - 0x8000
		if neg {
			exp = 0x7FFF - e
		}
		return &types.AttributeValueMemberN{Value: formatNumber(neg, sb.String(), exp)}, b[i+1:], nil
	}
	return nil, nil, fmt.Errorf("unsupported key attribute type %q", typ)
}

// formatNumber writes 0.digits × 10^exp in plain decimal notation.
func formatNumber(neg bool, digits string, exp int) string {
	var s string
	switch {
	case exp <= 0:
		s = "0." + strings.Repeat("0", -exp) + digits
	case exp >= len(digits):
		s = digits + strings.Repeat("0", exp-len(digits))
	default:
		s = digits[:exp] + "." + digits[exp:]
	}
	if neg {
		return "-" + s
	}
	return s
}

// Bounds over encoded tuples. For a complete encoding x of leading
// components, the hidden values whose tuples begin with those components
// are those from x to top(x) inclusive; above(x) is the least value above
// all of them, below(x) the greatest below all of them (a bound no encoded
// tuple lies strictly between).

func top(x []byte) []byte {
	out := bytes.Clone(x)
	for len(out) < maxHiddenBytes {
		out = append(out, 0xFF)
	}
	return out
}

func above(x []byte) []byte {
	out := bytes.Clone(x)
	out[len(out)-1]++ // never 0xFF: see the encoding
	return out
}

func below(x []byte) []byte {
	out := bytes.Clone(x)
	if out[len(out)-1] == 0x00 {
		return out[:len(out)-1]
	}
	out[len(out)-1]--
	return out
}

// hexS is the hidden attribute value of an encoding.
func hexS(b []byte) *types.AttributeValueMemberS {
	return &types.AttributeValueMemberS{Value: hex.EncodeToString(b)}
}

func typeMismatch(want types.ScalarAttributeType, av types.AttributeValue) error {
	return refuse("Type mismatch for key: expected %s, actual %s", want, avType(av))
}

// avType names an attribute value's type as DynamoDB does.
func avType(av types.AttributeValue) string {
	switch av.(type) {
	case *types.AttributeValueMemberS:
		return "S"
	case *types.AttributeValueMemberN:
		return "N"
	case *types.AttributeValueMemberB:
		return "B"
	case *types.AttributeValueMemberBOOL:
		return "BOOL"
	case *types.AttributeValueMemberNULL:
		return "NULL"
	case *types.AttributeValueMemberM:
		return "M"
	case *types.AttributeValueMemberL:
		return "L"
	case *types.AttributeValueMemberSS:
		return "SS"
	case *types.AttributeValueMemberNS:
		return "NS"
	case *types.AttributeValueMemberBS:
		return "BS"
	}
	return "?"
}

// refusal is an error whose text is DynamoDB's own message for what it
// refuses, capitalised as DynamoDB writes it.
type refusal string

func (r refusal) Error() string { return string(r) }

func refuse(format string, args ...any) error { return refusal(fmt.Sprintf(format, args...)) }
