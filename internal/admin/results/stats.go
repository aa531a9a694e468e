package results

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"popupsvc/internal/httpapi"
	"popupsvc/internal/popup"
	"popupsvc/internal/report"
)

// StatsReader reads operators' results (mysqlstore.StatsRepo) over the days of a
// report.StatsQuery: per popup, every day of it, and the users reached. PopupStats returns
// popup.ErrNotFound for an unknown popup and counts unique users when the query asks; AllStats
// returns only popups with events in the range.
type StatsReader interface {
	PopupStats(ctx context.Context, id int64, q report.StatsQuery) (report.Stats, error)
	AllStats(ctx context.Context, q report.StatsQuery) ([]report.Stats, error)
}

// Stats ranges: the default is the last statsDefaultDays days ending today; longer than
// statsMaxDays is refused (a year and a leap day).
const (
	statsDefaultDays = 14
	statsMaxDays     = 366
)

// buttonClicks is one column of the clicks per button: Button nil is "unspecified" (clicks that
// named no button); Text is the button's current text, in the totals only.
type buttonClicks struct {
	Button *int    `json:"button"`
	Text   *string `json:"text,omitempty"`
	Clicks int64   `json:"clicks"`
}

type statsDay struct {
	Date           string         `json:"date"`
	Impressions    int64          `json:"impressions"`
	Users          *int64         `json:"users"`
	Clicks         int64          `json:"clicks"`
	Closes         int64          `json:"closes"`
	CTR            float64        `json:"ctr"`
	CloseRate      float64        `json:"close_rate"`
	ClicksByButton []buttonClicks `json:"clicks_by_button,omitempty"`
	Complete       bool           `json:"complete"`
}

type statsTotals struct {
	Impressions    int64          `json:"impressions"`
	Users          *int64         `json:"users"` // distinct over the range; null when the log does not keep all of it
	Clicks         int64          `json:"clicks"`
	Closes         int64          `json:"closes"`
	CTR            float64        `json:"ctr"`
	CloseRate      float64        `json:"close_rate"`
	UsersReached   int64          `json:"users_reached"`
	ClicksByButton []buttonClicks `json:"clicks_by_button"`
	Complete       bool           `json:"complete"`
}

type popupStatsBody struct {
	PopupID         int64          `json:"popup_id"`
	From            string         `json:"from"`
	To              string         `json:"to"`
	TimeZone        string         `json:"time_zone"`
	UniquesComplete bool           `json:"uniques_complete"`
	Days            []statsDay     `json:"days"`
	Totals          statsTotals    `json:"totals"`
	ByLocale        []localeResult `json:"by_locale"`
	// Goals are the popup's conversions on every goal over the range (docs/CONTRACT.md §8
	// "Conversions"), by key.
	Goals []campaignGoalBody `json:"goals"`
}

// CampaignGoals reads a popup's conversions on goals between two instants
// (mysqlstore.StatsRepo.CampaignGoals).
type CampaignGoals interface {
	CampaignGoals(ctx context.Context, id int64, goals []popup.Goal, from, to time.Time) ([]report.CampaignGoal, error)
}

// campaignGoalBody is a popup's conversions on one goal: after being shown the popup, and after
// clicking it, within the goal's window; complete is false when the windows reach before what
// the action log keeps.
type campaignGoalBody struct {
	Goal        string                  `json:"goal"`
	Name        string                  `json:"name"`
	WindowHours int64                   `json:"window_hours"`
	Value       string                  `json:"value"`
	Shown       campaignConversionsBody `json:"shown"`
	Clicked     campaignConversionsBody `json:"clicked"`
	Complete    bool                    `json:"complete"`
}

// campaignConversionsBody: MeanValue is the value per converted user (null without one, or for a
// goal without values); the capped ones are those of the users' values capped at the goal's
// value_cap (null without a cap).
type campaignConversionsBody struct {
	ConvertedUsers  int64    `json:"converted_users"`
	Conversions     int64    `json:"conversions"`
	ValueSum        float64  `json:"value_sum"`
	MeanValue       *float64 `json:"mean_value"`
	ValueSumCapped  *float64 `json:"value_sum_capped"`
	MeanValueCapped *float64 `json:"mean_value_capped"`
}

