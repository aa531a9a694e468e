package redisstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/singleflight"

	"popupsvc/internal/event"
	"popupsvc/internal/popup"
	"popupsvc/internal/privacy"
)

// StateLoader is the durable source of a user's state (MySQL), consulted after a Redis miss.
type StateLoader interface {
	Load(ctx context.Context, uid string, now time.Time) (popup.UserState, error)
}

// UserStore keeps each user's display state in one Redis key and records changes together with
// their queued event in one atomic script.
type UserStore struct {
	rdb    redis.UniversalClient
	keys   Keys
	ttl    time.Duration
	loader StateLoader
	group  singleflight.Group
	slots  chan struct{} // bounds concurrent MySQL loads
	pipe   *Pipeline     // nil: every command is its own round trip
	// actionLimit caps recorded actions per uid per RateWindow; 0 = none.
	actionLimit int
	// known answers "new user" on a state miss without MySQL; nil = every miss loads.
	known    *KnownUsers
	emptyRaw string // the stored value of the empty state
	metrics  *StateMetrics
	// ackReplicas > 0: a record is acknowledged once that many replicas hold it (see
	// SetAckReplicas), and goes through ackRDB.
	ackReplicas int
	ackRDB      redis.UniversalClient
	// erased names the markers of erased users' event ids (SetErasedMarkers); nil: none.
	erased *privacy.Keyed
	// markers places the remembered event ids; now is the clock of their generations.
	markers markers
	now     func() time.Time
	// recent holds the values this process last recorded (RememberRecorded); nil: off.
	recent *recentStates
	// shardArgs are each queue shard's keys of the record script, and ttlArg and actionLimitArg
	// its settings, boxed once for Record's arguments.
	shardArgs              []shardArgs
	ttlArg, actionLimitArg any
}

// shardArgs are a queue shard's keys as the record script takes them: the queue and the
// known-users filter (the queue again without a filter: a name nothing writes, which keeps the
// script's key positions fixed).
type shardArgs struct{ queue, known any }

// boxArgs fills shardArgs for the store's keys and filter.
func (s *UserStore) boxArgs() {
	s.shardArgs = make([]shardArgs, max(s.keys.Shards, 1))
	for i := range s.shardArgs {
		queue := s.keys.Queue(i)
		known := queue
		if s.known != nil {
			known = s.known.Key(i)
		}
		s.shardArgs[i] = shardArgs{queue: queue, known: known}
	}
}

// SetErasedMarkers makes Record refuse, as a duplicate, an action whose (uid, event id) an
// erasure replaced by its keyed-hash marker (Eraser.ReplaceMarkers): a client retrying an event
// of before the erasure writes nothing (docs/CONTRACT.md §12).
// It also keys the fingerprints that remember event ids with k (markers.go): set it before
// serving, as a change of key forgets the event ids remembered under the old one.
func (s *UserStore) SetErasedMarkers(k *privacy.Keyed) {
	s.erased = k
	s.markers = newMarkers(s.keys, k.MarkerKey(), MarkerBuckets)
}

// SetClock sets the clock by which event ids are remembered (tests; time.Now by default).
func (s *UserStore) SetClock(now func() time.Time) { s.now = now }

// ErrNotReplicated means a record reached the primary but not the required number of replicas
// within the caller's budget: it must not be acknowledged (a host crash could still lose it).
var ErrNotReplicated = errors.New("write not held by enough replicas")

// SetAckReplicas makes Record wait, with Redis WAIT on the connection that wrote, until n
// replicas hold each record before it returns (0 = the primary's write is enough). rdb is a
// client of the same Redis whose read timeout covers the longest budget a caller gives Record:
// WAIT blocks its connection, so these records go out on their own, never autopipelined.
func (s *UserStore) SetAckReplicas(n int, rdb redis.UniversalClient) {
	s.ackReplicas, s.ackRDB = n, rdb
}

// StateLoadTimeout bounds one shared load of a user's state from MySQL. It runs detached from
// the requests waiting for it: a caller whose budget ends answers degraded, a client that hangs
// up leaves, and the load still finishes and caches the state for the user's next request.
const StateLoadTimeout = 2 * time.Second

// UseKnownUsers makes a state miss consult f before MySQL (see KnownUsers); m counts the
// answers (nil: uncounted).
func (s *UserStore) UseKnownUsers(f *KnownUsers, m *StateMetrics) {
	s.known, s.metrics = f, m
	s.boxArgs()
}

