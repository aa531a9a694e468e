package browsertest

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/apiserver/apitest"
	"popupsvc/internal/event"
	"popupsvc/internal/mysqlstore"
)

// The results page's table per locale shown (issue 37, item 4) and the experiment page's days in
// the team's reporting time zone (issue 41, item 6).

func TestConsoleResultsPerLocale(t *testing.T) {
	t.Parallel()
	cfg := apitest.Config(t)
	in := apitest.Start(t, cfg, nil)
	apitest.StartWorker(t, cfg)
	id := in.CreatePopup(t, apitest.PopupSpec("per-locale", map[string]any{"image_url": "", "translations": map[string]any{
		"pt-BR": map[string]any{"title": "Olá", "content": "oi", "buttons": []map[string]any{{"text": "Abrir"}}}}}))

	decisions := map[string]string{}
	for _, u := range []struct{ uid, lang string }{{"l1", "pt-BR"}, {"l2", "pt-BR"}, {"l3", "fr"}} {
		got, res := in.Get(t, "platform=ios&app_version=1&uid="+u.uid+"&lang="+u.lang)
		require.Equal(t, id, got, res.Raw)
		decisions[u.uid] = res.Body["decision_id"].(string)
	}
	for _, body := range []string{`{"uid":"l1","action":"click","decision_id":"` + decisions["l1"] + `"}`, `{"uid":"l3","action":"click"}`} {
		res := in.Action(t, id, body)
		require.Equal(t, http.StatusAccepted, res.Status, res.Raw)
	}
	path := "/admin/v1/popups/" + apitest.Itoa(id) + "/stats"
	deadline := time.Now().Add(15 * time.Second)
	for {
		res := in.AdminDo(t, http.MethodGet, path, nil)
		if totals, _ := res.Body["totals"].(map[string]any); totals["clicks"] == 2.0 {
			break
		}
		require.True(t, time.Now().Before(deadline), "the worker never counted the clicks: %s", res.Raw)
		time.Sleep(200 * time.Millisecond)
	}

	b := newBrowser(t, in)
	b.signIn()
	b.openPopup(id, 1)
	b.waitFor(`document.querySelector('#results-locales')`)
	var rows [][]string
	b.eval(`[...document.querySelectorAll('#results-locales tr')].map(tr => [...tr.children].map(c => c.textContent))`, &rows)
	assert.Equal(t, [][]string{
		{"Locale", "Impressions", "Unique users", "Clicks", "CTR"},
		{"default (the popup’s own content)", "1", "1", "0", "0.0%"},
		{"pt-BR", "2", "2", "1", "50.0%"},
		{"not known", "0", "—", "1", "0.0%"},
	}, rows, "the API's by_locale, the click that named no decision under “not known”")
	assert.Contains(t, b.text("#results-locales-note"), "without their decision id")
	b.axeCheck("results per locale")
}

func TestConsoleExperimentDaysInTheTeamsZone(t *testing.T) {
	t.Parallel()
	cfg := apitest.Config(t)
	in := apitest.Start(t, cfg, nil)
	id, salt := experimentPopup(t, in, "zoned days")
	res := in.AdminDo(t, http.MethodPut, "/admin/v1/settings", map[string]any{"reporting_time_zone": "Asia/Kolkata"})
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	ctx := context.Background()
	db, err := mysqlstore.Open(ctx, cfg.MySQLDSN, 2)
	require.NoError(t, err)
	defer db.Close()
	// Either side of Kolkata's midnight (UTC+05:30), one UTC day, as the worker counts them.
	ev := func(evID, uid string, a event.Action, at time.Time) event.Event {
		return event.Event{ID: evID, UID: uid, PopupID: id, Action: a, At: at, NextShowAt: at, Impressions: 1,
			Arms: []event.ArmRef{{PopupID: id, Salt: salt, Arm: "a"}}}
	}
	midnight := time.Date(2026, 11, 21, 0, 0, 0, 0, time.FixedZone("IST", 5*3600+1800))
	require.NoError(t, mysqlstore.NewEventWriter(db).WriteBatch(ctx, []event.Event{
		ev("x1", "k1", event.Impression, midnight.Add(-10*time.Minute)),
		ev("x2", "k2", event.Impression, midnight.Add(10*time.Minute)),
		ev("c1", "k1", event.Click, midnight.Add(5*time.Minute)),
	}))
	insertExperimentDays(t, cfg.MySQLDSN, id, salt, []knownDay{{arm: "b", day: "2026-11-18", exposedUsers: 4, exposures: 4}})

	b := newBrowser(t, in) // its own zone is Asia/Shanghai: the days are the reporting zone's
	b.signIn()
	b.openPopup(id, 2)
	b.run(chromedp.Click("#experiment-results-link", chromedp.ByQuery))
	b.waitFor(`document.querySelector('#days-table')`)
	assert.Contains(t, b.text("#days-table caption"), "Asia/Kolkata")
	var rows [][]string
	b.eval(`[...document.querySelectorAll('#days-table tbody tr')].map(tr => [tr.dataset.day, tr.dataset.zone, tr.dataset.arm, ...[...tr.children].slice(2, 4).map(c => c.textContent)])`, &rows)
	assert.Equal(t, [][]string{
		{"2026-11-18", "UTC", "b", "4", "4"},
		{"2026-11-20", "Asia/Kolkata", "a", "1", "1"},
		{"2026-11-21", "Asia/Kolkata", "a", "1", "1"},
	}, rows, "the Kolkata days either side of its midnight, the UTC day from before apart")
	var heads []string
	b.eval(`[...document.querySelectorAll('#days-table thead th')].map(th => th.textContent)`, &heads)
	assert.Equal(t, "Day (Asia/Kolkata)", heads[0])
	assert.Contains(t, b.text(`#days-table tr[data-zone="UTC"] th`), "UTC day")
	assert.Contains(t, b.text("#days-utc-note"), "UTC days")
	b.axeCheck("experiment days in the team's zone")
}
