package multikey

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// leaf is one condition of a KeyConditionExpression, on one attribute.
type leaf struct {
	attr string
	op   string // "=", "<", "<=", ">", ">=", "BETWEEN", "begins_with"
	vals []types.AttributeValue
}

// token kinds of the expression grammar the double reads.
type token struct {
	kind byte // '(' ')' ',' 'o' (comparator) 'w' (word) '#' (name) ':' (value)
	text string
}

func tokenize(s string) ([]token, error) {
	var out []token
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '(' || c == ')' || c == ',':
			out = append(out, token{kind: c, text: string(c)})
			i++
		case c == '=' || c == '<' || c == '>':
			j := i + 1
			if j < len(s) && (s[j] == '=' || (c == '<' && s[j] == '>')) {
				j++
			}
			out = append(out, token{kind: 'o', text: s[i:j]})
			i = j
		case c == '#' || c == ':' || isWordByte(c):
			j := i + 1
			for j < len(s) && (isWordByte(s[j]) || s[j] == '.' || s[j] == '[' || s[j] == ']' || s[j] == '#') {
				j++
			}
			kind := c
			if isWordByte(c) {
				kind = 'w'
			}
			out = append(out, token{kind: kind, text: s[i:j]})
			i = j
		default:
			return nil, refuse("Invalid KeyConditionExpression: Syntax error; token: %q", string(c))
		}
	}
	return out, nil
}

func isWordByte(c byte) bool {
	return c == '_' || c == '-' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
}

// parseKeyCondition reads a KeyConditionExpression as the conjunction of
// leaves DynamoDB allows in one: comparisons, BETWEEN and begins_with, each
// of an attribute and values, AND-ed, in any parentheses.
func parseKeyCondition(expr string, names map[string]string, values map[string]types.AttributeValue) ([]leaf, error) {
	toks, err := tokenize(expr)
	if err != nil {
		return nil, err
	}
	p := &kcParser{toks: toks, names: names, values: values}
	leaves, err := p.conj()
	if err != nil {
		return nil, err
	}
	if p.i != len(p.toks) {
		return nil, refuse("Invalid KeyConditionExpression: Syntax error; token: %q", p.toks[p.i].text)
	}
	return leaves, nil
}

type kcParser struct {
	toks   []token
	i      int
	names  map[string]string
	values map[string]types.AttributeValue
}

func (p *kcParser) peek() (token, bool) {
	if p.i < len(p.toks) {
		return p.toks[p.i], true
	}
	return token{}, false
}

func (p *kcParser) next() (token, error) {
	t, ok := p.peek()
	if !ok {
		return token{}, refuse("Invalid KeyConditionExpression: Syntax error; token: <EOF>")
	}
	p.i++
	return t, nil
}

func (p *kcParser) want(kind byte) error {
	t, err := p.next()
	if err != nil {
		return err
	}
	if t.kind != kind {
		return refuse("Invalid KeyConditionExpression: Syntax error; token: %q", t.text)
	}
	return nil
}

func (p *kcParser) conj() ([]leaf, error) {
	var out []leaf
	for {
		ls, err := p.term()
		if err != nil {
			return nil, err
		}
		out = append(out, ls...)
		t, ok := p.peek()
		if !ok || t.kind != 'w' || !strings.EqualFold(t.text, "AND") {
			return out, nil
		}
		p.i++
	}
}

func (p *kcParser) term() ([]leaf, error) {
	t, err := p.next()
	if err != nil {
		return nil, err
	}
	switch {
	case t.kind == '(':
		ls, err := p.conj()
		if err != nil {
			return nil, err
		}
		return ls, p.want(')')
	case t.kind == 'w' && strings.EqualFold(t.text, "OR"), t.kind == 'w' && strings.EqualFold(t.text, "NOT"):
		return nil, refuse("Invalid operator used in KeyConditionExpression: %s", strings.ToUpper(t.text))
	case t.kind == 'w' && t.text == "begins_with":
		if err := p.want('('); err != nil {
			return nil, err
		}
		a, err := p.next()
		if err != nil {
			return nil, err
		}
		attr, err := p.attr(a)
		if err != nil {
			return nil, err
		}
		if err := p.want(','); err != nil {
			return nil, err
		}
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		return []leaf{{attr: attr, op: "begins_with", vals: []types.AttributeValue{v}}}, p.want(')')
	case t.kind == 'w' && (strings.EqualFold(t.text, "attribute_exists") || strings.EqualFold(t.text, "attribute_not_exists") ||
		strings.EqualFold(t.text, "contains") || strings.EqualFold(t.text, "size") || strings.EqualFold(t.text, "attribute_type")):
		return nil, refuse("Invalid operator used in KeyConditionExpression: %s", t.text)
	}
	attr, err := p.attr(t)
	if err != nil {
		return nil, err
	}
	op, err := p.next()
	if err != nil {
		return nil, err
	}
	switch {
	case op.kind == 'o' && op.text != "<>":
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		return []leaf{{attr: attr, op: op.text, vals: []types.AttributeValue{v}}}, nil
	case op.kind == 'w' && strings.EqualFold(op.text, "BETWEEN"):
		lo, err := p.value()
		if err != nil {
			return nil, err
		}
		and, err := p.next()
		if err != nil {
			return nil, err
		}
		if and.kind != 'w' || !strings.EqualFold(and.text, "AND") {
			return nil, refuse("Invalid KeyConditionExpression: Syntax error; token: %q", and.text)
		}
		hi, err := p.value()
		if err != nil {
			return nil, err
		}
		return []leaf{{attr: attr, op: "BETWEEN", vals: []types.AttributeValue{lo, hi}}}, nil
	}
	return nil, refuse("Invalid operator used in KeyConditionExpression: %s", op.text)
}