// NewUserStore returns a store; loadLimit bounds concurrent loads from the loader. With pipe (rdb's
// NewPipeline), the hot-path commands of concurrent requests (GET, the known-users check and the
// record script) share pipelines.
func NewUserStore(rdb redis.UniversalClient, keys Keys, ttl time.Duration, loader StateLoader, loadLimit int, pipe *Pipeline) *UserStore {
	s := &UserStore{rdb: rdb, keys: keys, ttl: ttl, loader: loader, slots: make(chan struct{}, loadLimit), pipe: pipe,
		emptyRaw: string(AppendState(nil, &popup.UserState{})), ttlArg: ttl.Milliseconds(), actionLimitArg: 0,
		markers: newMarkers(keys, defaultMarkerKey, MarkerBuckets), now: time.Now}
	s.boxArgs()
	return s
}

// do runs cmd, whose keys share key's hash slot, through the pipeline when there is one (see
// Pipeline.Do: on ctx's end do returns ctx's error and the command may still be filled in later;
// callers then must not read it).
func (s *UserStore) do(ctx context.Context, key string, cmd redis.Cmder) error {
	if s.pipe != nil {
		return s.pipe.Do(ctx, key, cmd)
	}
	return s.rdb.Process(ctx, cmd)
}

// ErrBusy means the request's budget ran out waiting for one of the bounded MySQL load slots.
var ErrBusy = errors.New("user state loads saturated")

// ErrLoad marks a failure of the durable source (MySQL) rather than of Redis: callers must not
// count it against Redis's health. It is the domain's popup.ErrStateLoad.
var ErrLoad = popup.ErrStateLoad

// Get returns uid's state: one GET when Redis holds it, else one MySQL load shared by concurrent
// callers, cached with SET NX (a user without state is cached as the empty state).
func (s *UserStore) Get(ctx context.Context, uid string, now time.Time) (popup.StoredState, error) {
	var kb [96]byte
	key := string(s.keys.AppendUser(kb[:0], uid))
	cmd := redis.NewStringCmd(ctx, "get", key)
	// do's error is the command's, or the context's when the caller gave up first; then cmd
	// must not be read (the pipeline may still be filling it in).
	err := s.do(ctx, key, cmd)
	var raw string
	if err == nil {
		raw = cmd.Val()
	}
	if err == nil {
		st, derr := DecodeState(raw)
		if derr == nil {
			return popup.StoredState{UserState: st, Raw: raw}, nil
		}
		// An unreadable value is treated like a miss: MySQL has the durable state.
	} else if !errors.Is(err, redis.Nil) {
		return popup.StoredState{}, fmt.Errorf("get user state: %w", err)
	}
	if s.known != nil {
		// A first visit: answered here, on the caller's context, with no shared load to set up.
		ans, err := s.knownCheck(ctx, uid)
		if err != nil {
			return popup.StoredState{}, fmt.Errorf("get user state: %w", err)
		}
		s.metrics.miss(ans)
		if ans == KnownNew {
			// No state stored: the record script compares against "" (a missing key).
			return popup.StoredState{}, nil
		}
	} else {
		s.metrics.miss(KnownUntrusted)
	}
	// One load per uid at a time in this process, on a context of its own: see StateLoadTimeout.
	ch := s.group.DoChan(key, func() (any, error) {
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), StateLoadTimeout)
		defer cancel()
		return s.load(lctx, key, uid, now)
	})
	var res singleflight.Result
	select {
	case res = <-ch:
	case <-ctx.Done():
		return popup.StoredState{}, fmt.Errorf("%w: %w", ErrLoad, ctx.Err())
	}
	if res.Err != nil {
		return popup.StoredState{}, res.Err
	}
	st, shared := res.Val.(popup.StoredState), res.Shared
	if shared {
		// Callers mutate their state: each sharer gets its own copy.
		dec, err := DecodeState(st.Raw)
		if err != nil {
			return popup.StoredState{}, err
		}
		st.UserState = dec
	}
	return st, nil
}