func campaignConversionsToWire(g popup.Goal, c report.CampaignConversions) campaignConversionsBody {
	w := campaignConversionsBody{ConvertedUsers: c.ConvertedUsers, Conversions: c.Conversions, ValueSum: c.ValueSum}
	if g.Value == popup.GoalValueSum && c.ConvertedUsers > 0 {
		w.MeanValue = finite(c.ValueSum / float64(c.ConvertedUsers))
	}
	if g.Value == popup.GoalValueSum && g.ValueCap != nil && c.ValueSumCapped != nil {
		w.ValueSumCapped = finite(*c.ValueSumCapped)
		if c.ConvertedUsers > 0 {
			w.MeanValueCapped = finite(*c.ValueSumCapped / float64(c.ConvertedUsers))
		}
	}
	return w
}

// campaignGoals is popup id's conversions on every goal over p's range: the conversions whose
// time falls in its days; none when the server has no goals.
func (a *API) campaignGoals(ctx context.Context, id int64, p statsParams) ([]campaignGoalBody, error) {
	out := []campaignGoalBody{}
	if a.Reports.Goals == nil || a.CampaignGoals == nil {
		return out, nil
	}
	goals, err := a.Reports.Goals.List(ctx)
	if err != nil || len(goals) == 0 {
		return out, err
	}
	slices.SortFunc(goals, func(x, y popup.Goal) int { return strings.Compare(x.Key, y.Key) })
	from, to := p.q.Bounds[0], p.q.Bounds[len(p.q.Bounds)-1]
	got, err := a.CampaignGoals.CampaignGoals(ctx, id, goals, from, to)
	if err != nil {
		return nil, err
	}
	for _, c := range got {
		out = append(out, campaignGoalBody{Goal: c.Goal.Key, Name: c.Goal.Name, WindowHours: int64(c.Goal.Window / time.Hour),
			Value: string(c.Goal.Value), Shown: campaignConversionsToWire(c.Goal, c.Shown), Clicked: campaignConversionsToWire(c.Goal, c.Clicked),
			Complete: !from.Add(-c.Goal.Window).Before(p.q.LogKeptSince)})
	}
	return out, nil
}

// localeResult is the range's results in one locale shown; Locale nil is the events no locale
// is known for (docs/CONTRACT.md §8 "Results per locale"), whose users are not counted.
type localeResult struct {
	Locale      *string `json:"locale"`
	Impressions int64   `json:"impressions"`
	Users       *int64  `json:"users"`
	Clicks      int64   `json:"clicks"`
	CTR         float64 `json:"ctr"`
}

// statsListEntry is one popup of the all-popups list: its totals without unique users or clicks
// per button (those read one popup's log and config).
type statsListEntry struct {
	PopupID      int64      `json:"popup_id"`
	Impressions  int64      `json:"impressions"`
	Clicks       int64      `json:"clicks"`
	Closes       int64      `json:"closes"`
	CTR          float64    `json:"ctr"`
	CloseRate    float64    `json:"close_rate"`
	UsersReached int64      `json:"users_reached"`
	Complete     bool       `json:"complete"`
	Days         []statsDay `json:"days,omitempty"`
}

type statsListBody struct {
	From     string           `json:"from"`
	To       string           `json:"to"`
	TimeZone string           `json:"time_zone"`
	Popups   []statsListEntry `json:"popups"`
}

// statsParams are the parsed parameters of a stats request.
type statsParams struct {
	from, to time.Time // dates (midnight UTC stands for the date)
	zone     string
	q        report.StatsQuery
}

// popupStats answers GET /admin/v1/popups/:id/stats: every day of the range in the zone, its
// unique users where the action log keeps them, clicks per button, and the totals.
func (a *API) popupStats(c *gin.Context) {
	body, err := a.popupResults(c)
	if err != nil {
		a.Fail(c, err)
		return
	}
	c.JSON(http.StatusOK, body)
}

// popupStatsCSV answers GET /admin/v1/popups/:id/stats.csv: the JSON route's answer as a table,
// one row per day and a totals row. Bad parameters get the JSON route's 400.
func (a *API) popupStatsCSV(c *gin.Context) {
	body, err := a.popupResults(c)
	if err != nil {
		a.Fail(c, err)
		return
	}
	var buf bytes.Buffer
	writeStatsCSV(&buf, body)
	c.Header("Content-Disposition", `attachment; filename="popup-`+strconv.FormatInt(body.PopupID, 10)+`-`+body.From+`-`+body.To+`.csv"`)
	c.Data(http.StatusOK, "text/csv; charset=utf-8", buf.Bytes())
}

