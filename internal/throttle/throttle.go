// Package throttle reads why DynamoDB throttled a request: the one place
// where ddbindex parses throttling reasons, from an SDK error (the root
// package's errors, metrics and Stats, and package internal/retry) or from
// text (the ops command's doctor).
//
// DynamoDB's throttling errors (ProvisionedThroughputExceededException,
// ThrottlingException, RequestLimitExceeded) carry ThrottlingReasons: a list
// of a reason and the ARN of the table or index that was throttled
// (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/throttling-diagnosing-workflow.html).
// A reason reads ResourceType + OperationType + LimitType: Table or Index;
// Read or Write; KeyRangeThroughputExceeded (a hot partition),
// ProvisionedThroughputExceeded, AccountLimitExceeded or
// MaxOnDemandThroughputExceeded. An Index...Write reason on a write to a
// base table is GSI back-pressure: DynamoDB throttles writes to the table
// because one of its GSIs cannot absorb their index updates
// (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/gsi-throttling.html).
//
// A transaction is not throttled with those errors: DynamoDB cancels it
// (TransactionCanceledException) with the cancellation code ThrottlingError
// on the actions it throttled, without reasons or ARNs
// (https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_TransactWriteItems.html).
package throttle

import (
	"errors"
	"regexp"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// CancelCode is the cancellation code of a transaction action DynamoDB
// throttled; it is also the Reason of the entries Reasons makes for one.
const CancelCode = "ThrottlingError"

// Reasons returns the throttling reasons err carries, in DynamoDB's order,
// each as the SDK decoded it: from a throttling error anywhere in err's
// chain, or, for a transaction cancelled for throttling, one entry per
// throttled action, whose Reason is CancelCode and whose Resource is
// table(i), the table the action names (nil table: ""). It returns nil
// when err is no throttle. A throttle that carries no reasons (a server
// that does not send them) returns one entry with neither Reason nor
// Resource: see IsThrottle.
func Reasons(err error, table func(i int) string) []types.ThrottlingReason {
	if err == nil {
		return nil
	}
	var (
		pte *types.ProvisionedThroughputExceededException
		te  *types.ThrottlingException
		rle *types.RequestLimitExceeded
		tce *types.TransactionCanceledException
	)
	var rs []types.ThrottlingReason
	switch {
	case errors.As(err, &pte):
		rs = pte.ThrottlingReasons
	case errors.As(err, &te):
		rs = te.ThrottlingReasons
	case errors.As(err, &rle):
		rs = rle.ThrottlingReasons
	case errors.As(err, &tce):
		for i, r := range tce.CancellationReasons {
			if aws.ToString(r.Code) != CancelCode {
				continue
			}
			res := ""
			if table != nil {
				res = table(i)
			}
			rs = append(rs, types.ThrottlingReason{Reason: aws.String(CancelCode), Resource: aws.String(res)})
		}
		return rs
	default:
		return nil
	}
	if len(rs) == 0 {
		return []types.ThrottlingReason{{}}
	}
	return rs
}

// IsThrottle reports whether err is a throttling error, or a transaction
// cancelled for throttling alone (every action's code ThrottlingError or
// None): both are transient.
func IsThrottle(err error) bool {
	var tce *types.TransactionCanceledException
	if errors.As(err, &tce) {
		throttled := false
		for _, r := range tce.CancellationReasons {
			switch aws.ToString(r.Code) {
			case CancelCode:
				throttled = true
			case "", "None":
			default:
				return false
			}
		}
		return throttled
	}
	return len(Reasons(err, nil)) > 0
}

// Resource splits a throttled resource, an ARN such as
// arn:aws:dynamodb:us-east-1:123456789012:table/Orders/index/ByStatus, into
// the table's name and the index's ("" for a table). A bare table name (a
// cancelled transaction's entries) is the table. ok is false when the
// resource names no table.
func Resource(resource string) (table, index string, ok bool) {
	if resource == "" {
		return "", "", false
	}
	if !strings.HasPrefix(resource, "arn:") {
		if strings.Contains(resource, "/") {
			return "", "", false
		}
		return resource, "", true
	}
	// arn:partition:dynamodb:region:account:table/NAME[/index/NAME]
	parts := strings.SplitN(resource, ":", 6)
	if len(parts) != 6 || parts[2] != "dynamodb" {
		return "", "", false
	}
	rest, found := strings.CutPrefix(parts[5], "table/")
	if !found {
		return "", "", false
	}
	table, index, hasIndex := strings.Cut(rest, "/index/")
	if table == "" || strings.Contains(table, "/") || (hasIndex && (index == "" || strings.Contains(index, "/"))) {
		return "", "", false
	}
	return table, index, true
}

// Limit types, the last part of a reason.
const (
	KeyRange     = "KeyRangeThroughputExceeded"
	Provisioned  = "ProvisionedThroughputExceeded"
	AccountLimit = "AccountLimitExceeded"
	MaxOnDemand  = "MaxOnDemandThroughputExceeded"
)

// Parts splits a reason such as IndexWriteKeyRangeThroughputExceeded into
// its resource type (Table, Index), operation type (Read, Write) and limit
// type (one of the constants above). ok is false for anything else
// (CancelCode included).
func Parts(reason string) (resource, operation, limit string, ok bool) {
	for _, r := range []string{"Table", "Index"} {
		rest, found := strings.CutPrefix(reason, r)
		if !found {
			continue
		}
		for _, o := range []string{"Read", "Write"} {
			l, found := strings.CutPrefix(rest, o)
			if !found {
				continue
			}
			switch l {
			case KeyRange, Provisioned, AccountLimit, MaxOnDemand:
				return r, o, l, true
			}
		}
	}
	return "", "", "", false
}

// IndexWrite reports whether reason is an index's write limit: on a write
// to a base table, back-pressure from one of its GSIs.
func IndexWrite(reason string) bool {
	r, o, _, ok := Parts(reason)
	return ok && r == "Index" && o == "Write"
}

// Label renders one reason for an error message: "REASON on TABLE (index
// INDEX)", "REASON on RESOURCE" for a resource that is no table ARN,
// "throttled" alone when DynamoDB gave no reason.
func Label(r types.ThrottlingReason) string {
	reason, res := aws.ToString(r.Reason), aws.ToString(r.Resource)
	if reason == "" && res == "" {
		return "throttled"
	}
	if reason == "" {
		reason = "throttled"
	}
	if res == "" {
		return reason
	}
	table, index, ok := Resource(res)
	switch {
	case !ok:
		return reason + " on " + res
	case index != "":
		return reason + " on " + table + " (index " + index + ")"
	}
	return reason + " on " + table
}

// Labels renders reasons with Label, joined by "; ".
func Labels(rs []types.ThrottlingReason) string {
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = Label(r)
	}
	return strings.Join(parts, "; ")
}

