package redisstore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"popupsvc/internal/event"
	"popupsvc/internal/popup"
)

// A reservation is a decision shown only once the client confirms it (docs/CONTRACT.md §2,
// "Impressions when shown"): what the record script would write, parked under the user's
// reservation key until the confirmation applies it or the key expires. It is one string, a
// sequence of MessagePack strings that the confirm script splits with one cmsgpack.unpack (a C
// call: cheaper than cutting it with Lua's string functions, docs/PERFORMANCE.md "A shown popup
// in each mode"):
//
//	"+<decision id> <popup id>"  <prev>  <next>  <filter bits>  <event>...
//
// prev is the state it was planned on, next the state to write; the filter bits are the
// known-users bits to set (space-separated offsets), empty unless prev is a first state. Once
// confirmed, the key holds its first string alone, the marker "+<decision id> <popup id>", for
// EventIDTTL instead: a retried confirmation is a Duplicate, and a new reservation may replace it.
// (A marker starts with '+', which no MessagePack string does.) While an unconfirmed one exists
// no other reservation of the user's is made, so two concurrent confirm-mode decisions never both
// show a popup.

// reserveScript parks a reservation when the user has none pending and the state is still the
// one the decision was planned on.
//
//	KEYS[1] user state  KEYS[2] reservation
//	ARGV[1] expected state  ARGV[2] reservation TTL ms  ARGV[3] the reservation
var reserveScript = redis.NewScript(`
local v = redis.call('MGET', KEYS[2], KEYS[1])
local r, cur = v[1], v[2]
if r and string.byte(r, 1) ~= 43 then return 4 end
if cur == false then cur = '' end
if cur ~= ARGV[1] then return 1 end
redis.call('SET', KEYS[2], ARGV[3], 'PX', ARGV[2])
return 0
`)

// confirmScript applies a reservation: a confirmation seen before is a duplicate; else it finds
// the reservation of that decision, compares the state, writes the new state, queues the events,
// sets the known-users bits and leaves the confirmed marker, in one step. With ARGV[4] = 0 it
// writes what the reservation holds (planned on the state still stored); with n > 0 the caller's
// re-planned state and n events (the state changed since: ConfirmOn).
//
//	KEYS[1] user state  KEYS[2] queue  KEYS[3] known-users filter  KEYS[4] reservation
//	ARGV[1] the marker "+<decision id> <popup id>"  ARGV[2] state TTL ms
//	ARGV[3] confirmed marker TTL ms  ARGV[4] n  (n > 0: ARGV[5] expected state  ARGV[6] new
//	state  ARGV[7..6+n] events, then the filter bits)
var confirmScript = redis.NewScript(`
local v = redis.call('MGET', KEYS[4], KEYS[1])
local r, cur = v[1], v[2]
if r == false then return 5 end
if string.byte(r, 1) == 43 then
  if r ~= ARGV[1] then return 5 end
  redis.call('PEXPIRE', KEYS[4], ARGV[3])
  return 2
end
local t = {cmsgpack.unpack(r)}
if t[1] ~= ARGV[1] then return 5 end
local n = tonumber(ARGV[4])
local prev, nxt, evs, first, last = t[2], t[3], t, 5, #t
if n > 0 then prev, nxt, evs, first, last = ARGV[5], ARGV[6], ARGV, 7, 6 + n end
if cur == false then cur = '' end
if cur ~= prev then return 1 end
redis.call('SET', KEYS[1], nxt, 'PX', ARGV[2])
redis.call('RPUSH', KEYS[2], unpack(evs, first, last))
redis.call('SET', KEYS[4], ARGV[1], 'PX', ARGV[3])
if n > 0 then
  for i = last + 1, #ARGV do redis.call('SETBIT', KEYS[3], ARGV[i], 1) end
elseif t[4] ~= '' then
  for bit in string.gmatch(t[4], '%d+') do redis.call('SETBIT', KEYS[3], bit, 1) end
end
return 0
`)

// The scripts' constant arguments, boxed once.
var (
	reserveHash any = reserveScript.Hash()
	confirmHash any = confirmScript.Hash()
)

// appendMarker appends the marker that names a reservation, and once confirmed stands for it:
// '+', the decision id and the popup shown.
func appendMarker(dst []byte, decisionID string, popupID int64) []byte {
	dst = append(dst, '+')
	dst = append(dst, decisionID...)
	dst = append(dst, ' ')
	return strconv.AppendInt(dst, popupID, 10)
}