// popupResults reads one popup's results as both routes answer them.
func (a *API) popupResults(c *gin.Context) (popupStatsBody, error) {
	id, aerr := httpapi.PopupID(c)
	if aerr != nil {
		return popupStatsBody{}, aerr
	}
	ctx := c.Request.Context()
	p, err := a.statsParams(c)
	if err != nil {
		return popupStatsBody{}, err
	}
	p.q.Uniques = true
	s, err := a.Stats.PopupStats(ctx, id, p.q)
	if err != nil {
		return popupStatsBody{}, err
	}
	var buttons []popup.Button
	if cur, err := a.Reports.Repo.Get(ctx, id); err == nil {
		buttons = cur.Buttons
	} else if !errors.Is(err, popup.ErrNotFound) {
		return popupStatsBody{}, err
	}
	goals, err := a.campaignGoals(ctx, id, p)
	if err != nil {
		return popupStatsBody{}, err
	}
	days, totals := statsSeries(s, buttonColumns(s, buttons))
	totals.Users = s.Users
	return popupStatsBody{PopupID: id, From: p.from.Format(time.DateOnly), To: p.to.Format(time.DateOnly), TimeZone: p.zone,
		UniquesComplete: s.Users != nil, Days: days, Totals: totals, ByLocale: byLocale(s.Locales, totals), Goals: goals}, nil
}

// byLocale is the results per locale shown, in the store's order, then what the totals hold
// beyond them (impressions recorded without a locale, clicks whose impression was not found) as
// the entry of locale null, when there is any: the entries add up to the totals.
func byLocale(locales []report.LocaleCount, t statsTotals) []localeResult {
	out := make([]localeResult, 0, len(locales)+1)
	imp, clk := t.Impressions, t.Clicks
	for i := range locales {
		l := &locales[i]
		out = append(out, localeResult{Locale: &l.Locale, Impressions: l.Impressions, Users: l.Users, Clicks: l.Clicks,
			CTR: report.CTR(l.Clicks, l.Impressions)})
		imp -= l.Impressions
		clk -= l.Clicks
	}
	if imp > 0 || clk > 0 {
		imp, clk = max(imp, 0), max(clk, 0)
		out = append(out, localeResult{Impressions: imp, Clicks: clk, CTR: report.CTR(clk, imp)})
	}
	return out
}

// allStats answers GET /admin/v1/stats: the totals of every popup with events in the range, by
// popup id, and with days=true each popup's every day (a console's sparklines in one call).
func (a *API) allStats(c *gin.Context) {
	p, err := a.statsParams(c)
	if err != nil {
		a.Fail(c, err)
		return
	}
	withDays, aerr := httpapi.ParseFlag("days", c.Query("days"))
	if aerr != nil {
		a.Fail(c, aerr)
		return
	}
	all, err := a.Stats.AllStats(c.Request.Context(), p.q)
	if err != nil {
		a.Fail(c, err)
		return
	}
	out := statsListBody{From: p.from.Format(time.DateOnly), To: p.to.Format(time.DateOnly), TimeZone: p.zone,
		Popups: make([]statsListEntry, len(all))}
	for i, s := range all {
		days, t := statsSeries(s, nil)
		out.Popups[i] = statsListEntry{PopupID: s.PopupID, Impressions: t.Impressions, Clicks: t.Clicks, Closes: t.Closes,
			CTR: t.CTR, CloseRate: t.CloseRate, UsersReached: t.UsersReached, Complete: t.Complete}
		if withDays {
			out.Popups[i].Days = days
		}
	}
	c.JSON(http.StatusOK, out)
}

// statsParams reads tz (an IANA name; the reporting time zone by default) and the date range
// in it.
func (a *API) statsParams(c *gin.Context) (statsParams, error) {
	var p statsParams
	zone, loc, err := a.resultsZone(c)
	if err != nil {
		return p, err
	}
	p.zone = zone
	from, to, aerr := statsRange(c, a.Now().In(loc))
	if aerr != nil {
		return p, aerr
	}
	p.from, p.to = from, to
	retention := a.LogRetention
	if retention <= 0 {
		retention = defaultLogRetention
	}
	p.q = report.StatsQuery{Bounds: report.DayBounds(from, to, loc), UTC: loc == time.UTC || p.zone == "UTC",
		LogKeptSince: a.Now().Add(-retention)}
	return p, nil
}

