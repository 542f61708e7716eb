package throttle

import (
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

const gsiARN = "arn:aws:dynamodb:us-west-2:123456789012:table/CustomerOrders/index/OrderDateIndex"

func reason(r, res string) types.ThrottlingReason {
	return types.ThrottlingReason{Reason: aws.String(r), Resource: aws.String(res)}
}

func TestReasons(t *testing.T) {
	gsi := reason("IndexWriteKeyRangeThroughputExceeded", gsiARN)
	wrapped := func(err error) error { return fmt.Errorf("operation error DynamoDB: PutItem: %w", err) }
	tables := func(i int) string { return []string{"Orders", "Orders.ByStatus"}[i] }
	cases := []struct {
		name string
		err  error
		want []types.ThrottlingReason
	}{
		{"nil", nil, nil},
		{"other", errors.New("boom"), nil},
		{"provisioned", wrapped(&types.ProvisionedThroughputExceededException{ThrottlingReasons: []types.ThrottlingReason{gsi}}), []types.ThrottlingReason{gsi}},
		{"throttling", wrapped(&types.ThrottlingException{ThrottlingReasons: []types.ThrottlingReason{gsi}}), []types.ThrottlingReason{gsi}},
		{"request limit", &types.RequestLimitExceeded{ThrottlingReasons: []types.ThrottlingReason{gsi}}, []types.ThrottlingReason{gsi}},
		{"no reasons", &types.ProvisionedThroughputExceededException{}, []types.ThrottlingReason{{}}},
		{"cancelled", wrapped(&types.TransactionCanceledException{CancellationReasons: []types.CancellationReason{
			{Code: aws.String("None")}, {Code: aws.String("ThrottlingError")},
		}}), []types.ThrottlingReason{reason("ThrottlingError", "Orders.ByStatus")}},
		{"cancelled for a condition", &types.TransactionCanceledException{CancellationReasons: []types.CancellationReason{
			{Code: aws.String("ConditionalCheckFailed")},
		}}, nil},
	}
	for _, c := range cases {
		if got := Reasons(c.err, tables); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: Reasons = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestIsThrottle(t *testing.T) {
	cancelled := func(codes ...string) error {
		e := &types.TransactionCanceledException{}
		for _, c := range codes {
			e.CancellationReasons = append(e.CancellationReasons, types.CancellationReason{Code: aws.String(c)})
		}
		return e
	}
	for _, c := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{errors.New("x"), false},
		{&types.ThrottlingException{}, true},
		{cancelled("None", "ThrottlingError"), true},
		{cancelled("ThrottlingError", "ConditionalCheckFailed"), false},
		{cancelled("None", "TransactionConflict"), false},
	} {
		if got := IsThrottle(c.err); got != c.want {
			t.Errorf("IsThrottle(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

func TestResource(t *testing.T) {
	for _, c := range []struct {
		in           string
		table, index string
		ok           bool
	}{
		{gsiARN, "CustomerOrders", "OrderDateIndex", true},
		{"arn:aws:dynamodb:us-east-1:123456789012:table/UserSessions", "UserSessions", "", true},
		{"arn:aws-cn:dynamodb:cn-north-1:123456789012:table/T/index/I", "T", "I", true},
		{"Orders", "Orders", "", true},
		{"", "", "", false},
		{"arn:aws:s3:::bucket/key", "", "", false},
		{"arn:aws:dynamodb:us-east-1:1:table/T/stream/2020", "", "", false},
		{"arn:aws:dynamodb:us-east-1:1:table/T/index/", "", "", false},
		{"table/T", "", "", false},
	} {
		table, index, ok := Resource(c.in)
		if table != c.table || index != c.index || ok != c.ok {
			t.Errorf("Resource(%q) = %q, %q, %v; want %q, %q, %v", c.in, table, index, ok, c.table, c.index, c.ok)
		}
	}
}

func TestParts(t *testing.T) {
	r, o, l, ok := Parts("IndexWriteKeyRangeThroughputExceeded")
	if r != "Index" || o != "Write" || l != KeyRange || !ok {
		t.Errorf("Parts = %q %q %q %v", r, o, l, ok)
	}
	for _, bad := range []string{"", "ThrottlingError", "IndexWrite", "IndexDeleteKeyRangeThroughputExceeded", "TableReadSomethingExceeded"} {
		if _, _, _, ok := Parts(bad); ok {
			t.Errorf("Parts(%q) ok", bad)
		}
	}
	if !IndexWrite("IndexWriteAccountLimitExceeded") || IndexWrite("TableWriteKeyRangeThroughputExceeded") || IndexWrite("IndexReadKeyRangeThroughputExceeded") {
		t.Error("IndexWrite misclassifies")
	}
}

func TestLabel(t *testing.T) {
	for _, c := range []struct {
		r    types.ThrottlingReason
		want string
	}{
		{reason("IndexWriteKeyRangeThroughputExceeded", gsiARN), "IndexWriteKeyRangeThroughputExceeded on CustomerOrders (index OrderDateIndex)"},
		{reason("TableReadProvisionedThroughputExceeded", "arn:aws:dynamodb:us-east-1:1:table/T"), "TableReadProvisionedThroughputExceeded on T"},
		{reason("ThrottlingError", "Orders"), "ThrottlingError on Orders"},
		{reason("TableReadProvisionedThroughputExceeded", "weird/resource"), "TableReadProvisionedThroughputExceeded on weird/resource"},
		{types.ThrottlingReason{}, "throttled"},
	} {
		if got := Label(c.r); got != c.want {
			t.Errorf("Label = %q, want %q", got, c.want)
		}
	}
}

// TestScan reads reasons back from the texts an operator has at hand: the
// library's own error messages (Label), DynamoDB's JSON error bodies and
// the SDK's renderings of them.
func TestScan(t *testing.T) {
	for _, c := range []struct {
		line string
		want []Key
	}{
		{"", nil},
		{"nothing to see", nil},
		{`2026/12/04 ERROR put: PutItem on Orders failed [DDBX-900]: throttled: IndexWriteKeyRangeThroughputExceeded on Orders (index ByStatus): operation error DynamoDB`,
			[]Key{{"IndexWriteKeyRangeThroughputExceeded", "Orders", "ByStatus"}}},
		{`{"__type":"com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException","message":"m","ThrottlingReasons":[{"reason":"IndexWriteProvisionedThroughputExceeded","resource":"` + gsiARN + `"},{"reason":"TableWriteKeyRangeThroughputExceeded","resource":"arn:aws:dynamodb:us-west-2:123456789012:table/CustomerOrders"}]}`,
			[]Key{{"IndexWriteProvisionedThroughputExceeded", "CustomerOrders", "OrderDateIndex"}, {"TableWriteKeyRangeThroughputExceeded", "CustomerOrders", ""}}},
		// The resource before the reason (an SDK's rendering).
		{`{Resource: "` + gsiARN + `", Reason: "IndexWriteKeyRangeThroughputExceeded"}`, []Key{{"IndexWriteKeyRangeThroughputExceeded", "CustomerOrders", "OrderDateIndex"}}},
		{`TableReadAccountLimitExceeded and nothing else`, []Key{{"TableReadAccountLimitExceeded", "", ""}}},
		{`XIndexWriteKeyRangeThroughputExceeded`, nil},
	} {
		if got := Scan(c.line); !reflect.DeepEqual(got, c.want) {
			t.Errorf("Scan(%q) = %v, want %v", c.line, got, c.want)
		}
	}
}

func TestKeyOf(t *testing.T) {
	for _, c := range []struct {
		r    types.ThrottlingReason
		want Key
	}{
		{reason("IndexWriteKeyRangeThroughputExceeded", gsiARN), Key{"IndexWriteKeyRangeThroughputExceeded", "CustomerOrders", "OrderDateIndex"}},
		{reason("ThrottlingError", "Orders.ByStatus"), Key{"ThrottlingError", "Orders.ByStatus", ""}},
		{reason("TableReadProvisionedThroughputExceeded", "weird/resource"), Key{"TableReadProvisionedThroughputExceeded", "weird/resource", ""}},
		{types.ThrottlingReason{}, Key{}},
	} {
		if got := KeyOf(c.r); got != c.want {
			t.Errorf("KeyOf(%v) = %v, want %v", Label(c.r), got, c.want)
		}
	}
}
