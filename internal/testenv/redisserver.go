package testenv

import (
	"context"
	"fmt"
	"math/rand/v2"
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

// RedisProcess is a redis-server of a test's own, which the test may freeze (SIGSTOP), thaw
// (SIGCONT) or kill (SIGKILL) to play a fault.
type RedisProcess struct {
	Addr string
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited
}

// Signal sends sig to the server.
func (p *RedisProcess) Signal(t testing.TB, sig os.Signal) {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(sig), "signal %v to redis-server %s", sig, p.Addr)
}

// RedisServer starts a redis-server of the test's own (a replica, say: pass "--replicaof", host,
// port) on a free loopback port with its data in a temporary directory, waits until it answers
// PING, and kills it (by PID) when the test ends. It returns its address. It runs where the
// storage tests run (POPUP_TEST_REDIS_ADDR set, so scripts/test.sh has installed redis-server).
func RedisServer(t testing.TB, args ...string) string {
	t.Helper()
	return StartRedisServer(t, args...).Addr
}

// StartRedisServer is RedisServer returning the process, for a test that signals it.
func StartRedisServer(t testing.TB, args ...string) *RedisProcess {
	t.Helper()
	RedisAddr(t) // skips (or, under make test, fails) like every storage test without a Redis
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		Missing(t, "redis-server is not on PATH (scripts/services.sh install)")
	}
	port := freePort(t)
	dir := t.TempDir()
	all := append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir, "--save", "",
		"--appendonly", "no", "--daemonize", "no", "--logfile", filepath.Join(dir, "redis.log")}, args...)
	p := &RedisProcess{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), cmd: exec.Command(bin, all...), done: make(chan struct{})}
	require.NoError(t, p.cmd.Start())
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		// A frozen server dies of SIGKILL all the same.
		_ = p.cmd.Process.Kill()
		<-p.done
	})
	c := redis.NewClient(&redis.Options{Addr: p.Addr, MaxRetries: -1})
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return p
		}
		select {
		case <-p.done:
			log, _ := os.ReadFile(filepath.Join(dir, "redis.log"))
			require.FailNow(t, "redis-server exited at start", "%s", log)
		default:
		}
		require.False(t, time.Now().After(deadline), fmt.Sprintf("redis-server on %s did not answer PING in 10 s: %v", p.Addr, err))
		time.Sleep(20 * time.Millisecond)
	}
}

// StartRedisCluster starts masters cluster-enabled redis-servers of the test's own, makes them a
// cluster of that many masters without replicas (redis-cli --cluster create) and waits until
// every node sees it ok. A node's failure is never detected within a test (the node timeout is a
// minute) and the others keep serving their slots (full coverage is not required), so a frozen or
// killed master stays the owner of its slots: the client-side view of an outage before any
// promotion. args are more redis-server options of every node, after (and so over) these.
func StartRedisCluster(t testing.TB, masters int, args ...string) []*RedisProcess {
	t.Helper()
	nodes := make([]*RedisProcess, masters)
	addrs := make([]string, masters)
	for i := range nodes {
		nodes[i] = StartRedisServer(t, append([]string{"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
			"--cluster-port", strconv.Itoa(freePort(t)), "--cluster-node-timeout", "60000", "--cluster-require-full-coverage", "no"}, args...)...)
		addrs[i] = nodes[i].Addr
	}
	create := append(append([]string{"--cluster", "create"}, addrs...), "--cluster-replicas", "0", "--cluster-yes")
	out, err := exec.Command("redis-cli", create...).CombinedOutput()
	require.NoError(t, err, "redis-cli --cluster create: %s", out)
	deadline := time.Now().Add(20 * time.Second)
	for _, a := range addrs {
		c := redis.NewClient(&redis.Options{Addr: a})
		for {
			info, err := c.ClusterInfo(context.Background()).Result()
			if err == nil && strings.Contains(info, "cluster_state:ok") && strings.Contains(info, fmt.Sprintf("cluster_known_nodes:%d", masters)) {
				break
			}
			if time.Now().After(deadline) {
				c.Close()
				require.FailNow(t, "redis cluster not ok in 20 s", "%s: %v %s", a, err, info)
			}
			time.Sleep(20 * time.Millisecond)
		}
		c.Close()
	}
	return nodes
}

// freePort is a loopback TCP port free when asked, for a server the test starts a moment later.
// It lies below the kernel's ephemeral range: a port the kernel hands out (":0") can be given
// again to any outgoing connection in that moment, and a redis-server of the timed stage once
// failed to bind its cluster port so ("Address already in use"). Only another listener can take
// a port outside the range, and the test's own listen here sees those.
func freePort(t testing.TB) int {
	t.Helper()
	low := ephemeralLow()
	for range 200 {
		if low <= minPickedPort {
			break
		}
		port := minPickedPort + rand.IntN(low-minPickedPort)
		if ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port))); err == nil {
			ln.Close()
			return port
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// minPickedPort is the lowest port freePort picks: above the usual fixed service ports.
const minPickedPort = 10000

// ephemeralLow is the first port of the kernel's ephemeral range (32768 when unreadable).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 32768
	}
	n, err := strconv.Atoi(f[0])
	if err != nil {
		return 32768
	}
	return n
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

// StartSentinel starts a redis-sentinel of the test's own watching the primary at primary under
// the name master (quorum 2, down after 1 s), waits until it answers PING and returns its
// address; it is killed (by PID) when the test ends.
func StartSentinel(t testing.TB, master, primary string) string {
	t.Helper()
	RedisAddr(t)
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		Missing(t, "redis-server is not on PATH (scripts/services.sh install)")
	}
	host, port, err := net.SplitHostPort(primary)
	require.NoError(t, err)
	dir := t.TempDir()
	conf := filepath.Join(dir, "sentinel.conf")
	sport := freePort(t)
	body := fmt.Sprintf("port %d\nbind 127.0.0.1\ndir %s\nlogfile %s\nsentinel monitor %s %s %s 2\n"+
		"sentinel down-after-milliseconds %[4]s 1000\nsentinel failover-timeout %[4]s 10000\n",
		sport, dir, filepath.Join(dir, "sentinel.log"), master, host, port)
	require.NoError(t, os.WriteFile(conf, []byte(body), 0o644))
	p := &RedisProcess{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(sport)), cmd: exec.Command(bin, conf, "--sentinel"), done: make(chan struct{})}
	require.NoError(t, p.cmd.Start())
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
	})
	c := redis.NewSentinelClient(&redis.Options{Addr: p.Addr, MaxRetries: -1})
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for c.Ping(context.Background()).Err() != nil {
		require.False(t, time.Now().After(deadline), "sentinel %s did not answer PING in 10 s", p.Addr)
		time.Sleep(20 * time.Millisecond)
	}
	return p.Addr
}

// RedisCPU is the Redis server's CPU so far (INFO cpu: used_cpu_sys + used_cpu_user): a
// benchmark against a server of its own (RedisServer) reports the difference per operation.
func RedisCPU(tb testing.TB, rdb redis.UniversalClient) time.Duration {
	tb.Helper()
	info, err := rdb.Info(context.Background(), "cpu").Result()
	require.NoError(tb, err)
	var total time.Duration
	for _, line := range strings.Split(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || (k != "used_cpu_sys" && k != "used_cpu_user") {
			continue
		}
		sec, err := strconv.ParseFloat(v, 64)
		require.NoError(tb, err)
		total += time.Duration(sec * float64(time.Second))
	}
	return total
}
