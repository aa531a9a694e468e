package redisstore

import (
	"context"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/testenv"
)

func TestAutoPipelineAnswersEveryCallerWithItsOwnReply(t *testing.T) {
	t.Parallel()
	rdb := testenv.Redis(t)
	prefix := testenv.RedisPrefix(t)
	pipe, err := NewPipeline(rdb)
	require.NoError(t, err)
	defer pipe.Close()
	s := &UserStore{rdb: rdb, pipe: pipe}
	ctx := context.Background()
	const n = 500
	for i := 0; i < n; i++ {
		require.NoError(t, rdb.Set(ctx, prefix+":k"+strconv.Itoa(i), "v"+strconv.Itoa(i), time.Minute).Err())
	}
	var wg sync.WaitGroup
	errs := make(chan string, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			key := prefix + ":k" + strconv.Itoa(i)
			cmd := redis.NewStringCmd(ctx, "get", key)
			if err := s.do(ctx, key, cmd); err != nil {
				errs <- err.Error()
				return
			}
			if cmd.Val() != "v"+strconv.Itoa(i) {
				errs <- "call " + strconv.Itoa(i) + " got " + cmd.Val()
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	var got []string
	for e := range errs {
		got = append(got, e)
	}
	assert.Empty(t, got)

	missing := redis.NewStringCmd(ctx, "get", prefix+":absent")
	assert.ErrorIs(t, s.do(ctx, prefix+":absent", missing), redis.Nil, "per-command errors reach their caller")
}

func TestAutoPipelineGivesUpWithTheCallersContext(t *testing.T) {
	t.Parallel()
	// A "Redis" that accepts connections and never answers: only the caller's context ends the wait.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	var conns []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	defer func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	}()
	rdb := redis.NewClient(&redis.Options{Addr: ln.Addr().String(), ReadTimeout: 5 * time.Second, WriteTimeout: 5 * time.Second,
		Protocol: 2, DisableIdentity: true, MaxRetries: -1})
	defer rdb.Close()
	pipe, err := NewPipeline(rdb)
	require.NoError(t, err)
	s := &UserStore{rdb: rdb, pipe: pipe}
	for i := 0; i < 5; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		start := time.Now()
		err := s.do(ctx, "x", redis.NewStringCmd(ctx, "get", "x"))
		cancel()
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Less(t, time.Since(start), time.Second, "the wait ends with the caller's context, not the read timeout")
	}
	// Refuse new connections and drop the held ones so that the queued batches fail at once and
	// Close does not wait out their read timeouts.
	ln.Close()
	mu.Lock()
	for _, c := range conns {
		c.Close()
	}
	mu.Unlock()
	pipe.Close()
}
