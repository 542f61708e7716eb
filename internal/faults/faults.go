// Package faults is a fault-injecting http.RoundTripper for ddbindex's
// tests. It sits between an AWS SDK client and a DynamoDB (or DynamoDB
// Streams) endpoint and, as a Policy decides per request, answers in place
// of the server or loses the server's answer, the way real DynamoDB and the
// network around it do:
//
//   - Throttle: an HTTP 400 with the service's throttling error
//     (ProvisionedThroughputExceededException for DynamoDB,
//     LimitExceededException for DynamoDB Streams), without sending the
//     request. AWS documents both as retryable, and the SDK's standard
//     retryer retries them. [Transport.ThrottleWith] makes DynamoDB's
//     carry throttling reasons, as DynamoDB's do.
//   - CancelThrottle: a TransactWriteItems cancelled for throttling, without
//     sending it: an HTTP 400 TransactionCanceledException whose
//     CancellationReasons say ThrottlingError for the actions on the tables
//     [Transport.ThrottleTables] names (every action when it names none)
//     and None for the others. The SDK does not retry it. Other operations
//     go through.
//   - ServerError: an HTTP 500 InternalServerError, without sending.
//   - ResetBeforeSend: a connection reset before anything reached the
//     server.
//   - ResetAfterApply: the request reaches the server, which applies it and
//     answers; the answer is discarded and the client sees a connection
//     reset, as when a connection dies after the server wrote its reply.
//   - LostResponse: the same, but the answer never arrives and the client's
//     read times out (a net.Error whose Timeout is true).
//
// The last two are the faults that make a retried conditional write fail
// its own condition: the first attempt was applied, and only its answer was
// lost.
//
// Local DynamoDB-compatible servers never throttle and never lose an
// answer, so the tests that need these behaviours put a Transport in front
// of them. Decisions come from a seeded random source (Random) or a script
// (Script), so a failing run can be repeated.
package faults

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// Kind is one kind of injected fault.
type Kind int

// The fault kinds; see the package documentation.
const (
	None Kind = iota
	Throttle
	ServerError
	ResetBeforeSend
	ResetAfterApply
	LostResponse
	CancelThrottle
)

// AllKinds lists every fault kind but None and CancelThrottle (which only
// transactions can meet).
var AllKinds = []Kind{Throttle, ServerError, ResetBeforeSend, ResetAfterApply, LostResponse}

// Applied lists the kinds after which the server has applied the request.
var Applied = []Kind{ResetAfterApply, LostResponse}

func (k Kind) String() string {
	switch k {
	case None:
		return "none"
	case Throttle:
		return "throttle"
	case ServerError:
		return "server-error"
	case ResetBeforeSend:
		return "reset-before-send"
	case ResetAfterApply:
		return "reset-after-apply"
	case LostResponse:
		return "lost-response"
	case CancelThrottle:
		return "cancel-throttle"
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Request is what a Policy sees of one HTTP request.
type Request struct {
	// Service is "DynamoDB_20120810" or "DynamoDBStreams_20120810".
	Service string
	// Operation is the API operation, such as "PutItem" or "GetRecords".
	Operation string
	// N counts the requests the Transport has seen, from 1.
	N int
	// Body is the request's JSON body.
	Body []byte
}

// A Policy decides the fault for one request; None lets it through.
type Policy func(r Request) Kind

// Random injects a fault into a fraction rate of the requests whose
// operation is in ops (every operation when ops is empty), choosing among
// kinds (AllKinds when empty), from a source seeded with seed. It is safe
// for concurrent use; the Transport calls it under its own lock, so a run
// with one goroutine repeats exactly for the same seed.
func Random(rate float64, seed uint64, kinds []Kind, ops ...string) Policy {
	if len(kinds) == 0 {
		kinds = AllKinds
	}
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	return func(r Request) Kind {
		if len(ops) > 0 && !contains(ops, r.Operation) {
			return None
		}
		if rng.Float64() >= rate {
			return None
		}
		return kinds[rng.IntN(len(kinds))]
	}
}

// Script injects, for each operation named in script, the listed faults
// into its first requests in order: Script(map[string][]Kind{"PutItem":
// {LostResponse}}) loses the answer to the first PutItem and lets every
// later request through.
func Script(script map[string][]Kind) Policy {
	seen := map[string]int{}
	return func(r Request) Kind {
		ks := script[r.Operation]
		i := seen[r.Operation]
		seen[r.Operation]++
		if i < len(ks) {
			return ks[i]
		}
		return None
	}
}

// Transport is the fault-injecting http.RoundTripper.
type Transport struct {
	base   http.RoundTripper
	policy Policy

	mu     sync.Mutex
	n      int
	counts map[Kind]int
	byOp   map[string]map[Kind]int
	// throttleCode and reasons: what a Throttle of DynamoDB answers
	// (ThrottleWith); cancelTables: the tables a CancelThrottle throttles.
	throttleCode string
	reasons      []Reason
	cancelTables []string
}

// Reason is one throttling reason of an injected throttle: the reason
// (such as IndexWriteKeyRangeThroughputExceeded) and the ARN of the
// throttled table or index.
type Reason struct{ Reason, Resource string }

// ThrottleWith makes the Throttle faults of DynamoDB requests answer with
// the error code (ProvisionedThroughputExceededException,
// ThrottlingException or RequestLimitExceeded; "" keeps the default,
// ProvisionedThroughputExceededException) and carry reasons, in the shape
// DynamoDB sends them: a list of {"reason", "resource"} under the member
// the service model names, ThrottlingReasons (throttlingReasons for a
// ThrottlingException). See
// https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/throttling-diagnosing-workflow.html
// and https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_ThrottlingReason.html.
// It returns t.
func (t *Transport) ThrottleWith(code string, reasons ...Reason) *Transport {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.throttleCode, t.reasons = code, slices.Clone(reasons)
	return t
}

// ThrottleTables names the tables whose actions a CancelThrottle throttles
// (none: every action). It returns t.
func (t *Transport) ThrottleTables(names ...string) *Transport {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cancelTables = slices.Clone(names)
	return t
}

// New returns a Transport that sends through base (http.DefaultTransport when
// nil) and injects what policy decides.
func New(base http.RoundTripper, policy Policy) *Transport {
	if base == nil {
		base = http.DefaultTransport
	}
	return &Transport{base: base, policy: policy, counts: map[Kind]int{}, byOp: map[string]map[Kind]int{}}
}

// Client returns an *http.Client over the Transport, for the HTTPClient of
// an SDK client's Options.
func (t *Transport) Client() *http.Client { return &http.Client{Transport: t} }

// Count returns how many faults of kind k were injected (None: requests
// let through).
func (t *Transport) Count(k Kind) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.counts[k]
}

// Injected returns how many faults were injected in all.
func (t *Transport) Injected() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for k, c := range t.counts {
		if k != None {
			n += c
		}
	}
	return n
}

