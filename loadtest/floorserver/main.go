// Command floorserver is the impression path's floor: loadtest/refserver's bare answer, plus what
// every shown popup needs of Redis and nothing else. Per request it reads the user's state (one
// GET) and runs one EVALSHA that compares it, writes the new state and queues an event: the record
// script's shape (internal/redisstore), through the service's own Redis client and autopipeliner,
// after reading the uid with the service's own query parser (internal/reqparse). No decision, no
// Gin, no metrics, no budget, no event encoding.
//
// Its CPU per request over refserver's is what the two round trips cost any server built on this
// client; popup-api sits above it by its own work and by the worker's draining beside it, which
// the floor's events do not get (scripts/bench-floor.sh, docs/PERFORMANCE.md "The record path's
// CPU"). -trips 1 runs the EVALSHA alone: the floor of an
// impression whose state is already known (a remembered state).
package main

import (
	"context"
	"flag"
	"log"
	"net/http"
	"net/http/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"popupsvc/internal/redisstore"
	"popupsvc/internal/reqparse"
	"popupsvc/loadtest/bareanswer"
)

// recordScript is the record script's work for a returning user without an event id: compare,
// write the state, queue the event (a user without a state yet takes the new one, so that -trips 1
// writes too). The queue keeps its last 100,000 events, as nothing drains it.
var recordScript = redis.NewScript(`
local cur = redis.call('GET', KEYS[1])
if cur == false then cur = '' end
if cur ~= ARGV[1] and cur ~= '' then return 1 end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
if redis.call('RPUSH', KEYS[2], ARGV[4]) > 100000 then redis.call('LTRIM', KEYS[2], -100000, -1) end
return 0
`)

func main() {
	addr := flag.String("addr", "127.0.0.1:18091", "listen address")
	size := flag.Int("size", 320, "body size in bytes")
	redisAddr := flag.String("redis", "127.0.0.1:6379", "Redis address")
	trips := flag.Int("trips", 2, "Redis round trips a request: 2 (GET, then EVALSHA) or 1 (EVALSHA)")
	client := flag.String("client", "goredis", "goredis: the service's client and autopipeliner; raw: rawClient")
	flushDelay := flag.Duration("flush-delay", 0, "goredis: the autopipeliner's MaxFlushDelay, a wait for more commands after each flush (0: none, the service's)")
	fullDuplex := flag.Bool("full-duplex", false, "goredis: the autopipeliner's FullDuplex mode (a writer and a reader on one connection)")
	flag.Parse()
	if *trips != 1 && *trips != 2 {
		log.Fatalf("-trips must be 1 or 2, not %d", *trips)
	}
	answer := bareanswer.New(*size)

	rdb, err := redisstore.NewClient(redisstore.ClientOptions{Addrs: []string{*redisAddr}, Timeout: time.Second, PoolSize: 64})
	if err != nil {
		log.Fatal(err)
	}
	// The service's autopipeliner of a single node (redisstore.Pipeline) is the client's
	// AsyncAutoPipeline with go-redis's default options; the flags change those options only.
	opts := redis.DefaultAutoPipelineOptions()
	opts.MaxFlushDelay, opts.FullDuplex = *flushDelay, *fullDuplex
	pipe, err := rdb.AsyncAutoPipelineWithOptions(opts)
	if err != nil {
		log.Fatal(err)
	}
	if err := recordScript.Load(context.Background(), rdb).Err(); err != nil {
		log.Fatal(err)
	}
	// A state and an event of the sizes a returning user's record writes.
	f := floor{hash: recordScript.Hash(), state: strings.Repeat("s", 160), event: strings.Repeat("e", 220),
		ttl: strconv.FormatInt((24 * time.Hour).Milliseconds(), 10), pipe: pipe}
	f.boxed = [4]any{f.hash, f.state, f.ttl, f.event}
	switch *client {
	case "goredis":
	case "raw":
		if f.raw, err = dialRaw(*redisAddr); err != nil {
			log.Fatal(err)
		}
	default:
		log.Fatalf("-client must be goredis or raw, not %q", *client)
	}

	log.Printf("floorserver on %s, body %d bytes, %d Redis round trips a request, client %s, flush delay %s, full duplex %t",
		*addr, answer.Len(), *trips, *client, *flushDelay, *fullDuplex)
	err = http.ListenAndServe(*addr, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/debug/pprof/profile" { // scripts/bench-floor.sh's BENCH_FLOOR_PROFILE
			pprof.Profile(w, r)
			return
		}
		q, perr := reqparse.ScanQuery(r.URL.RawQuery) // the uid as popup-api reads it
		q.Release()                                   // the uid is the query's, not the pooled buffer's
		if perr != nil {
			http.Error(w, perr.Error(), http.StatusBadRequest)
			return
		}
		key := "floor:{" + q.UID + "}:s"
		prev, err := f.state, error(nil)
		if *trips == 2 {
			prev, err = f.get(r.Context(), key)
		}
		if err == nil {
			err = f.record(r.Context(), key, prev)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		answer.Write(w)
	}))
	log.Fatal(err)
}

// floor runs a request's commands through the service's autopipeliner, or raw when set.
type floor struct {
	hash, state, event, ttl string
	// boxed are hash, state, ttl and event as EVALSHA's arguments, boxed once as the service
	// boxes its constant ones (a string in an interface is an allocation per use).
	boxed [4]any
	pipe  *redis.AutoPipeliner
	raw   *rawClient
}

// get is the user's state: "" when none.
func (f *floor) get(ctx context.Context, key string) (string, error) {
	if f.raw != nil {
		c := f.raw.do("get", key)
		return c.reply, c.err
	}
	cmd := redis.NewStringCmd(ctx, "get", key)
	if err := f.pipe.Submit(ctx, cmd).WaitContext(ctx); err != nil && err != redis.Nil {
		return "", err
	}
	return cmd.Val(), nil
}

// record runs the record script over prev.
func (f *floor) record(ctx context.Context, key, prev string) error {
	if f.raw != nil {
		return f.raw.do("evalsha", f.hash, "2", key, "floor:q", prev, f.state, f.ttl, f.event).err
	}
	return f.pipe.Submit(ctx, redis.NewCmd(ctx, "evalsha", f.boxed[0], 2, key, "floor:q", prev, f.boxed[1], f.boxed[2], f.boxed[3])).WaitContext(ctx)
}
