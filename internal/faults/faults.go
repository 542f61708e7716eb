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
//     retryer retries them.
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
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
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
)

// AllKinds lists every fault kind but None.
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
	t.mu.Unlock()

	// The request goes on with a body of its own: the transport may read it
	// after the SDK has closed the original.
	out := req.Clone(req.Context())
	out.Body = io.NopCloser(bytes.NewReader(body))
	out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	out.ContentLength = int64(len(body))

	switch kind {
	case Throttle:
		code := "ProvisionedThroughputExceededException"
		if strings.HasPrefix(service, "DynamoDBStreams") {
			code = "LimitExceededException"
		}
		return ErrorResponse(req, http.StatusBadRequest, code, "Rate of requests exceeds the allowed throughput (injected)", requestID), nil
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
	body := fmt.Sprintf(`{"__type":"com.amazonaws.dynamodb.v20120810#%s","message":%q}`, code, msg)
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