// CountOp returns how many faults of kind k hit operation op.
func (t *Transport) CountOp(op string, k Kind) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.byOp[op][k]
}

// Summary renders the counts, for test logs.
func (t *Transport) Summary() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var parts []string
	for _, k := range append([]Kind{None}, AllKinds...) {
		if c := t.counts[k]; c > 0 {
			parts = append(parts, fmt.Sprintf("%s=%d", k, c))
		}
	}
	return strings.Join(parts, " ")
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
	t.n++
	kind := t.policy(Request{Service: service, Operation: op, N: t.n, Body: body})
	t.counts[kind]++
	if t.byOp[op] == nil {
		t.byOp[op] = map[Kind]int{}
	}
	t.byOp[op][kind]++
	throttleCode, reasons, cancelTables := t.throttleCode, t.reasons, t.cancelTables
	t.mu.Unlock()
	if kind == CancelThrottle && op != "TransactWriteItems" {
		kind = None
	}

	// The request goes on with a body of its own: the transport may read it
	// after the SDK has closed the original.
	out := req.Clone(req.Context())
	out.Body = io.NopCloser(bytes.NewReader(body))
	out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	out.ContentLength = int64(len(body))

	switch kind {
	case Throttle:
		if strings.HasPrefix(service, "DynamoDBStreams") {
			return ErrorResponse(req, http.StatusBadRequest, "LimitExceededException", "Rate of requests exceeds the allowed throughput (injected)", requestID), nil
		}
		return throttleResponse(req, throttleCode, reasons), nil
	case CancelThrottle:
		return cancelResponse(req, body, cancelTables), nil
	case ServerError:
		return ErrorResponse(req, http.StatusInternalServerError, "InternalServerError", "Internal server error (injected)", requestID), nil
	case ResetBeforeSend:
		return nil, resetError("write")
	case ResetAfterApply, LostResponse:
		resp, err := t.base.RoundTrip(out)
		if err != nil {
			return nil, err
		}
		// The server has answered: it applied the request. Drain the answer
		// so that the connection is not left half read, then lose it.
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if kind == ResetAfterApply {
			return nil, resetError("read")
		}
		return nil, &net.OpError{Op: "read", Net: "tcp", Err: timeoutError{}}
	}
	return t.base.RoundTrip(out)
}

// timeoutError is a read that timed out, as net/http reports one.
type timeoutError struct{}

func (timeoutError) Error() string   { return "i/o timeout (injected)" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }

// resetError is what a read or write on a connection the peer reset returns.
func resetError(op string) error {
	return &net.OpError{Op: op, Net: "tcp", Err: &osSyscallError{"connection reset by peer", syscall.ECONNRESET}}
}

// osSyscallError mirrors os.SyscallError, so the error reads and unwraps as
// the real one does.
type osSyscallError struct {
	msg string
	err error
}