// beginStr starts a MessagePack string (str 32) in dst whose bytes the caller appends next;
// endStr, given beginStr's answer, writes its length.
func beginStr(dst []byte) ([]byte, int) { return append(dst, 0xdb, 0, 0, 0, 0), len(dst) }

func endStr(dst []byte, at int) []byte {
	binary.BigEndian.PutUint32(dst[at+1:], uint32(len(dst)-at-5))
	return dst
}

// appendStr appends s as a MessagePack string.
func appendStr(dst []byte, s []byte) []byte {
	dst, at := beginStr(dst)
	return endStr(append(dst, s...), at)
}

// cutStr cuts the MessagePack string (fixstr, str 8, 16 or 32) at the start of b.
func cutStr(b string) (s, rest string, ok bool) {
	if b == "" {
		return "", "", false
	}
	var n, head int
	switch c := b[0]; {
	case c&0xe0 == 0xa0:
		n, head = int(c&0x1f), 1
	case c == 0xd9 && len(b) >= 2:
		n, head = int(b[1]), 2
	case c == 0xda && len(b) >= 3:
		n, head = int(binary.BigEndian.Uint16([]byte(b[1:3]))), 3
	case c == 0xdb && len(b) >= 5:
		n, head = int(binary.BigEndian.Uint32([]byte(b[1:5]))), 5
	default:
		return "", "", false
	}
	if len(b)-head < n {
		return "", "", false
	}
	return b[head : head+n], b[head+n:], true
}

// firstState says whether prev is a user's first state (none, or the empty one): recording on it
// adds the uid to the known-users filter.
func (s *UserStore) firstState(prev string) bool {
	return s.known != nil && (prev == "" || prev == s.emptyRaw)
}

// Reserve parks next and evs (1 to event.MaxRecordEvents, their last the impression of popupID)
// as uid's reservation of decisionID for ttl, if uid has none and its state still equals prev.
// It answers popup.Recorded (reserved), popup.Busy (another reservation is pending) or
// popup.Conflict (the state changed: decide again).
func (s *UserStore) Reserve(ctx context.Context, uid, prev string, next *popup.UserState, decisionID string, popupID int64, evs []event.Event, ttl time.Duration) (Outcome, error) {
	if len(evs) == 0 || len(evs) > event.MaxRecordEvents {
		return 0, fmt.Errorf("reserve: %d events (1 to %d)", len(evs), event.MaxRecordEvents)
	}
	// One buffer, sized for what a reservation usually holds (two states, an event of a couple of
	// hundred bytes each).
	v, at := beginStr(make([]byte, 0, 2*len(prev)+len(decisionID)+96+320*len(evs)))
	v = endStr(appendMarker(v, decisionID, popupID), at)
	v = appendStr(v, []byte(prev))
	v, at = beginStr(v)
	v = endStr(AppendState(v, next), at)
	v, at = beginStr(v)
	if s.firstState(prev) {
		for i, bit := range s.known.appendOffsets(nil, uid) {
			if i > 0 {
				v = append(v, ' ')
			}
			v = strconv.AppendUint(v, bit.(uint64), 10)
		}
	}
	v = endStr(v, at)
	for i := range evs {
		v, at = beginStr(v)
		v = endStr(event.Append(v, &evs[i]), at)
	}
	var kb [96]byte
	user := string(s.keys.AppendUser(kb[:0], uid))
	cmd := redis.NewCmd(ctx, "evalsha", reserveHash, 2, user, s.keys.Reservation(uid), prev, ttl.Milliseconds(), v)
	n, err := s.runScript(ctx, user, reserveScript, cmd)
	if err != nil {
		return 0, fmt.Errorf("reserve: %w", err)
	}
	return Outcome(n), nil
}

// Confirm applies uid's reservation of decisionID for popupID as it was planned. It answers
// popup.Recorded (applied now), popup.Duplicate (applied before: a retried confirmation),
// popup.Expired (no such reservation: it expired, or never was) or popup.Conflict (the state
// changed since the reservation was planned: re-plan it with Reservation and ConfirmOn).
func (s *UserStore) Confirm(ctx context.Context, uid, decisionID string, popupID int64) (Outcome, error) {
	return s.confirm(ctx, uid, decisionID, popupID, "", nil, nil)
}