func (p *kcParser) attr(t token) (string, error) {
	switch t.kind {
	case '#':
		n, ok := p.names[t.text]
		if !ok {
			return "", refuse("Value provided in ExpressionAttributeNames unused in expressions or undefined: An expression attribute name used in the document path is not defined; attribute name: %s", t.text)
		}
		return n, nil
	case 'w':
		return t.text, nil
	}
	return "", refuse("Invalid KeyConditionExpression: Syntax error; token: %q", t.text)
}

func (p *kcParser) value() (types.AttributeValue, error) {
	t, err := p.next()
	if err != nil {
		return nil, err
	}
	if t.kind != ':' {
		return nil, refuse("Invalid KeyConditionExpression: Syntax error; token: %q", t.text)
	}
	v, ok := p.values[t.text]
	if !ok {
		return nil, refuse("Invalid KeyConditionExpression: An expression attribute value used in expression is not defined; attribute value: %s", t.text)
	}
	return v, nil
}

// hiddenCondition checks leaves against ix's key schema as DynamoDB does for
// a multi-attribute key, and returns the condition on the hidden attributes
// that selects the same items: the partition value, and the inclusive
// bounds on the sort value (lo == nil: none; op is "" for BETWEEN lo AND
// hi, or a comparator of hi alone).
func (ix *index) hiddenCondition(leaves []leaf) (hash []byte, op string, lo, hi []byte, err error) {
	byAttr := map[string]leaf{}
	for _, l := range leaves {
		if _, dup := byAttr[l.attr]; dup {
			return nil, "", nil, nil, refuse("KeyConditionExpressions must only contain one condition per key")
		}
		if ix.keyType(l.attr) == "" {
			return nil, "", nil, nil, refuse("Query key condition not supported: %s is not a key attribute of index %s", l.attr, ix.name)
		}
		byAttr[l.attr] = l
	}
	for _, a := range ix.hash {
		l, ok := byAttr[a.name]
		if !ok {
			return nil, "", nil, nil, refuse("Query condition missed key schema element: %s", a.name)
		}
		if l.op != "=" {
			return nil, "", nil, nil, refuse("Query key condition not supported: every partition key attribute takes =, not %s on %s", l.op, a.name)
		}
		if hash, err = encodeValue(hash, a.typ, l.vals[0]); err != nil {
			return nil, "", nil, nil, paramErr(err)
		}
		if isEmpty(l.vals[0]) {
			return nil, "", nil, nil, refuse("One or more parameter values are not valid. The AttributeValue for a key attribute cannot contain an empty %s value. Key: %s", avType(l.vals[0]), a.name)
		}
	}
	var e []byte // the leading equal sort components
	given := 0
	for i, a := range ix.rng {
		l, ok := byAttr[a.name]
		if !ok {
			break
		}
		given = i + 1
		last := true
		for _, b := range ix.rng[i+1:] {
			if _, ok := byAttr[b.name]; ok {
				last = false
			}
		}
		if !last && l.op != "=" {
			return nil, "", nil, nil, refuse("Query key condition not supported: only the last sort key attribute of a condition may take %s (%s)", l.op, a.name)
		}
		if l.op == "begins_with" && a.typ == types.ScalarAttributeTypeN {
			return nil, "", nil, nil, refuse("Invalid KeyConditionExpression: Incorrect operand type for operator or function; operator or function: begins_with, operand type: N")
		}
		for _, v := range l.vals {
			if _, err := encodeValue(nil, a.typ, v); err != nil {
				return nil, "", nil, nil, paramErr(err)
			}
			if isEmpty(v) {
				return nil, "", nil, nil, refuse("One or more parameter values are not valid. The AttributeValue for a key attribute cannot contain an empty %s value. Key: %s", avType(v), a.name)
			}
		}
		x, _ := encodeValue(bytes.Clone(e), a.typ, l.vals[0])
		switch l.op {
		case "=":
			if last {
				return hash, "", x, top(x), nil
			}
			e = x
		case "<":
			if len(e) == 0 {
				return hash, "<", nil, x, nil
			}
			return hash, "", e, below(x), nil
		case "<=":
			if len(e) == 0 {
				return hash, "<=", nil, top(x), nil
			}
			return hash, "", e, top(x), nil
		case ">":
			if len(e) == 0 {
				return hash, ">=", nil, above(x), nil
			}
			return hash, "", above(x), top(e), nil
		case ">=":
			if len(e) == 0 {
				return hash, ">=", nil, x, nil
			}
			return hash, "", x, top(e), nil
		case "BETWEEN":
			y, _ := encodeValue(bytes.Clone(e), a.typ, l.vals[1])
			if bytes.Compare(x, y) > 0 {
				return nil, "", nil, nil, refuse("Invalid KeyConditionExpression: The BETWEEN operator requires upper bound to be greater than or equal to lower bound; lower bound operand: %s, upper bound operand: %s", avText(l.vals[0]), avText(l.vals[1]))
			}
			return hash, "", x, top(y), nil
		case "begins_with":
			pre := escapeBytes(bytes.Clone(e), prefixBytes(l.vals[0]))
			return hash, "", pre, top(pre), nil
		}
	}
	if given < len(byAttr)-len(ix.hash) {
		return nil, "", nil, nil, refuse("Query key condition not supported: sort key attributes go left to right without gaps in index %s", ix.name)
	}
	return hash, "", nil, nil, nil
}