func (e *osSyscallError) Error() string { return e.msg }
func (e *osSyscallError) Unwrap() error { return e.err }

// requestID is the request id of the responses this package makes.
const requestID = "FAULTS00000000000000000000000000000000000000000000000"

// ErrorResponse builds the JSON error response the DynamoDB protocol uses,
// answering req with status and the error code and message DynamoDB would
// send; id is the request id, which names the test double that made it.
func ErrorResponse(req *http.Request, status int, code, msg, id string) *http.Response {
	return jsonResponse(req, status, id, map[string]any{"__type": "com.amazonaws.dynamodb.v20120810#" + code, "message": msg})
}

// throttleResponse is a DynamoDB throttle with reasons, for example (a GSI
// whose hot key range throttles writes to its base table):
//
//	HTTP/1.1 400 Bad Request
//	Content-Type: application/x-amz-json-1.0
//
//	{"__type":"com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException",
//	 "message":"...",
//	 "ThrottlingReasons":[{"reason":"IndexWriteKeyRangeThroughputExceeded",
//	   "resource":"arn:aws:dynamodb:us-west-2:123456789012:table/Orders/index/ByStatus"}]}
//
// ThrottlingException names the list throttlingReasons: the member names of
// the service model, which the SDK matches exactly.
func throttleResponse(req *http.Request, code string, reasons []Reason) *http.Response {
	if code == "" {
		code = "ProvisionedThroughputExceededException"
	}
	body := map[string]any{"__type": "com.amazonaws.dynamodb.v20120810#" + code, "message": "Rate of requests exceeds the allowed throughput (injected)"}
	if len(reasons) > 0 {
		list := make([]map[string]string, len(reasons))
		for i, r := range reasons {
			list[i] = map[string]string{"reason": r.Reason, "resource": r.Resource}
		}
		member := "ThrottlingReasons"
		if code == "ThrottlingException" {
			member = "throttlingReasons"
		}
		body[member] = list
	}
	return jsonResponse(req, http.StatusBadRequest, requestID, body)
}

// throttleMessage is the message DynamoDB gives a transaction action it
// throttled (the TransactionCanceledException of
// https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_TransactWriteItems.html).
const throttleMessage = "Throughput exceeds the current capacity of your table or index. DynamoDB is automatically scaling your table or index so please try again shortly. If exceptions persist, check if you have a hot key: https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/bp-partition-key-design.html. (injected)"

// cancelResponse is a TransactWriteItems request cancelled for throttling:
// one cancellation reason per action, in order, ThrottlingError for the
// actions on tables (every action when tables is empty), None for the
// others.
func cancelResponse(req *http.Request, body []byte, tables []string) *http.Response {
	var in struct {
		TransactItems []map[string]struct{ TableName string }
	}
	_ = json.Unmarshal(body, &in)
	var reasons []map[string]string
	var codes []string
	for _, it := range in.TransactItems {
		table := ""
		for _, a := range it {
			table = a.TableName
		}
		if len(tables) == 0 || slices.Contains(tables, table) {
			reasons = append(reasons, map[string]string{"Code": "ThrottlingError", "Message": throttleMessage})
			codes = append(codes, "ThrottlingError")
		} else {
			reasons = append(reasons, map[string]string{"Code": "None"})
			codes = append(codes, "None")
		}
	}
	return jsonResponse(req, http.StatusBadRequest, requestID, map[string]any{
		"__type":              "com.amazonaws.dynamodb.v20120810#TransactionCanceledException",
		"Message":             "Transaction cancelled, please refer cancellation reasons for specific reasons [" + strings.Join(codes, ", ") + "]",
		"CancellationReasons": reasons,
	})
}

// jsonResponse builds a JSON response of the DynamoDB protocol, with the
// request id id.
func jsonResponse(req *http.Request, status int, id string, v any) *http.Response {
	b, err := json.Marshal(v)
	if err != nil { // maps of strings always marshal
		b = []byte(`{"__type":"com.amazonaws.dynamodb.v20120810#InternalServerError"}`)
		status = http.StatusInternalServerError
	}
	body := string(b)
	h := http.Header{}
	h.Set("Content-Type", "application/x-amz-json-1.0")
	h.Set("X-Amzn-Requestid", id)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	return &http.Response{
		Status:        strconv.Itoa(status) + " " + http.StatusText(status),
		StatusCode:    status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        h,
		Body:          io.NopCloser(strings.NewReader(body)),
		ContentLength: int64(len(body)),
		Request:       req,
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// IsInjected reports whether err carries a fault this package injects
// (for tests that tell injected failures from real ones).
func IsInjected(err error) bool {
	return err != nil && (errors.Is(err, syscall.ECONNRESET) || errors.As(err, new(timeoutError)) ||
		strings.Contains(err.Error(), "(injected)"))
}
