package popup

import "time"

// DayCount is what one popup's events were on one UTC day: the events the action log accepted
// (each event once, however often the worker wrote it).
type DayCount struct {
	Day         time.Time // midnight UTC
	Impressions int64
	Clicks      int64
	Closes      int64
}

// Stats is one popup's results over a range of days: the days with events, in order (days
// without events are absent), and the users who have seen the popup at least once, ever.
type Stats struct {
	PopupID      int64
	Days         []DayCount
	UsersReached int64
}

// CTR is clicks per impression; 0 without impressions.
func CTR(clicks, impressions int64) float64 {
	if impressions == 0 {
		return 0
	}
	return float64(clicks) / float64(impressions)
}
