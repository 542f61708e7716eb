package main

import (
	"math"
	"strings"
	"testing"
)

// TestEstimate: the log's lines are counted per service and operation and
// priced per the units table; unknown operations (control plane) are free.
func TestEstimate(t *testing.T) {
	log := "DynamoDB PutItem\nDynamoDB PutItem\nDynamoDB Query\nDynamoDB CreateTable\nDynamoDB Streams GetRecords\n\nDynamoDB TransactWriteItems\n"
	counts, err := countLog(strings.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	if counts["DynamoDB PutItem"] != 2 || counts["DynamoDB Streams GetRecords"] != 1 || len(counts) != 5 {
		t.Fatalf("counts %v", counts)
	}
	lines, total := estimate(counts)
	wantWRU := 2*units["PutItem"].write + units["TransactWriteItems"].write
	wantRRU := units["Query"].read
	want := wantWRU/1e6*pricePerMillionWRU + wantRRU/1e6*pricePerMillionRRU + 1/1e5*pricePer100kStreamRq
	if math.Abs(total-want) > 1e-12 {
		t.Fatalf("total %g, want %g", total, want)
	}
	if lines[0].op != "DynamoDB PutItem" {
		t.Fatalf("lines not by count: %v", lines)
	}
}

// TestLeftovers: cleanup deletes the run's tables alone.
func TestLeftovers(t *testing.T) {
	got := leftovers([]string{"ddbx-aws1234-TestA-x", "ddbx-aws12345-TestB", "ddbx-TestC", "prod-orders", "ddbx-aws1234-TestD"}, "aws1234")
	if strings.Join(got, ",") != "ddbx-aws1234-TestA-x,ddbx-aws1234-TestD" {
		t.Fatalf("leftovers %v", got)
	}
}
