package redisstore

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/testenv"
)

func TestBatcherAnswersEveryCallerWithItsOwnReply(t *testing.T) {
	rdb := testenv.Redis(t)
	prefix := testenv.RedisPrefix(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b := NewBatcher(rdb, 2, 16, time.Second)
	go b.Run(ctx) //nolint:errcheck
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
			cmd := redis.NewStringCmd(ctx, "get", prefix+":k"+strconv.Itoa(i))
			if err := b.Do(ctx, cmd); err != nil {
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
	assert.ErrorIs(t, b.Do(ctx, missing), redis.Nil, "per-command errors reach their caller")
}

func TestBatcherGivesUpWithTheCallersContext(t *testing.T) {
	rdb := testenv.Redis(t)
	b := NewBatcher(rdb, 1, 4, time.Second) // not running: nothing is ever sent
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	for i := 0; i < 10; i++ { // more than the channel holds
		err := b.Do(ctx, redis.NewStringCmd(ctx, "get", "x"))
		assert.ErrorIs(t, err, context.DeadlineExceeded)
	}
}