// ConfirmOn applies uid's reservation of decisionID for popupID as the caller re-planned it on
// the state prev (next and evs, as Record takes them). Its answers are Confirm's.
func (s *UserStore) ConfirmOn(ctx context.Context, uid, decisionID string, popupID int64, prev string, next *popup.UserState, evs []event.Event) (Outcome, error) {
	if len(evs) == 0 || len(evs) > event.MaxRecordEvents {
		return 0, fmt.Errorf("confirm: %d events (1 to %d)", len(evs), event.MaxRecordEvents)
	}
	return s.confirm(ctx, uid, decisionID, popupID, prev, next, evs)
}

func (s *UserStore) confirm(ctx context.Context, uid, decisionID string, popupID int64, prev string, next *popup.UserState, evs []event.Event) (Outcome, error) {
	var kb [96]byte
	user := string(s.keys.AppendUser(kb[:0], uid))
	sk := s.shardArgs[s.keys.Shard(uid)]
	cmdArgs := make([]any, 0, 12)
	cmdArgs = append(cmdArgs, "evalsha", confirmHash, 4, user, sk.queue, sk.known, s.keys.Reservation(uid),
		appendMarker(make([]byte, 0, len(decisionID)+24), decisionID, popupID), s.ttlArg, eventIDTTLArg, len(evs))
	if len(evs) > 0 {
		cmdArgs = append(cmdArgs, prev, AppendState(nil, next))
		for i := range evs {
			cmdArgs = append(cmdArgs, event.Append(nil, &evs[i]))
		}
		if s.firstState(prev) {
			cmdArgs = s.known.appendOffsets(cmdArgs, uid)
		}
	}
	n, err := s.runRecord(ctx, confirmScript, cmdArgs)
	if err != nil {
		return 0, fmt.Errorf("confirm: %w", err)
	}
	if s.recent != nil && Outcome(n) != popup.Duplicate {
		// The state this process remembers for uid is no longer the stored one.
		s.recent.forget(uid)
	}
	return Outcome(n), nil
}

// Reservation returns uid's pending reservation of decisionID for popupID: the state it would
// write and its events; false when there is none (it expired, was confirmed, or names another
// decision).
func (s *UserStore) Reservation(ctx context.Context, uid, decisionID string, popupID int64) (popup.UserState, []event.Event, bool, error) {
	key := s.keys.Reservation(uid)
	cmd := redis.NewStringCmd(ctx, "get", key)
	if err := s.do(ctx, key, cmd); err != nil && !errors.Is(err, redis.Nil) {
		return popup.UserState{}, nil, false, fmt.Errorf("read reservation: %w", err)
	}
	r := cmd.Val()
	if r == "" || r[0] == '+' {
		return popup.UserState{}, nil, false, nil // none, or confirmed
	}
	var fields [4 + event.MaxRecordEvents]string
	n := 0
	for rest := r; rest != ""; n++ {
		var ok bool
		if n == len(fields) {
			return popup.UserState{}, nil, false, errors.New("read reservation: too many parts")
		}
		if fields[n], rest, ok = cutStr(rest); !ok {
			return popup.UserState{}, nil, false, fmt.Errorf("read reservation: malformed part %d", n)
		}
	}
	if n < 5 {
		return popup.UserState{}, nil, false, fmt.Errorf("read reservation: %d parts", n)
	}
	if fields[0] != string(appendMarker(nil, decisionID, popupID)) {
		return popup.UserState{}, nil, false, nil // another decision's
	}
	next, err := DecodeState(fields[2])
	if err != nil {
		return popup.UserState{}, nil, false, fmt.Errorf("read reservation: %w", err)
	}
	evs := make([]event.Event, 0, n-4)
	for _, raw := range fields[4:n] {
		ev, err := event.Decode([]byte(raw))
		if err != nil {
			return popup.UserState{}, nil, false, fmt.Errorf("read reservation: %w", err)
		}
		evs = append(evs, ev)
	}
	return next, evs, true, nil
}

// runScript runs cmd (script's EVALSHA, its keys in key's hash slot) through the pipeline, and
// with EVAL once when the script is not loaded yet.
func (s *UserStore) runScript(ctx context.Context, key string, script *redis.Script, cmd *redis.Cmd) (int, error) {
	err := s.do(ctx, key, cmd)
	if err == nil {
		return cmd.Int()
	}
	if !redis.HasErrorPrefix(err, "NOSCRIPT") {
		return 0, err
	}
	args := cmd.Args()
	nkeys := args[2].(int)
	keys := make([]string, nkeys)
	for i := range keys {
		keys[i] = args[3+i].(string)
	}
	return script.Run(ctx, s.rdb, keys, args[3+nkeys:]...).Int()
}
