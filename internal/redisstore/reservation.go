package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"popupsvc/internal/event"
	"popupsvc/internal/popup"
)

// A reservation is a decision shown only once the client confirms it (docs/CONTRACT.md §2,
// "Impressions when shown"): what the record script would write, parked under the user's
// reservation key until the confirmation applies it or the key expires. It is one string, which
// the scripts cut with Lua's string functions (cheaper than a key per field):
//
//	<decision id> <popup id> \n <len of prev> <len of next> <len of each event>... [| <filter bit>...] \n
//	<prev><next><events...>
//
// prev is the state it was planned on, next the state to write; the filter bits are the
// known-users bits to set, present when prev is a first state. Once confirmed, the key holds
// "+<decision id> <popup id>" for EventIDTTL instead: a retried confirmation is a Duplicate, and
// a new reservation may replace it. While an unconfirmed one exists no other reservation of the
// user's is made, so two concurrent confirm-mode decisions never both show a popup.

// reserveScript parks a reservation when the user has none pending and the state is still the
// one the decision was planned on.
//
//	KEYS[1] user state  KEYS[2] reservation
//	ARGV[1] expected state  ARGV[2] reservation TTL ms  ARGV[3] the reservation
var reserveScript = redis.NewScript(`
local r = redis.call('GET', KEYS[2])
if r and string.byte(r, 1) ~= 43 then return 4 end
local cur = redis.call('GET', KEYS[1])
if cur == false then cur = '' end
if cur ~= ARGV[1] then return 1 end
redis.call('SET', KEYS[2], ARGV[3], 'PX', ARGV[2])
return 0
`)

// confirmScript applies a reservation: a confirmation seen before is a duplicate; else it finds
// the reservation of that decision, compares the state, writes the new state, queues the events,
// sets the known-users bits and marks the reservation confirmed, in one step. With ARGV[4] = 0 it
// writes what the reservation holds (planned on the state still stored); with n > 0 the caller's
// re-planned state and n events (the state changed since: ConfirmOn).
//
//	KEYS[1] user state  KEYS[2] queue  KEYS[3] known-users filter  KEYS[4] reservation
//	ARGV[1] "<decision id> <popup id>"  ARGV[2] state TTL ms  ARGV[3] confirmed marker TTL ms
//	ARGV[4] n  (n > 0: ARGV[5] expected state  ARGV[6] new state  ARGV[7..6+n] events, then the
//	filter bits)
var confirmScript = redis.NewScript(`
local r = redis.call('GET', KEYS[4])
if r == false then return 5 end
if r == '+' .. ARGV[1] then
  redis.call('PEXPIRE', KEYS[4], ARGV[3])
  return 2
end
local e1 = string.find(r, '\n', 1, true)
if e1 == nil or string.sub(r, 1, e1 - 1) ~= ARGV[1] then return 5 end
local n = tonumber(ARGV[4])
local prev, nxt
local evs, bits = {}, {}
if n == 0 then
  local e2 = string.find(r, '\n', e1 + 1, true)
  local lens, part = {}, nil
  part = lens
  for tok in string.gmatch(string.sub(r, e1 + 1, e2 - 1), '%S+') do
    if tok == '|' then part = bits else part[#part + 1] = tonumber(tok) end
  end
  local pos = e2 + 1
  prev = string.sub(r, pos, pos + lens[1] - 1)
  pos = pos + lens[1]
  nxt = string.sub(r, pos, pos + lens[2] - 1)
  pos = pos + lens[2]
  for i = 3, #lens do
    evs[#evs + 1] = string.sub(r, pos, pos + lens[i] - 1)
    pos = pos + lens[i]
  end
else
  prev, nxt = ARGV[5], ARGV[6]
  for i = 7, 6 + n do evs[#evs + 1] = ARGV[i] end
  for i = 7 + n, #ARGV do bits[#bits + 1] = ARGV[i] end
end
local cur = redis.call('GET', KEYS[1])
if cur == false then cur = '' end
if cur ~= prev then return 1 end
redis.call('SET', KEYS[1], nxt, 'PX', ARGV[2])
redis.call('RPUSH', KEYS[2], unpack(evs))
redis.call('SET', KEYS[4], '+' .. ARGV[1], 'PX', ARGV[3])
for i = 1, #bits do redis.call('SETBIT', KEYS[3], bits[i], 1) end
return 0
`)

// The scripts' constant arguments, boxed once.
var (
	reserveHash any = reserveScript.Hash()
	confirmHash any = confirmScript.Hash()
)

// appendReservationName appends what names a reservation: the decision id and the popup shown.
func appendReservationName(dst []byte, decisionID string, popupID int64) []byte {
	dst = append(dst, decisionID...)
	dst = append(dst, ' ')
	return strconv.AppendInt(dst, popupID, 10)
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
	// The payload first (the state and the events, one buffer), then the header that measures it.
	payload := make([]byte, 0, 2*len(prev)+64+320*len(evs))
	payload = append(payload, prev...)
	payload = AppendState(payload, next)
	lens := [2 + event.MaxRecordEvents]int{len(prev), len(payload) - len(prev)}
	for i := range evs {
		n := len(payload)
		payload = event.Append(payload, &evs[i])
		lens[2+i] = len(payload) - n
	}
	v := make([]byte, 0, len(payload)+len(decisionID)+64)
	v = appendReservationName(v, decisionID, popupID)
	v = append(v, '\n')
	for i := 0; i < 2+len(evs); i++ {
		v = strconv.AppendInt(v, int64(lens[i]), 10)
		v = append(v, ' ')
	}
	if s.firstState(prev) {
		v = append(v, '|')
		for _, bit := range s.known.appendOffsets(nil, uid) {
			v = append(v, ' ')
			v = strconv.AppendUint(v, bit.(uint64), 10)
		}
	}
	v = append(v, '\n')
	v = append(v, payload...)
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
		appendReservationName(make([]byte, 0, len(decisionID)+24), decisionID, popupID), s.ttlArg, eventIDTTLArg, len(evs))
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
	name := string(appendReservationName(nil, decisionID, popupID))
	r := cmd.Val()
	head, rest, ok := strings.Cut(r, "\n")
	if !ok || head != name {
		return popup.UserState{}, nil, false, nil
	}
	hdr, payload, ok := strings.Cut(rest, "\n")
	lensPart, _, _ := strings.Cut(hdr, "|")
	var parts []string
	if ok {
		parts = strings.Fields(lensPart)
	}
	if len(parts) < 3 {
		return popup.UserState{}, nil, false, fmt.Errorf("read reservation: malformed header %q", hdr)
	}
	cut := func(s string) (string, bool) {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 || n > len(payload) {
			return "", false
		}
		v := payload[:n]
		payload = payload[n:]
		return v, true
	}
	var fields []string
	for _, p := range parts {
		v, ok := cut(p)
		if !ok {
			return popup.UserState{}, nil, false, fmt.Errorf("read reservation: malformed header %q", hdr)
		}
		fields = append(fields, v)
	}
	next, err := DecodeState(fields[1])
	if err != nil {
		return popup.UserState{}, nil, false, fmt.Errorf("read reservation: %w", err)
	}
	evs := make([]event.Event, 0, len(fields)-2)
	for _, raw := range fields[2:] {
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