// resultsZone reads tz (an IANA name; the reporting time zone by default): the zone whose days
// results are counted in.
func (a *API) resultsZone(c *gin.Context) (string, *time.Location, error) {
	zone, given := c.GetQuery("tz")
	if !given {
		var err error
		if zone, err = a.Zones.ReportingTimeZone(c.Request.Context()); err != nil {
			return "", nil, err
		}
	}
	loc, msg := httpapi.LoadZone(zone)
	if msg != "" {
		return "", nil, httpapi.QueryError("tz", msg)
	}
	return zone, loc, nil
}

// defaultLogRetention is POPUP_ACTION_LOG_RETENTION's default, for an Admin built without it.
const defaultLogRetention = 720 * time.Hour

// statsRange reads from and to (YYYY-MM-DD, days of the zone of now, both included). Without
// them the range is the statsDefaultDays days ending today; with one of them, it is that many
// days from or to it. The dates come back as midnight UTC of the same calendar dates.
func statsRange(c *gin.Context, now time.Time) (from, to time.Time, aerr *httpapi.Error) {
	y, m, d := now.Date()
	today := time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
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
	return from, to, checkRange(from, to)
}

// checkRange refuses a range of dates from..to that is reversed, out of bounds or over
// statsMaxDays, naming the parameter.
func checkRange(from, to time.Time) *httpapi.Error {
	switch {
	case to.Year() > 9999:
		return httpapi.QueryError("to", "must be at most 9999-12-31")
	case from.Year() < 1970:
		return httpapi.QueryError("from", "must be 1970-01-01 or later")
	case from.After(to):
		return httpapi.QueryError("from", "must not be after to")
	case to.Sub(from) >= statsMaxDays*24*time.Hour:
		return httpapi.QueryError("from", "the range from..to is at most 366 days")
	}
	return nil
}

func parseDay(name, v string) (time.Time, *httpapi.Error) {
	d, err := time.Parse(time.DateOnly, v)
	if err != nil {
		return d, httpapi.QueryError(name, "must be a date YYYY-MM-DD (a day of the time zone tz)")
	}
	return d, nil
}

// buttonCol is one column of clicks per button: index -1 is "unspecified".
type buttonCol struct {
	index int
	text  string
}

// buttonColumns lists the button columns of a popup's results: its current buttons, any other
// index clicked in the range (a button since removed, text ""), then "unspecified".
func buttonColumns(s report.Stats, buttons []popup.Button) []buttonCol {
	n := len(buttons)
	for _, d := range s.Days {
		for i := range d.Buttons {
			n = max(n, i+1)
		}
	}
	cols := make([]buttonCol, 0, n+1)
	for i := range n {
		col := buttonCol{index: i}
		if i < len(buttons) {
			col.text = buttons[i].Text
		}
		cols = append(cols, col)
	}
	return append(cols, buttonCol{index: -1, text: "unspecified"})
}

// statsSeries turns a popup's days into the answer's days and totals; cols, when not nil, adds
// the clicks per button.
func statsSeries(s report.Stats, cols []buttonCol) ([]statsDay, statsTotals) {
	days := make([]statsDay, len(s.Days))
	t := statsTotals{UsersReached: s.UsersReached, Complete: true}
	var totalByCol []int64
	if cols != nil {
		totalByCol = make([]int64, len(cols))
	}
	for i := range s.Days {
		d := &s.Days[i]
		days[i] = statsDay{Date: d.Day.Format(time.DateOnly), Impressions: d.Impressions, Users: d.Users, Clicks: d.Clicks,
			Closes: d.Closes, CTR: report.CTR(d.Clicks, d.Impressions), CloseRate: report.CloseRate(d.Closes, d.Impressions), Complete: d.Complete}
		if cols != nil {
			days[i].ClicksByButton = make([]buttonClicks, len(cols))
			for j, col := range cols {
				n := d.Unspecified()
				bc := buttonClicks{}
				if col.index >= 0 {
					n = d.Buttons[col.index]
					bc.Button = &cols[j].index
				}
				bc.Clicks = n
				days[i].ClicksByButton[j] = bc
				totalByCol[j] += n
			}
		}
		t.Impressions += d.Impressions
		t.Clicks += d.Clicks
		t.Closes += d.Closes
		t.Complete = t.Complete && d.Complete
	}
	t.CTR = report.CTR(t.Clicks, t.Impressions)
	t.CloseRate = report.CloseRate(t.Closes, t.Impressions)
	for j := range cols {
		bc := buttonClicks{Text: &cols[j].text, Clicks: totalByCol[j]}
		if cols[j].index >= 0 {
			bc.Button = &cols[j].index
		}
		t.ClicksByButton = append(t.ClicksByButton, bc)
	}
	return days, t
}

