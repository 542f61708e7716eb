package stream

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
)

// This file holds shard leases: how consumers of one stream divide its
// shards among themselves (the Leases store, and the Consumer's side).

// Lease is one entry of a [Leases] store: a shard's lease, or (ShardID "")
// a consumer's heartbeat.
type Lease struct {
	// ShardID is the leased shard; "" for a heartbeat.
	ShardID string
	// Owner is the consumer holding the lease ("" when nobody does), or
	// whose heartbeat it is.
	Owner string
	// Until is when the lease or heartbeat runs out.
	Until time.Time
	// Ended reports that the shard was read to its end: no consumer needs
	// to read it again.
	Ended bool
}

// Leases divides a stream's shards among the consumers that share the store
// (ConsumerOptions.Leases): a consumer reads a shard only while it holds
// the shard's lease, which runs out unless renewed, so that a consumer that
// stops or dies leaves its shards to the others after
// ConsumerOptions.LeaseDuration. Each consumer also writes a heartbeat;
// with the heartbeats a consumer knows how many consumers are alive, takes
// at most its share of the shards (the shards not yet ended, divided by
// the consumers, rounded up), and releases what it holds beyond its share
// (after checkpointing) for a new consumer to take. [DynamoDBCheckpoints]
// implements it.
//
// Leases save work; they are not needed for correctness: two consumers
// that read the same shard at once (a lease taken over from a consumer
// that was only slow, clocks that disagree) write the same index entries,
// and every write is conditioned on its change's version.
type Leases interface {
	// ListLeases returns every lease and heartbeat of the store.
	ListLeases(ctx context.Context) ([]Lease, error)
	// AcquireLease gives owner the shard's lease until until, when nobody
	// holds it, its holder's lease ran out by now, or owner holds it
	// already (a renewal), and reports whether owner holds it. shardID ""
	// writes owner's heartbeat, until until.
	AcquireLease(ctx context.Context, shardID, owner string, now, until time.Time) (bool, error)
	// ReleaseLease ends owner's lease of the shard (nothing when owner does
	// not hold it); ended marks the shard as read to its end. shardID ""
	// deletes owner's heartbeat.
	ReleaseLease(ctx context.Context, shardID, owner string, ended bool) error
	// DeleteLease deletes an entry no longer needed, if it is still as l
	// says: an ended shard's (the stream no longer lists the shard), or a
	// heartbeat that ran out.
	DeleteLease(ctx context.Context, l Lease) error
}

const defaultLeaseDuration = 30 * time.Second

// defaultOwner names a consumer: host, process and a random part, so that
// two consumers of one process differ too.
func defaultOwner() string {
	host, _ := os.Hostname()
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}

// leaseState is what a consumer knows of its leases between passes.
type leaseState struct {
	held      map[string]time.Time // shard → until when this consumer holds its lease
	heartbeat time.Time            // until when its heartbeat runs
	target    int                  // the most shards it takes: its share
	others    map[string]bool      // shards another consumer holds a live lease of
	ended     map[string]bool      // shards the store lists as read to their end
}

// leaseDue reports whether a lease or heartbeat running until until is to
// be renewed: it has less than half its duration left.
func (c *Consumer[T]) leaseDue(until, now time.Time) bool {
	return !now.Before(until.Add(-c.opts.LeaseDuration / 2))
}

