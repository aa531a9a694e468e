package testenv

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// RedisServer starts a redis-server of the test's own (a replica, say: pass "--replicaof", host,
// port) on a free loopback port with its data in a temporary directory, waits until it answers
// PING, and kills it (by PID) when the test ends. It returns its address. It runs where the
// storage tests run (POPUP_TEST_REDIS_ADDR set, so scripts/test.sh has installed redis-server).
func RedisServer(t testing.TB, args ...string) string {
	t.Helper()
	RedisAddr(t) // skips (or, under make test, fails) like every storage test without a Redis
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		Missing(t, "redis-server is not on PATH (scripts/services.sh install)")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	require.NoError(t, ln.Close())
	dir := t.TempDir()
	all := append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir, "--save", "",
		"--appendonly", "no", "--daemonize", "no", "--logfile", filepath.Join(dir, "redis.log")}, args...)
	cmd := exec.Command(bin, all...)
	require.NoError(t, cmd.Start())
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
	})
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return addr
		}
		select {
		case <-done:
			log, _ := os.ReadFile(filepath.Join(dir, "redis.log"))
			require.FailNow(t, "redis-server exited at start", "%s", log)
		default:
		}
		require.False(t, time.Now().After(deadline), fmt.Sprintf("redis-server on %s did not answer PING in 10 s: %v", addr, err))
		time.Sleep(20 * time.Millisecond)
	}
}

// WaitReplicaLinked waits until the Redis replica at addr reports its link to its primary up and
// its first sync done.
func WaitReplicaLinked(t testing.TB, addr string) {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	deadline := time.Now().Add(15 * time.Second)
	for {
		info, err := c.Info(context.Background(), "replication").Result()
		if err == nil && strings.Contains(info, "master_link_status:up") && strings.Contains(info, "master_sync_in_progress:0") {
			return
		}
		require.False(t, time.Now().After(deadline), "replica %s not linked in 15 s: %v\n%s", addr, err, info)
		time.Sleep(20 * time.Millisecond)
	}
}