func (s *UserStore) load(ctx context.Context, key, uid string, now time.Time) (popup.StoredState, error) {
	// Wait for a slot within the caller's budget: a burst of new users queues for MySQL
	// instead of all hitting it at once, and degrades only if the budget runs out.
	select {
	case s.slots <- struct{}{}:
		defer func() { <-s.slots }()
	case <-ctx.Done():
		return popup.StoredState{}, fmt.Errorf("%w: %w: %w", ErrLoad, ErrBusy, ctx.Err())
	}
	st, err := s.loader.Load(ctx, uid, now)
	if err != nil {
		return popup.StoredState{}, fmt.Errorf("%w: %w", ErrLoad, err)
	}
	raw := string(AppendState(nil, &st))
	// NX: an impression recorded meanwhile wins over our older view of the user.
	ok, err := s.rdb.SetNX(ctx, key, raw, s.ttl).Result()
	if err != nil {
		return popup.StoredState{}, fmt.Errorf("cache user state: %w", err)
	}
	if !ok {
		cur, err := s.rdb.Get(ctx, key).Result()
		if err != nil {
			return popup.StoredState{}, fmt.Errorf("get user state: %w", err)
		}
		if st, err = DecodeState(cur); err != nil {
			return popup.StoredState{}, err
		}
		raw = cur
	}
	return popup.StoredState{UserState: st, Raw: raw}, nil
}

// knownCheck asks the known-users filter about uid, through the autopipeliner like the GET.
func (s *UserStore) knownCheck(ctx context.Context, uid string) (KnownAnswer, error) {
	cmd := s.known.checkCmd(ctx, uid)
	// The filter's key as checkCmd put it in the command: building it again costs a first visit
	// four allocations (issue 57).
	if err := s.do(ctx, cmd.Args()[1].(string), cmd); err != nil {
		return KnownUntrusted, fmt.Errorf("known users: check: %w", err)
	}
	return answer(cmd.Val()), nil
}

// Outcome of Record: the domain's popup.Outcome, whose values the record script returns.
type Outcome = popup.Outcome

// recordScript atomically: refuses a replayed event id, compares the state with what the caller
// decided on, writes the new state, queues the events (one, or a control exposure and the
// impression it fell through to) and remembers the event id (markers.go).
//
// A replayed event id is remembered again in the current generation: a write, so that a WAIT
// after it also waits for the first recording, which may not have reached the replicas when its
// own WAIT gave up; and the window runs from the latest retry.
//
// The previous release's marker of the event id (a key of its own), or the keyed-hash marker an
// erasure replaced it by (the client retries an event of before the erasure; docs/CONTRACT.md
// §12), refuses it the same way.
//
// For a user without recorded state yet, it also adds the uid to the known-users filter
// (KnownUsers) in the same step, so that the filter never lacks a uid whose event is queued.
//
//	KEYS[1] user state  KEYS[2] queue  KEYS[3] known-users filter
//	KEYS[4..8] with an event id (optional): the previous release's marker, its erased marker
//	(KEYS[4] again without POPUP_PRIVACY_KEY), the marker hashes of the generations before, of
//	and after the caller's  KEYS[9] rate counter (optional)
//	ARGV[1] expected value  ARGV[2] new value  ARGV[3] state TTL ms  ARGV[4] marker field
//	ARGV[5] the marker generation's expiry (unix ms)  ARGV[6] actions allowed per rate window
//	ARGV[7] rate window ms  ARGV[8] number of events n  ARGV[9..8+n] the events, in queue order
//	ARGV[9+n..] filter bit offsets
var recordScript = redis.NewScript(`
if KEYS[4] then
  local seen = redis.call('EXISTS', KEYS[4], KEYS[5]) > 0
  if not seen then
    for i = 6, 8 do
      if redis.call('HEXISTS', KEYS[i], ARGV[4]) == 1 then seen = true break end
    end
  end
  if seen then
    redis.call('HSET', KEYS[7], ARGV[4], '1')
    redis.call('PEXPIREAT', KEYS[7], ARGV[5])
    return 2
  end
end
local cur = redis.call('GET', KEYS[1])
if cur == false then cur = '' end
if cur ~= ARGV[1] then return 1 end
if KEYS[9] then
  local n = redis.call('INCR', KEYS[9])
  if n == 1 then redis.call('PEXPIRE', KEYS[9], ARGV[7]) end
  if n > tonumber(ARGV[6]) then return 3 end
end
local last = 8 + tonumber(ARGV[8])
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
redis.call('RPUSH', KEYS[2], unpack(ARGV, 9, last))
if KEYS[4] then
  redis.call('HSET', KEYS[7], ARGV[4], '1')
  redis.call('PEXPIREAT', KEYS[7], ARGV[5])
end
for i = last + 1, #ARGV do redis.call('SETBIT', KEYS[3], ARGV[i], 1) end
return 0
`)

