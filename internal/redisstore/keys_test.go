package redisstore_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/redisstore"
)

// crc16 is CRC16-XMODEM (polynomial 0x1021, initial value 0), the checksum Redis Cluster hashes
// keys with.
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

// slot is the Redis Cluster hash slot of key: the CRC16 of its hash tag (what lies between the
// first '{' and the first '}' after it, when that is not empty), else of the whole key, mod 16384.
func slot(key string) int {
	if open := strings.IndexByte(key, '{'); open >= 0 {
		if n := strings.IndexByte(key[open+1:], '}'); n > 0 {
			key = key[open+1 : open+1+n]
		}
	}
	return int(crc16(key) % 16384)
}

func TestSlotMatchesRedisCluster(t *testing.T) {
	t.Parallel()
	// Reference values: the CRC16 check value of the Redis Cluster spec, and CLUSTER KEYSLOT.
	assert.Equal(t, uint16(0x31C3), crc16("123456789"))
	tests := []struct {
		give string
		want int
	}{
		{"foo", 12182},
		{"bar", 5061},
		{"popup:{q0}:queue", 3387},
		{"popup:{cfg}:version", 16374},
		{"foo{}{bar}", 8363},    // an empty tag: the whole key is hashed
		{"foo{{bar}}zap", 4015}, // the tag is "{bar"
		{"foo{bar}{zap}", 5061}, // the first tag only: "bar"
	}
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			assert.Equal(t, tt.want, slot(tt.give))
		})
	}
}

// TestScriptKeysShareOneSlot is the Redis Cluster contract of the key layout: every key one Lua
// script (or one MULTI-key command) touches hashes to the same slot, for any prefix, shard count,
// uid, worker and event id, so no script ever fails with CROSSSLOT.
func TestScriptKeysShareOneSlot(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// keys are the keys the script is given, in KEYS order.
		keys func(k redisstore.Keys, shard int, uid, worker, eventID string) []string
	}{
		{"claim", func(k redisstore.Keys, shard int, _, worker, _ string) []string {
			return []string{k.Queue(shard), k.Processing(shard, worker), k.Workers(shard), k.Lease(shard, worker)}
		}},
		{"ack", func(k redisstore.Keys, shard int, _, worker, _ string) []string {
			return []string{k.Processing(shard, worker), k.Workers(shard)}
		}},
		{"reclaim and release", func(k redisstore.Keys, shard int, _, worker, _ string) []string {
			return []string{k.Queue(shard), k.Processing(shard, worker), k.Workers(shard), k.Lease(shard, worker)}
		}},
		{"dead-letter", func(k redisstore.Keys, shard int, _, worker, _ string) []string {
			return []string{k.Processing(shard, worker), k.Dead(shard)}
		}},
		{"record (impression and action)", func(k redisstore.Keys, _ int, uid, _, eventID string) []string {
			return []string{k.User(uid), k.Queue(k.Shard(uid)), k.EventID(uid, eventID), k.RateLimit(uid)}
		}},
		{"publish config and its MGET", func(k redisstore.Keys, _ int, _, _, _ string) []string {
			return []string{k.ConfigBlob(), k.ConfigVersion(), k.ConfigPacing()}
		}},
	}
	prefixes := []string{"popup", "t0a1b2c3d4e5f", "svc:eu-1"}
	uids := []string{"u1", "racer", "demo-1", "a.b_c:d-e", strings.Repeat("z", 64)}
	workers := []string{"w1", "host-4242-0a1b2c3d", "odd{name}"}
	eventIDs := []string{"ev-1", "01JABCDEF", "with}brace{"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, prefix := range prefixes {
				for _, shards := range []int{1, 2, 8, 64} {
					k := redisstore.Keys{Prefix: prefix, Shards: shards}
					for shard := range shards {
						for i, uid := range uids {
							worker, eventID := workers[i%len(workers)], eventIDs[i%len(eventIDs)]
							keys := tt.keys(k, shard, uid, worker, eventID)
							want := slot(keys[0])
							for _, key := range keys[1:] {
								require.Equal(t, want, slot(key), "%s and %s", keys[0], key)
							}
						}
					}
				}
			}
		})
	}
}

func TestQueueShardsHaveSlotsOfTheirOwn(t *testing.T) {
	t.Parallel()
	// POPUP_QUEUE_SHARDS promises each shard its own slot, so that shards can spread over a
	// cluster's masters; checked far past any sensible shard count.
	k := redisstore.Keys{Prefix: "popup", Shards: 1024}
	owner := map[int]int{}
	for shard := range k.Shards {
		s := slot(k.Queue(shard))
		prev, taken := owner[s]

		require.False(t, taken, "shards %d and %d share slot %d", prev, shard, s)
		owner[s] = shard
	}
}

func TestEventIDMarkerIsPerUID(t *testing.T) {
	t.Parallel()
	k := redisstore.Keys{Prefix: "popup", Shards: 1}
	tests := []struct {
		name         string
		uidA, idA    string
		uidB, idB    string
		wantSameKeys bool
	}{
		{"one uid, one event id", "alice", "evt-1", "alice", "evt-1", true},
		{"two uids, one event id", "alice", "shared-evt-1", "bob", "shared-evt-1", false},
		{"a ':' moved between uid and event id", "a:b", "c", "a", "b:c", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.wantSameKeys, k.EventID(tt.uidA, tt.idA) == k.EventID(tt.uidB, tt.idB))
		})
	}
}