func prefixBytes(av types.AttributeValue) []byte {
	switch v := av.(type) {
	case *types.AttributeValueMemberS:
		return []byte(v.Value)
	case *types.AttributeValueMemberB:
		return v.Value
	}
	return nil
}

func isEmpty(av types.AttributeValue) bool {
	switch v := av.(type) {
	case *types.AttributeValueMemberS:
		return v.Value == ""
	case *types.AttributeValueMemberB:
		return len(v.Value) == 0
	}
	return false
}

func avText(av types.AttributeValue) string {
	switch v := av.(type) {
	case *types.AttributeValueMemberS:
		return "AttributeValue: {S:" + v.Value + "}"
	case *types.AttributeValueMemberN:
		return "AttributeValue: {N:" + v.Value + "}"
	case *types.AttributeValueMemberB:
		return fmt.Sprintf("AttributeValue: {B:%x}", v.Value)
	}
	return "AttributeValue: {" + avType(av) + "}"
}

func paramErr(err error) error {
	return refuse("One or more parameter values were invalid: Condition parameter type does not match schema type (%v)", err)
}

// referencedNames returns the attribute names an expression refers to at
// the top of a document path (a.b and a[0] refer to a), resolving #name
// placeholders.
func referencedNames(expr string, names map[string]string) ([]string, error) {
	toks, err := tokenize(expr)
	if err != nil {
		return nil, err
	}
	var out []string
	for i, t := range toks {
		var first string
		switch t.kind {
		case '#':
			first = t.text
			if j := strings.IndexAny(first, ".["); j >= 0 {
				first = first[:j]
			}
			n, ok := names[first]
			if !ok {
				continue
			}
			out = append(out, n)
		case 'w':
			if i+1 < len(toks) && toks[i+1].kind == '(' {
				continue // a function
			}
			switch strings.ToUpper(t.text) {
			case "AND", "OR", "NOT", "BETWEEN", "IN":
				continue
			}
			first = t.text
			if j := strings.IndexAny(first, ".["); j >= 0 {
				first = first[:j]
			}
			out = append(out, first)
		}
	}
	return out, nil
}

// placeholders returns the #name and :value placeholders an expression uses.
func placeholders(expr string) (names, values []string) {
	toks, err := tokenize(expr)
	if err != nil {
		return nil, nil
	}
	for _, t := range toks {
		switch t.kind {
		case '#':
			for _, part := range strings.FieldsFunc(t.text, func(r rune) bool { return r == '.' || r == '[' || r == ']' }) {
				if strings.HasPrefix(part, "#") {
					names = append(names, part)
				}
			}
		case ':':
			values = append(values, t.text)
		}
	}
	return names, values
}
