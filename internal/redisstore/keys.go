// Package redisstore holds the go-redis adapters: key layout, the config cache, user state with
// its atomic check-and-record scripts, and the event queue.
package redisstore

import (
	"strconv"
)

// Keys is the Redis key layout. Everything that one Lua script touches shares a hash tag, so the
// layout is Redis-Cluster-safe:
//
//	P:{qN}:queue            event list of shard N (producers RPUSH, workers claim from the head)
//	P:{qN}:proc:W           processing list of worker W on shard N
//	P:{qN}:dead             dead-letter list of shard N (entries carry their reason)
//	P:{qN}:lease:W          worker W's heartbeat on shard N (expires when W dies)
//	P:{qN}:workers          set of workers that have a processing list on shard N
//	P:{qN}:u:UID            user state of UID, whose shard is N = fnv32a(UID) mod shards
//	P:{qN}:m:GEN:B          remembered event ids of generation GEN, bucket B: a hash of 8-byte
//	                        keyed fingerprints of (UID, ID) of the uids of shard N (markers.go)
//	P:{qN}:e:UID/ID         the previous release's "applied once" marker of UID's action with
//	                        event_id ID (still honoured, never written)
//	P:{qN}:o:UID/ID         the same for UID's conversion with event_id ID
//	P:{qN}:rl:UID           UID's action count in the current rate-limit window
//	P:{qN}:r:UID            UID's pending reservation (a decision shown once confirmed)
//	P:{qN}:x:HASH           an erased user's event-id marker, HASH = privacy.Keyed.Event(UID, ID)
//	P:{cfg}:popups          the warmed config cache (JSON array of popups)
//	P:{cfg}:version         its config version
//	P:{cfg}:goals           the goals conversions may name (JSON array of keys)
//	P:cfg:changed           pub/sub channel announcing a new version
//
// A user's state lives in its queue shard's slot so that recording an impression and queueing
// its event are one atomic script.
type Keys struct {
	Prefix string
	Shards int
}

// Shard returns the queue shard of uid: FNV-1a 32 of the uid, mod Shards.
func (k Keys) Shard(uid string) int {
	if k.Shards <= 1 {
		return 0
	}
	h := uint32(2166136261)
	for i := 0; i < len(uid); i++ {
		h ^= uint32(uid[i])
		h *= 16777619
	}
	return int(h % uint32(k.Shards))
}

func (k Keys) appendShard(dst []byte, shard int) []byte {
	dst = append(dst, k.Prefix...)
	dst = append(dst, ":{q"...)
	dst = strconv.AppendInt(dst, int64(shard), 10)
	return append(dst, "}:"...)
}

func (k Keys) shardKey(shard int, kind string) string {
	return string(append(k.appendShard(make([]byte, 0, len(k.Prefix)+16+len(kind)), shard), kind...))
}

// Queue is shard's event list.
func (k Keys) Queue(shard int) string { return k.shardKey(shard, "queue") }

// Dead is shard's dead-letter list.
func (k Keys) Dead(shard int) string { return k.shardKey(shard, "dead") }

// Workers is the set of workers holding a processing list on shard.
func (k Keys) Workers(shard int) string { return k.shardKey(shard, "workers") }

// Processing is worker's processing list on shard.
func (k Keys) Processing(shard int, worker string) string { return k.shardKey(shard, "proc:"+worker) }

// Lease is worker's heartbeat key on shard.
func (k Keys) Lease(shard int, worker string) string { return k.shardKey(shard, "lease:"+worker) }

// AppendUser appends the user-state key of uid (in its shard) to dst without allocating.
func (k Keys) AppendUser(dst []byte, uid string) []byte {
	dst = k.appendShard(dst, k.Shard(uid))
	dst = append(dst, "u:"...)
	return append(dst, uid...)
}

// User is the user-state key of uid.
func (k Keys) User(uid string) string { return string(k.AppendUser(nil, uid)) }

// EventID is the "applied once" marker of uid's action with event id id, in uid's shard. An
// event id is the client's key for one uid only (two users may send the same one and both
// actions count), so the key holds both; '/' is not in the uid alphabet, so no two (uid, id)
// pairs share a key.
func (k Keys) EventID(uid, id string) string {
	dst := k.appendShard(nil, k.Shard(uid))
	dst = append(dst, "e:"...)
	dst = append(dst, uid...)
	dst = append(dst, '/')
	return string(append(dst, id...))
}

// ConversionID is the "applied once" marker of uid's conversion with event id id: the event ids
// of conversions are their own namespace, apart from the actions' (EventID).
func (k Keys) ConversionID(uid, id string) string {
	dst := k.appendShard(nil, k.Shard(uid))
	dst = append(dst, "o:"...)
	dst = append(dst, uid...)
	dst = append(dst, '/')
	return string(append(dst, id...))
}

// Erased is the marker that stands for uid's event-id marker once uid is erased: named by the
// keyed hash of the pair (privacy.Keyed.Event), never the uid, in uid's shard so that the record
// script can check it beside the other keys.
func (k Keys) Erased(uid, hash string) string {
	dst := k.appendShard(nil, k.Shard(uid))
	dst = append(dst, "x:"...)
	return string(append(dst, hash...))
}

// Reservation is uid's pending reservation (UserStore.Reserve), in uid's shard.
func (k Keys) Reservation(uid string) string {
	var b [96]byte // a key of the usual length is built on the stack: one allocation, the string
	dst := k.appendShard(b[:0], k.Shard(uid))
	dst = append(dst, "r:"...)
	return string(append(dst, uid...))
}

// RateLimit is uid's action counter, in uid's shard.
func (k Keys) RateLimit(uid string) string {
	dst := k.appendShard(nil, k.Shard(uid))
	dst = append(dst, "rl:"...)
	return string(append(dst, uid...))
}

// ConfigBlob holds the warmed config cache.
func (k Keys) ConfigBlob() string { return k.Prefix + ":{cfg}:popups" }

// ConfigVersion holds the version of ConfigBlob.
func (k Keys) ConfigVersion() string { return k.Prefix + ":{cfg}:version" }

// ConfigPacing holds the team's pacing of ConfigBlob's version (absent: the team set none, or an
// older build wrote the blob).
func (k Keys) ConfigPacing() string { return k.Prefix + ":{cfg}:pacing" }

// ConfigHoldout holds the team's running holdout phase of ConfigBlob's version (absent: none, or
// an older build wrote the blob).
func (k Keys) ConfigHoldout() string { return k.Prefix + ":{cfg}:holdout" }

// Goals holds the keys of the goals conversions may name (GoalCatalog).
func (k Keys) Goals() string { return k.Prefix + ":{cfg}:goals" }

// ConfigChannel announces new config versions.
func (k Keys) ConfigChannel() string { return k.Prefix + ":cfg:changed" }
