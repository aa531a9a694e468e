package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"popupsvc/internal/popup"
)

// StatsReader reads operators' results (mysqlstore.StatsRepo): per popup, the days between from
// and to (UTC days, both included) that had events, and the users reached. PopupStats returns
// popup.ErrNotFound for an unknown popup; AllStats returns only popups with events in the range.
type StatsReader interface {
	PopupStats(ctx context.Context, id int64, from, to time.Time) (popup.Stats, error)
	AllStats(ctx context.Context, from, to time.Time) ([]popup.Stats, error)
}

// Stats ranges: the default is the last statsDefaultDays days ending today; longer than
// statsMaxDays is refused (a year and a leap day).
const (
	statsDefaultDays = 14
	statsMaxDays     = 366
)

type statsDay struct {
	Date        string  `json:"date"`
	Impressions int64   `json:"impressions"`
	Clicks      int64   `json:"clicks"`
	Closes      int64   `json:"closes"`
	CTR         float64 `json:"ctr"`
}

type statsTotals struct {
	Impressions  int64   `json:"impressions"`
	Clicks       int64   `json:"clicks"`
	Closes       int64   `json:"closes"`
	CTR          float64 `json:"ctr"`
	UsersReached int64   `json:"users_reached"`
}

type popupStatsBody struct {
	PopupID int64       `json:"popup_id"`
	From    string      `json:"from"`
	To      string      `json:"to"`
	Days    []statsDay  `json:"days"`
	Totals  statsTotals `json:"totals"`
}

type statsListEntry struct {
	PopupID int64 `json:"popup_id"`
	statsTotals
	Days []statsDay `json:"days,omitempty"`
}

type statsListBody struct {
	From   string           `json:"from"`
	To     string           `json:"to"`
	Popups []statsListEntry `json:"popups"`
}

// popupStats answers GET /admin/v1/popups/:id/stats: every day of the range (zeros for days
// without events) and the totals.
func (a *Admin) popupStats(c *gin.Context) {
	id, aerr := popupID(c)
	if aerr != nil {
		writeError(c, a.Log, aerr)
		return
	}
	from, to, aerr := statsRange(c, a.Now())
	if aerr != nil {
		writeError(c, a.Log, aerr)
		return
	}
	s, err := a.Stats.PopupStats(c.Request.Context(), id, from, to)
	if err != nil {
		writeError(c, a.Log, err)
		return
	}
	days, totals := statsSeries(s, from, to)
	c.JSON(http.StatusOK, popupStatsBody{PopupID: id, From: from.Format(time.DateOnly), To: to.Format(time.DateOnly), Days: days, Totals: totals})
}

// allStats answers GET /admin/v1/stats: the totals of every popup with events in the range, by
// popup id, and with days=true each popup's every day (a console's sparklines in one call).
func (a *Admin) allStats(c *gin.Context) {
	from, to, aerr := statsRange(c, a.Now())
	if aerr != nil {
		writeError(c, a.Log, aerr)
		return
	}
	withDays, aerr := parseFlag("days", c.Query("days"))
	if aerr != nil {
		writeError(c, a.Log, aerr)
		return
	}
	all, err := a.Stats.AllStats(c.Request.Context(), from, to)
	if err != nil {
		writeError(c, a.Log, err)
		return
	}
	out := statsListBody{From: from.Format(time.DateOnly), To: to.Format(time.DateOnly), Popups: make([]statsListEntry, len(all))}
	for i, s := range all {
		days, totals := statsSeries(s, from, to)
		out.Popups[i] = statsListEntry{PopupID: s.PopupID, statsTotals: totals}
		if withDays {
			out.Popups[i].Days = days
		}
	}
	c.JSON(http.StatusOK, out)
}

// statsRange reads from and to (YYYY-MM-DD, UTC days, both included). Without them the range is
// the statsDefaultDays days ending today; with one of them, it is that many days from or to it.
func statsRange(c *gin.Context, now time.Time) (from, to time.Time, aerr *apiError) {
	today := now.UTC().Truncate(24 * time.Hour)
	span := (statsDefaultDays - 1) * 24 * time.Hour
	fromQ, toQ := c.Query("from"), c.Query("to")
	if toQ != "" {
		if to, aerr = parseDay("to", toQ); aerr != nil {
			return
		}
	}
	if fromQ != "" {
		if from, aerr = parseDay("from", fromQ); aerr != nil {
			return
		}
	}
	switch {
	case fromQ == "" && toQ == "":
		to = today
		from = to.Add(-span)
	case fromQ == "":
		from = to.Add(-span)
	case toQ == "":
		to = from.Add(span)
	}
	switch {
	case to.Year() > 9999:
		return from, to, queryError("to", "must be at most 9999-12-31")
	case from.After(to):
		return from, to, queryError("from", "must not be after to")
	case to.Sub(from) >= statsMaxDays*24*time.Hour:
		return from, to, queryError("from", "the range from..to is at most 366 days")
	}
	return from, to, nil
}

func parseDay(name, v string) (time.Time, *apiError) {
	d, err := time.Parse(time.DateOnly, v)
	if err != nil {
		return d, queryError(name, "must be a date YYYY-MM-DD (UTC)")
	}
	return d, nil
}

// statsSeries spreads a popup's days with events over every day of from..to (zeros between) and
// sums them.
func statsSeries(s popup.Stats, from, to time.Time) ([]statsDay, statsTotals) {
	n := int(to.Sub(from)/(24*time.Hour)) + 1
	days := make([]statsDay, n)
	for i := range days {
		days[i].Date = from.AddDate(0, 0, i).Format(time.DateOnly)
	}
	t := statsTotals{UsersReached: s.UsersReached}
	for _, d := range s.Days {
		i := int(d.Day.UTC().Sub(from) / (24 * time.Hour))
		if i < 0 || i >= n {
			continue
		}
		days[i] = statsDay{Date: days[i].Date, Impressions: d.Impressions, Clicks: d.Clicks, Closes: d.Closes, CTR: popup.CTR(d.Clicks, d.Impressions)}
		t.Impressions += d.Impressions
		t.Clicks += d.Clicks
		t.Closes += d.Closes
	}
	t.CTR = popup.CTR(t.Clicks, t.Impressions)
	return days, t
}