// RateWindow is the window of the per-uid action rate limit.
const RateWindow = time.Minute

// The record script's constant arguments, boxed once (an integer past 255 in an interface is an
// allocation per use).
var (
	recordHash    any = recordScript.Hash()
	eventIDTTLArg any = EventIDTTL.Milliseconds()
	rateWindowArg any = RateWindow.Milliseconds()
)

// SetActionRateLimit limits each uid to n recorded actions per RateWindow (0 = no limit).
func (s *UserStore) SetActionRateLimit(n int) { s.actionLimit, s.actionLimitArg = n, n }

// EventIDTTL is how long the previous release remembered an event id, a key per marker (the
// markers a record still honours, and an erasure still replaces), and how long a confirmed
// reservation stays confirmed.
const EventIDTTL = 24 * time.Hour

// Record writes next as uid's state if it still equals prev, and queues evs (1 to
// event.MaxRecordEvents, in order), atomically: all of them or none. With dedupe set (actions), an
// event id seen before (evs[0]'s) is refused as Duplicate, and a uid over the action rate limit
// as RateLimited.
func (s *UserStore) Record(ctx context.Context, uid string, prev string, next *popup.UserState, evs []event.Event, dedupe bool) (Outcome, error) {
	if len(evs) == 0 || len(evs) > event.MaxRecordEvents {
		return 0, fmt.Errorf("record: %d events (1 to %d)", len(evs), event.MaxRecordEvents)
	}
	ev := &evs[0]
	user := s.keys.User(uid)
	sk := s.shardArgs[s.keys.Shard(uid)]
	// EVALSHA's arguments, built in one slice with the constant ones boxed once (recordHash
	// and the others above): every allocation here is paid on every impression
	// (docs/PERFORMANCE.md, "The record path's CPU").
	cmdArgs := make([]any, 0, 40)
	cmdArgs = append(cmdArgs, "evalsha", recordHash, 3, user, sk.queue, sk.known)
	var field, expireAt any = "", 0
	if dedupe {
		legacy := s.keys.EventID(uid, ev.ID)
		erased := legacy
		if s.erased != nil {
			erased = s.keys.Erased(uid, s.erased.Event(uid, ev.ID))
		}
		m := s.markers.ref(markerAction, uid, ev.ID, s.now())
		cmdArgs = append(cmdArgs, legacy, erased, m.gens[0], m.gens[1], m.gens[2])
		if s.actionLimit > 0 {
			cmdArgs = append(cmdArgs, s.keys.RateLimit(uid))
		}
		cmdArgs[2] = len(cmdArgs) - 3
		field, expireAt = m.field, m.expireAt
	}
	// The new state and the first event share one buffer, sized for both as a record usually
	// needs (a state a little longer than prev, an event of a couple of hundred bytes).
	written := AppendState(make([]byte, 0, len(prev)+320), next)
	first := event.Append(written[len(written):], ev)
	cmdArgs = append(cmdArgs, prev, written, s.ttlArg, field, expireAt, s.actionLimitArg, rateWindowArg, len(evs), first)
	for i := 1; i < len(evs); i++ {
		cmdArgs = append(cmdArgs, event.Append(nil, &evs[i]))
	}
	if s.known != nil && (prev == "" || prev == s.emptyRaw) {
		// The user's first recorded state: add the uid. Later records find it there already.
		cmdArgs = s.known.appendOffsets(cmdArgs, uid)
	}
	n, err := s.runRecord(ctx, recordScript, cmdArgs)
	if err != nil {
		return 0, fmt.Errorf("record %s: %w", ev.Action, err)
	}
	s.noteRecorded(uid, Outcome(n), written)
	if Outcome(n) == popup.Duplicate && s.erased != nil && prev == s.emptyRaw {
		s.forgetEmpty(ctx, user)
	}
	return Outcome(n), nil
}

