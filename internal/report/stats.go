package report

import "time"

// DayCount is what one popup's events were on one day of the asked time zone: the events the
// action log accepted (each event once, however often the worker wrote it).
type DayCount struct {
	Day         time.Time // the day's first instant, in the asked zone
	Impressions int64
	Clicks      int64
	Closes      int64
	// Buttons holds the clicks per named button (0-based index); the rest of Clicks named none
	// ("unspecified", see Unspecified).
	Buttons map[int]int64
	// Users is the number of distinct users shown the popup that day, from the action log; nil
	// when the log no longer keeps the whole day.
	Users *int64
	// Complete is false when the counts may be short: a day of a zone other than UTC that overlaps
	// a UTC day whose quarter-hour counts are missing (before the log was kept when they were
	// installed). The counts are then what is known, a lower bound.
	Complete bool
}

// Unspecified is the clicks that named no button.
func (d *DayCount) Unspecified() int64 {
	n := d.Clicks
	for _, c := range d.Buttons {
		n -= c
	}
	return n
}

// Stats is one popup's results over a range of days: every day of the range in order, the
// distinct users shown it over the whole range, and the users who have seen it at least once,
// ever.
type Stats struct {
	PopupID      int64
	Days         []DayCount
	Users        *int64 // nil when the action log no longer keeps the whole range
	UsersReached int64
	// Locales are the range's impressions and clicks per locale shown (one popup's results only),
	// of the events that have one: what they do not add up to of the totals has no known locale.
	Locales []LocaleCount
}

// LocaleCount is a popup's results in one locale over a range of days: the impressions the
// answer showed in it, the clicks on those impressions (a click counts under its impression's
// locale), and the distinct users shown it in that locale (a user shown two locales counts in
// each); Users is nil when the action log no longer keeps the whole range.
type LocaleCount struct {
	Locale      string // a translation's tag or popup.DefaultLocale
	Impressions int64
	Clicks      int64
	Users       *int64
}

// StatsQuery is a range of whole days in a time zone.
type StatsQuery struct {
	// Bounds are the range's day boundaries: Bounds[i] is day i's first instant and Bounds[i+1]
	// the next day's (DayBounds).
	Bounds []time.Time
	// UTC says the days are UTC days (the contract's popup_daily_stats answers them whole).
	UTC bool
	// LogKeptSince is the oldest instant the action log is known to keep (now minus its
	// retention): unique users are counted for the days that start at or after it.
	LogKeptSince time.Time
	// Uniques asks for the distinct users (one popup's results; the all-popups list does not).
	Uniques bool
}

// Days is the number of days in the range.
func (q StatsQuery) Days() int { return len(q.Bounds) - 1 }

// DayBounds returns the first instant of every day from..to (dates, both included) in loc, and
// the first instant of the day after to: len = days + 1. A day is 23 or 25 hours on a daylight
// saving change; a midnight that does not exist (a change at midnight) is the first instant
// after the gap, as time.Date normalizes it.
func DayBounds(from, to time.Time, loc *time.Location) []time.Time {
	y, m, d := from.Date()
	ty, tm, td := to.Date()
	last := time.Date(ty, tm, td, 0, 0, 0, 0, time.UTC)
	var out []time.Time
	for i := 0; ; i++ {
		day := time.Date(y, m, d+i, 0, 0, 0, 0, time.UTC)
		out = append(out, time.Date(day.Year(), day.Month(), day.Day(), 0, 0, 0, 0, loc))
		if day.After(last) {
			return out
		}
	}
}

// CTR is clicks per impression; 0 without impressions.
func CTR(clicks, impressions int64) float64 {
	if impressions == 0 {
		return 0
	}
	return float64(clicks) / float64(impressions)
}

// CloseRate is closes per impression; 0 without impressions.
func CloseRate(closes, impressions int64) float64 { return CTR(closes, impressions) }
