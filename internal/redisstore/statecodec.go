package redisstore

import (
	"errors"
	"strconv"
	"strings"
	"time"

	"popupsvc/internal/popup"
)

// The user-state value is a compact text format, one key per user:
//
//	1|DAY|DAYCOUNT[|ID,NEXT,IMPRESSIONS,LASTIMP,LASTCLICK,LASTCLOSE]...
//
// times in unix milliseconds (0 = never), popups sorted by id so that equal states encode to
// equal bytes (the record script compares values). "1|0|0" is a user known to have no state:
// caching it spares new users a MySQL query.
//
// The user's last shown time (UserState.LastShownAt, the pacing's min gap) and holdout mark
// (UserState.Holdout: the phase and UTC day of the user's last holdout exposure) ride in an entry
// of popup id 0, which no popup has: "|0,HDAY,HPHASE,LASTSHOWN,0,0", first, present only when
// either is set. A build from before pacing or the holdout reads it as the state of a popup that
// does not exist and writes it back as it found it, so old and new instances share states during
// a rolling deploy.

var errStateCodec = errors.New("bad user state value")

// lastShownID is the popup id whose entry holds the user's last shown time.
const lastShownID = 0

// AppendState appends the encoding of s to dst.
func AppendState(dst []byte, s *popup.UserState) []byte {
	dst = append(dst, "1|"...)
	dst = strconv.AppendInt(dst, int64(s.Day), 10)
	dst = append(dst, '|')
	dst = strconv.AppendInt(dst, int64(s.DayCount), 10)
	if !s.LastShownAt.IsZero() || s.Holdout != (popup.HoldoutMark{}) {
		dst = append(dst, "|0,"...)
		dst = strconv.AppendInt(dst, int64(s.Holdout.Day), 10)
		dst = append(dst, ',')
		dst = strconv.AppendInt(dst, int64(s.Holdout.Phase), 10)
		dst = append(dst, ',')
		dst = appendMilli(dst, s.LastShownAt)
		dst = append(dst, ",0,0"...)
	}
	for i := range s.Popups {
		e := &s.Popups[i] // in id order: PopupStates keeps it
		ps := &e.PopupState
		dst = append(dst, '|')
		dst = strconv.AppendInt(dst, e.ID, 10)
		dst = append(dst, ',')
		dst = appendMilli(dst, ps.NextShowAt)
		dst = append(dst, ',')
		dst = strconv.AppendInt(dst, int64(ps.Impressions), 10)
		dst = append(dst, ',')
		dst = appendMilli(dst, ps.LastImpressionAt)
		dst = append(dst, ',')
		dst = appendMilli(dst, ps.LastClickAt)
		dst = append(dst, ',')
		dst = appendMilli(dst, ps.LastCloseAt)
	}
	return dst
}

func appendMilli(dst []byte, t time.Time) []byte {
	if t.IsZero() {
		return append(dst, '0')
	}
	return strconv.AppendInt(dst, t.UnixMilli(), 10)
}

// DecodeState parses a value written by AppendState. A state with popup entries costs one
// allocation (its PopupStates, sized from the count of separators); "1|0|0" none.
func DecodeState(b string) (popup.UserState, error) {
	var s popup.UserState
	p := parser{s: b}
	if p.field('|') != "1" {
		return s, errStateCodec
	}
	s.Day = int32(p.int('|'))
	s.DayCount = int(p.int('|'))
	for p.err == nil && p.pos < len(p.s) {
		id := p.int(',')
		if id == lastShownID {
			s.Holdout.Day = int32(p.int(','))
			s.Holdout.Phase = int32(p.int(','))
			s.LastShownAt = p.milli(',')
			p.int(',')
			p.int('|')
			continue
		}
		if s.Popups == nil && p.pos < len(p.s) {
			// This entry and one per separator after it: the one allocation.
			s.Popups = make(popup.PopupStates, 0, strings.Count(p.s[p.pos:], "|")+1)
		}
		var ps popup.PopupState
		ps.NextShowAt = p.milli(',')
		ps.Impressions = int(p.int(','))
		ps.LastImpressionAt = p.milli(',')
		ps.LastClickAt = p.milli(',')
		ps.LastCloseAt = p.milli('|')
		if n := len(s.Popups); n == 0 || s.Popups[n-1].ID < id {
			s.Popups = append(s.Popups, popup.PopupEntry{ID: id, PopupState: ps})
		} else {
			s.Popups.Set(id, ps) // out of order or repeated: kept sorted, the last one wins
		}
	}
	if p.err != nil {
		return popup.UserState{}, p.err
	}
	return s, nil
}

type parser struct {
	s   string
	pos int
	err error
}

func (p *parser) field(sep byte) string {
	if p.err != nil {
		return ""
	}
	if p.pos > len(p.s) {
		p.err = errStateCodec
		return ""
	}
	start := p.pos
	for p.pos < len(p.s) && p.s[p.pos] != sep {
		p.pos++
	}
	f := p.s[start:p.pos]
	p.pos++ // skip the separator (or step past the end)
	return f
}

func (p *parser) int(sep byte) int64 {
	f := p.field(sep)
	if p.err != nil {
		return 0
	}
	n, err := strconv.ParseInt(f, 10, 64)
	if err != nil {
		p.err = errStateCodec
	}
	return n
}

func (p *parser) milli(sep byte) time.Time {
	ms := p.int(sep)
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}