// runRecord runs a record script (recordScript, conversionScript) whose keys share the first
// key's hash slot: through the autopipeliner, or with SetAckReplicas on its own connection
// followed by WAIT (recordReplicated). cmdArgs are EVALSHA's: "evalsha", the script's hash, the
// number of keys, the keys, the arguments (evalArgs). It returns the script's answer.
func (s *UserStore) runRecord(ctx context.Context, script *redis.Script, cmdArgs []any) (int, error) {
	first := cmdArgs[3].(string)
	if s.ackReplicas > 0 {
		return s.recordReplicated(ctx, first, script, cmdArgs)
	}
	cmd := redis.NewCmd(ctx, cmdArgs...)
	err := s.do(ctx, first, cmd)
	n := 0
	if err == nil {
		n, err = cmd.Int()
	}
	if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		// First use on this Redis (or after SCRIPT FLUSH / a failover): load it once.
		nkeys := cmdArgs[2].(int)
		keys := make([]string, nkeys)
		for i := range keys {
			keys[i] = cmdArgs[3+i].(string)
		}
		n, err = script.Run(ctx, s.rdb, keys, cmdArgs[3+nkeys:]...).Int()
	}
	return n, err
}

// evalArgs returns EVALSHA's arguments for script with keys and args.
func evalArgs(script *redis.Script, keys []string, args ...any) []any {
	cmdArgs := make([]any, 0, 3+len(keys)+len(args))
	cmdArgs = append(cmdArgs, "evalsha", script.Hash(), len(keys))
	for _, k := range keys {
		cmdArgs = append(cmdArgs, k)
	}
	return append(cmdArgs, args...)
}

// delIfScript deletes KEYS[1] when it holds ARGV[1].
var delIfScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`)

// forgetEmpty removes the "no state" entry a refused duplicate's read cached for its user: the
// retry of an erased user's event (docs/CONTRACT.md §12) must not leave a key naming the uid.
// Only a duplicate of a user without state gets here; a failure costs a later state load, no more.
func (s *UserStore) forgetEmpty(ctx context.Context, key string) {
	_ = delIfScript.Run(context.WithoutCancel(ctx), s.rdb, []string{key}, s.emptyRaw).Err()
}

// recordReplicated runs a record script (recordScript, conversionScript; cmdArgs its EVALSHA)
// and WAIT in one pipeline on one connection of the
// user's primary: WAIT waits for that connection's last write, so it covers exactly this record
// (and, for a replay, the marker refresh that follows the first recording). The WAIT's timeout is
// what remains of ctx's budget.
func (s *UserStore) recordReplicated(ctx context.Context, userKey string, script *redis.Script, cmdArgs []any) (int, error) {
	var node redis.Cmdable = s.ackRDB
	if cc, ok := s.ackRDB.(*redis.ClusterClient); ok {
		// A pipeline of the cluster client may send a keyless WAIT to another node.
		c, err := cc.MasterForKey(ctx, userKey)
		if err != nil {
			return 0, err
		}
		node = c
	}
	timeout := waitTimeout(ctx)
	for try := 0; ; try++ {
		var rec *redis.Cmd
		var acks *redis.Cmd
		// Each command carries its own error; Pipelined's is the first of them.
		_, _ = node.Pipelined(ctx, func(p redis.Pipeliner) error {
			rec = p.Do(ctx, cmdArgs...)
			acks = p.Do(ctx, "wait", s.ackReplicas, timeout.Milliseconds())
			return nil
		})
		n, err := rec.Int()
		if err != nil {
			if try == 0 && redis.HasErrorPrefix(err, "NOSCRIPT") {
				if err := script.Load(ctx, node).Err(); err != nil {
					return 0, err
				}
				continue
			}
			return 0, err
		}
		if out := Outcome(n); out != popup.Recorded && out != popup.Duplicate {
			return n, nil // nothing to acknowledge: a conflict or the rate limit
		}
		got, err := acks.Int64()
		if err != nil {
			return 0, fmt.Errorf("%w: wait: %w", ErrNotReplicated, err)
		}
		if got < int64(s.ackReplicas) {
			return 0, fmt.Errorf("%w: %d of %d replicas within %s", ErrNotReplicated, got, s.ackReplicas, timeout)
		}
		return n, nil
	}
}

// waitTimeout is the WAIT timeout for a caller with ctx's deadline: what remains of it, less a
// little for the answer's way back, and at least a millisecond (WAIT 0 would wait forever).
func waitTimeout(ctx context.Context) time.Duration {
	d, ok := ctx.Deadline()
	if !ok {
		return time.Second
	}
	left := time.Until(d)
	return max(left-left/10-time.Millisecond, time.Millisecond)
}