// Key identifies one throttled resource and reason, for counting.
type Key struct{ Reason, Table, Index string }

// KeyOf returns r's Key: the resource split by Resource (a resource that
// is no table ARN stays whole in Table).
func KeyOf(r types.ThrottlingReason) Key {
	res := aws.ToString(r.Resource)
	table, index, ok := Resource(res)
	if !ok {
		table, index = res, ""
	}
	return Key{Reason: aws.ToString(r.Reason), Table: table, Index: index}
}

var (
	reasonRE   = regexp.MustCompile(`\b(?:Table|Index)(?:Read|Write)(?:KeyRangeThroughput|ProvisionedThroughput|AccountLimit|MaxOnDemandThroughput)Exceeded\b`)
	arnRE      = regexp.MustCompile(`arn:aws[a-z-]*:dynamodb:[a-z0-9-]*:[0-9]*:table/([A-Za-z0-9_.-]+)(?:/index/([A-Za-z0-9_.-]+))?`)
	labelRE    = regexp.MustCompile(`^ on ([A-Za-z0-9_.-]+)(?: \(index ([A-Za-z0-9_.-]+)\))?`)
	maxLineLen = 1 << 20
)

// Scan finds the throttling reasons in one line of text: DynamoDB's JSON
// error bodies (a reason and, in the same line, the resource's ARN), the
// messages of ddbindex's errors (Label's "REASON on TABLE (index INDEX)"),
// or any line that has a reason followed by an ARN. Each reason is paired
// with the resource that follows it on the line (an ARN, or Label's "on
// ..."), else with the closest ARN before it; a reason with no resource
// has Table "". Lines longer than 1 MiB are not read.
func Scan(line string) []Key {
	if len(line) > maxLineLen {
		return nil
	}
	locs := reasonRE.FindAllStringIndex(line, -1)
	if len(locs) == 0 {
		return nil
	}
	arns := arnRE.FindAllStringSubmatchIndex(line, -1)
	keys := make([]Key, 0, len(locs))
	for i, loc := range locs {
		k := Key{Reason: line[loc[0]:loc[1]]}
		end := len(line)
		if i+1 < len(locs) {
			end = locs[i+1][0]
		}
		if m := labelRE.FindStringSubmatch(line[loc[1]:end]); m != nil {
			k.Table, k.Index = m[1], m[2]
			keys = append(keys, k)
			continue
		}
		var before, after []int
		for _, a := range arns {
			if a[0] >= loc[1] && a[0] < end && after == nil {
				after = a
			}
			if a[1] <= loc[0] {
				before = a
			}
		}
		if a := after; a != nil || before != nil {
			if a == nil {
				a = before
			}
			k.Table = line[a[2]:a[3]]
			if a[4] >= 0 {
				k.Index = line[a[4]:a[5]]
			}
		}
		keys = append(keys, k)
	}
	return keys
}