// leasePass starts a pass with leases: it writes the heartbeat when due,
// reads the store, notes the shards it lists as ended, works out
// this consumer's share, releases the leases it holds beyond it, and
// deletes the entries no longer needed.
func (c *Consumer[T]) leasePass(ctx context.Context, shards []streamtypes.Shard) error {
	ls, owner := c.leases, c.opts.LeaseOwner
	now := c.opts.Now()
	if c.leaseDue(ls.heartbeat, now) {
		until := now.Add(c.opts.LeaseDuration)
		if _, err := c.lc.AcquireLease(ctx, "", owner, now, until); err != nil {
			return fmt.Errorf("ddbindex: write heartbeat: %w", err)
		}
		ls.heartbeat = until
	}
	all, err := c.lc.ListLeases(ctx)
	if err != nil {
		return fmt.Errorf("ddbindex: read leases: %w", err)
	}
	listed := make(map[string]bool, len(shards))
	for _, sh := range shards {
		listed[aws.ToString(sh.ShardId)] = true
	}
	for id := range ls.held {
		if !listed[id] {
			delete(ls.held, id) // trimmed from the stream
		}
	}
	alive := map[string]bool{owner: true}
	ls.others, ls.ended = map[string]bool{}, map[string]bool{}
	var stale []Lease
	for _, l := range all {
		switch {
		case l.ShardID == "" && l.Until.After(now):
			alive[l.Owner] = true
		case l.ShardID == "" && l.Owner != owner && !l.Until.After(now.Add(-c.opts.LeaseDuration)):
			stale = append(stale, l) // ran out a lease duration ago
		case l.Ended && !listed[l.ShardID]:
			stale = append(stale, l) // trimmed from the stream
		case l.Ended:
			ls.ended[l.ShardID] = true
		case l.Owner != "" && l.Owner != owner && l.Until.After(now):
			ls.others[l.ShardID] = true
		}
	}
	open := 0
	for _, sh := range shards {
		id := aws.ToString(sh.ShardId)
		if s := c.state[id]; !ls.ended[id] && (s == nil || !s.drained) {
			open++
		}
	}
	ls.target = max(1, (open+len(alive)-1)/len(alive))
	// Release the excess, last shards first: every record applied so far
	// is checkpointed (each page is, before the next is read).
	for i := len(shards) - 1; i >= 0 && len(ls.held) > ls.target; i-- {
		id := aws.ToString(shards[i].ShardId)
		if _, ok := ls.held[id]; ok {
			if err := c.dropLease(ctx, id, false); err != nil {
				return err
			}
		}
	}
	for _, l := range stale {
		if err := c.lc.DeleteLease(ctx, l); err != nil {
			return fmt.Errorf("ddbindex: delete lease entry: %w", err)
		}
	}
	return nil
}

// takeLease reports whether this consumer holds the shard's lease, taking
// or renewing it when due and within its share. A shard it does not hold
// is reopened after its checkpoint when it gets the lease.
func (c *Consumer[T]) takeLease(ctx context.Context, id string, s *shardState) (bool, error) {
	ls := c.leases
	now := c.opts.Now()
	if until, ok := ls.held[id]; ok {
		if !c.leaseDue(until, now) {
			return true, nil
		}
	} else if len(ls.held) >= ls.target || ls.others[id] {
		s.iter = nil
		return false, nil
	}
	until := now.Add(c.opts.LeaseDuration)
	ok, err := c.lc.AcquireLease(ctx, id, c.opts.LeaseOwner, now, until)
	if err != nil {
		return false, fmt.Errorf("ddbindex: take lease of shard %s: %w", id, err)
	}
	if !ok {
		// Another consumer took it (this one's lease ran out) or holds it.
		delete(ls.held, id)
		ls.others[id] = true
		s.iter = nil
		return false, nil
	}
	if _, had := ls.held[id]; !had {
		s.iter = nil // another consumer may have read on: start after the checkpoint
	}
	ls.held[id] = until
	return true, nil
}

// dropLease releases the shard's lease (ended: the shard is read to its
// end) and forgets where this consumer was reading it.
func (c *Consumer[T]) dropLease(ctx context.Context, id string, ended bool) error {
	if err := c.lc.ReleaseLease(ctx, id, c.opts.LeaseOwner, ended); err != nil {
		return fmt.Errorf("ddbindex: release lease of shard %s: %w", id, err)
	}
	delete(c.leases.held, id)
	if s := c.state[id]; s != nil {
		s.iter = nil
	}
	return nil
}

// ReleaseLeases releases every shard lease the consumer holds and deletes
// its heartbeat, so that the other consumers take its shards at once rather
// than after ConsumerOptions.LeaseDuration; Run does it when it returns.
// Every record it applied is checkpointed by then. Without
// ConsumerOptions.Leases it does nothing.
func (c *Consumer[T]) ReleaseLeases(ctx context.Context) error {
	if c == nil || c.lc.c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	for id := range c.leases.held {
		errs = append(errs, c.dropLease(ctx, id, false))
	}
	if !c.leases.heartbeat.IsZero() {
		if err := c.lc.ReleaseLease(ctx, "", c.opts.LeaseOwner, false); err != nil {
			errs = append(errs, fmt.Errorf("ddbindex: delete heartbeat: %w", err))
		} else {
			c.leases.heartbeat = time.Time{}
		}
	}
	return errors.Join(errs...)
}