// writeStatsCSV writes b as CSV: a header row, one row per day, a totals row. Users is empty
// where the JSON has null.
func writeStatsCSV(w io.Writer, b popupStatsBody) {
	cw := csv.NewWriter(w)
	head := []string{"date", "impressions", "users", "clicks", "closes", "ctr", "close_rate"}
	for _, bc := range b.Totals.ClicksByButton {
		if bc.Button == nil {
			head = append(head, "clicks unspecified")
			continue
		}
		// Every header cell starts with "clicks": a spreadsheet never runs a button's text as a formula.
		head = append(head, "clicks button "+strconv.Itoa(*bc.Button)+": "+*bc.Text)
	}
	head = append(head, "complete")
	_ = cw.Write(head) // a bytes.Buffer does not fail
	row := func(date string, imp int64, users *int64, clk, cls int64, ctr, closeRate float64, buttons []buttonClicks, complete bool) []string {
		r := []string{date, strconv.FormatInt(imp, 10), "", strconv.FormatInt(clk, 10), strconv.FormatInt(cls, 10),
			strconv.FormatFloat(ctr, 'g', -1, 64), strconv.FormatFloat(closeRate, 'g', -1, 64)}
		if users != nil {
			r[2] = strconv.FormatInt(*users, 10)
		}
		for _, bc := range buttons {
			r = append(r, strconv.FormatInt(bc.Clicks, 10))
		}
		return append(r, strconv.FormatBool(complete))
	}
	for _, d := range b.Days {
		_ = cw.Write(row(d.Date, d.Impressions, d.Users, d.Clicks, d.Closes, d.CTR, d.CloseRate, d.ClicksByButton, d.Complete))
	}
	t := b.Totals
	_ = cw.Write(row("total", t.Impressions, t.Users, t.Clicks, t.Closes, t.CTR, t.CloseRate, t.ClicksByButton, t.Complete))
	// Then one row per locale (the JSON's by_locale): its impressions, users, clicks and ctr in
	// those columns, the others empty; "locale: unknown" for the entry of locale null.
	for _, l := range b.ByLocale {
		r := make([]string, len(head))
		r[0] = "locale: unknown"
		if l.Locale != nil {
			r[0] = "locale: " + *l.Locale
		}
		r[1], r[3], r[5] = strconv.FormatInt(l.Impressions, 10), strconv.FormatInt(l.Clicks, 10), strconv.FormatFloat(l.CTR, 'g', -1, 64)
		if l.Users != nil {
			r[2] = strconv.FormatInt(*l.Users, 10)
		}
		_ = cw.Write(r)
	}
	// Then, with goals, a table of its own: a header row and per goal a row of the conversions
	// after being shown the popup and one after clicking it, padded to the file's width (every
	// row of a CSV has as many cells).
	pad := func(r []string) []string {
		for len(r) < len(head) {
			r = append(r, "")
		}
		return r
	}
	if len(b.Goals) > 0 {
		_ = cw.Write(pad([]string{"goal", "attributed after", "converted users", "conversions", "value sum", "value per converted user", "window hours", "complete"}))
		for _, g := range b.Goals {
			for _, x := range []struct {
				after string
				c     campaignConversionsBody
			}{{"shown", g.Shown}, {"clicked", g.Clicked}} {
				mean := ""
				if x.c.MeanValue != nil {
					mean = strconv.FormatFloat(*x.c.MeanValue, 'g', -1, 64)
				}
				_ = cw.Write(pad([]string{"goal: " + g.Goal, x.after, strconv.FormatInt(x.c.ConvertedUsers, 10), strconv.FormatInt(x.c.Conversions, 10),
					strconv.FormatFloat(x.c.ValueSum, 'g', -1, 64), mean, strconv.FormatInt(g.WindowHours, 10), strconv.FormatBool(g.Complete)}))
			}
		}
	}
	cw.Flush()
}
