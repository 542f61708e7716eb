// Command awstest runs the whole test suite against real DynamoDB (make
// test-aws). It is not part of CI: it costs money, a few cents a run.
//
//  1. It prints a cost estimate first: it runs the suite against a private
//     dynoxide with a request log (or reads a log from -requests), counts
//     the requests by operation, and prices them at on-demand rates.
//  2. It asks for confirmation on a terminal, or takes DDBINDEX_AWS_CONFIRM=yes.
//  3. It runs `go test -count=1 ./...` with DDBINDEX_ENDPOINT=aws (the
//     standard AWS configuration chain: environment, profile, role) and a
//     run id that every test table's name carries.
//  4. It deletes every table of the run that is left (a test killed before
//     its cleanup), also after a failed run.
package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// On-demand prices in us-east-1 (https://aws.amazon.com/dynamodb/pricing/on-demand/,
// as of 2026): per million write and read request units, and per 100,000
// DynamoDB Streams read requests.
const (
	pricePerMillionWRU   = 0.625
	pricePerMillionRRU   = 0.125
	pricePer100kStreamRq = 0.02
)

// units is the request units the estimate charges each operation: an upper
// bound for the suite's small items (a read of up to 16 KB, a write of up to
// 2 KB, a transaction of up to 5 such writes, at twice the price).
var units = map[string]struct{ read, write float64 }{
	"GetItem": {4, 0}, "BatchGetItem": {40, 0}, "Query": {4, 0}, "Scan": {8, 0},
	"PutItem": {0, 2}, "UpdateItem": {0, 2}, "DeleteItem": {0, 2},
	"TransactWriteItems": {0, 20}, "TransactGetItems": {8, 0}, "BatchWriteItem": {0, 50},
}

// line is one priced operation of the estimate.
type line struct {
	op          string
	n           int
	rru, wru    float64
	streamReads int
}

// estimate prices a request log's counts ("SERVICE OPERATION" per line).
func estimate(counts map[string]int) ([]line, float64) {
	var out []line
	total := 0.0
	for key, n := range counts {
		i := strings.LastIndexByte(key, ' ') // service IDs have spaces ("DynamoDB Streams")
		svc, op := key[:max(i, 0)], key[i+1:]
		l := line{op: key, n: n}
		if svc == "DynamoDB Streams" {
			if op == "GetRecords" {
				l.streamReads = n
			}
		} else if u, ok := units[op]; ok {
			l.rru, l.wru = u.read*float64(n), u.write*float64(n)
		}
		total += l.rru/1e6*pricePerMillionRRU + l.wru/1e6*pricePerMillionWRU + float64(l.streamReads)/1e5*pricePer100kStreamRq
		out = append(out, l)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].n > out[j].n })
	return out, total
}

// countLog counts a request log's lines.
func countLog(r io.Reader) (map[string]int, error) {
	counts := map[string]int{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			counts[l]++
		}
	}
	return counts, sc.Err()
}

// leftovers returns the tables of a run: those whose names carry its id.
func leftovers(names []string, runID string) []string {
	var out []string
	for _, n := range names {
		if strings.HasPrefix(n, "ddbx-"+runID+"-") {
			out = append(out, n)
		}
	}
	return out
}

func main() {
	requests := flag.String("requests", "", "a request log of an earlier local run (default: run the suite against dynoxide now)")
	flag.Parse()
	if err := run(*requests); err != nil {
		fmt.Fprintln(os.Stderr, "awstest:", err)
		os.Exit(1)
	}
}

func run(requests string) error {
	ctx := context.Background()
	if requests == "" {
		f, err := os.CreateTemp("", "ddbindex-requests-*.log")
		if err != nil {
			return err
		}
		f.Close()
		defer os.Remove(f.Name())
		requests = f.Name()
		fmt.Println("== estimating: the suite against a local dynoxide, counting its requests")
		ws := exec.Command("go", "run", "./internal/withserver", "-server", "dynoxide", "--", "go", "test", "-count=1", "./...")
		ws.Env = append(os.Environ(), "DDBINDEX_REQUEST_LOG="+requests)
		ws.Stdout, ws.Stderr = io.Discard, os.Stderr
		if err := ws.Run(); err != nil {
			return fmt.Errorf("the local run for the estimate failed: %w", err)
		}
	}
	f, err := os.Open(requests)
	if err != nil {
		return err
	}
	counts, err := countLog(f)
	f.Close()
	if err != nil {
		return err
	}
	lines, total := estimate(counts)
	fmt.Println("== estimated cost of one run on AWS (on-demand, us-east-1; upper bounds per request):")
	for _, l := range lines {
		fmt.Printf("   %-40s %8d requests  %9.0f RRU  %9.0f WRU\n", l.op, l.n, l.rru, l.wru)
	}
	fmt.Printf("   total: about $%.4f (tables are on-demand and deleted after each test: no hourly cost)\n", total)

	if os.Getenv("DDBINDEX_AWS_CONFIRM") != "yes" {
		fmt.Print("run the suite against real DynamoDB now? type yes: ")
		answer, _ := bufio.NewReader(os.Stdin).ReadString('\n')
		if strings.TrimSpace(answer) != "yes" {
			return fmt.Errorf("not confirmed (set DDBINDEX_AWS_CONFIRM=yes to skip the question)")
		}
	}
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return fmt.Errorf("AWS configuration: %w", err)
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	runID := "aws" + hex.EncodeToString(b[:])
	fmt.Printf("== running the suite against DynamoDB in %s (tables ddbx-%s-*)\n", cmp(cfg.Region, "us-east-1"), runID)
	test := exec.Command("go", "test", "-count=1", "-timeout", "60m", "./...")
	test.Env = append(os.Environ(), "DDBINDEX_ENDPOINT=aws", "DDBINDEX_RUN_ID="+runID)
	test.Stdout, test.Stderr = os.Stdout, os.Stderr
	testErr := test.Run()
	if err := cleanup(ctx, cfg, runID); err != nil {
		fmt.Fprintln(os.Stderr, "awstest: cleanup:", err)
	}
	return testErr
}

func cmp(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// cleanup deletes the tables a run left.
func cleanup(ctx context.Context, cfg aws.Config, runID string) error {
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	c := dynamodb.NewFromConfig(cfg)
	var names []string
	p := dynamodb.NewListTablesPaginator(c, &dynamodb.ListTablesInput{})
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			return err
		}
		names = append(names, out.TableNames...)
	}
	left := leftovers(names, runID)
	for _, n := range left {
		if _, err := c.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(n)}); err != nil {
			return fmt.Errorf("deleting %s: %w", n, err)
		}
	}
	fmt.Printf("== cleanup: %d tables of the run were left and are deleted\n", len(left))
	return nil
}
