package snapshot

import (
	"encoding/json"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/audience"
	"popupsvc/internal/event"
	"popupsvc/internal/popup"
)

var t0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

// randomPopups makes n valid popups with a spread of statuses, windows and targeting.
func randomPopups(rng *rand.Rand, n int) []popup.Popup {
	pls := []string{"ios", "android", "web"}
	regions := []string{"cn", "US", "de", "jp"}
	out := make([]popup.Popup, 0, n)
	for i := 1; i <= n; i++ {
		in := popup.Input{Name: "p" + strconv.Itoa(i)}
		prio := rng.IntN(5)
		in.Priority = &prio
		st := []popup.Status{popup.StatusActive, popup.StatusActive, popup.StatusActive, popup.StatusPaused, popup.StatusDraft}[rng.IntN(5)]
		in.Status = &st
		t := &popup.TargetingInput{}
		if rng.IntN(2) == 0 {
			t.Platforms = []string{pls[rng.IntN(3)]}
		}
		if rng.IntN(2) == 0 {
			t.Regions = []string{regions[rng.IntN(4)], regions[rng.IntN(4)]}
		}
		t.Placements = [][]string{nil, {"checkout"}, {"home", "checkout"}}[rng.IntN(3)]
		if rng.IntN(4) == 0 {
			t.Trigger = &popup.Trigger{Event: "purchase"}
		}
		in.Targeting = t
		switch rng.IntN(4) {
		case 0:
			end := t0.Add(-time.Hour)
			in.EndAt = &end
		case 1:
			start := t0.Add(time.Hour)
			in.StartAt = &start
		}
		p, err := in.BuildWith(popup.LinkSchemes{})
		if err != nil {
			panic(err)
		}
		p.ID = int64(i)
		out = append(out, p)
	}
	return out
}

// TestCandidatesNeverChangeTheDecision: selecting from the index gives the same popup as
// selecting from every active popup, for every placement, event, platform and region, including
// ones no config names.
func TestCandidatesNeverChangeTheDecision(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	for round := 0; round < 50; round++ {
		s := BuildWith(int64(round), randomPopups(rng, 40), t0, popup.LinkSchemes{}, nil)
		require.Empty(t, s.Problems)
		for _, where := range []popup.Where{{}, {Placement: "home"}, {Placement: "checkout"}, {Placement: "nowhere"},
			{Event: "purchase"}, {Placement: "checkout", Event: "purchase"}, {Event: "other"}} {
			for _, pl := range []string{"ios", "android", "web"} {
				for _, region := range []string{"", "cn", "CN", "us", "de", "jp", "fr"} {
					for _, now := range []time.Time{t0, t0.Add(2 * time.Hour)} {
						req := popup.Request{UID: "u" + strconv.Itoa(round), Platform: pl, Region: region, Where: where}
						want := popup.Select(s.Ordered, req, nil, now, popup.Pacing{})
						got := popup.Select(s.Candidates(&req), req, nil, now, popup.Pacing{})
						assert.Same(t, want, got, "round %d %+v %s/%q", round, where, pl, region)
					}
				}
			}
		}
	}
}

func TestBuildPreEncodesThePublicShape(t *testing.T) {
	t.Parallel()
	p, err := popup.Input{Name: "x", Creative: popup.Creative{Title: "T", Buttons: []popup.Button{{Text: "Go", LinkURL: "https://e.com/go"}}}}.BuildWith(popup.LinkSchemes{})
	require.NoError(t, err)
	p.ID = 7
	s := BuildWith(3, []popup.Popup{p}, t0, popup.LinkSchemes{}, nil)
	var got map[string]any
	require.NoError(t, json.Unmarshal(s.Entry(7).JSON, &got))
	assert.Equal(t, map[string]any{"id": float64(7), "title": "T", "content": "", "image_url": "", "link_url": "",
		"buttons": []any{map[string]any{"text": "Go", "link_url": "https://e.com/go"}}, "ext": map[string]any{}}, got)
	assert.Nil(t, s.Entry(8))
}

func TestBuildLeavesOutStoredLinksTheAllowListRefuses(t *testing.T) {
	t.Parallel()
	ok, err := popup.Input{Name: "ok", Creative: popup.Creative{LinkURL: "https://e.com"}}.BuildWith(popup.LinkSchemes{})
	require.NoError(t, err)
	ok.ID = 1
	deepLink := ok
	deepLink.ID, deepLink.LinkURL = 2, "myapp://home"
	// Rows stored before links were checked against an allow-list.
	script := ok
	script.ID, script.LinkURL = 3, "javascript://%0aalert(1)"
	buttonScript := ok
	buttonScript.ID, buttonScript.Buttons = 4, []popup.Button{{Text: "Go", LinkURL: "JAVASCRIPT://%0aalert(1)"}}
	stored := []popup.Popup{ok, deepLink, script, buttonScript}
	myapp, err := popup.ParseLinkSchemes([]string{"https", "myapp"})
	require.NoError(t, err)

	web := BuildWith(1, stored, t0, popup.LinkSchemes{}, nil)
	withApp := BuildWith(1, stored, t0, myapp, nil)

	assert.NotNil(t, web.Entry(1))
	assert.Nil(t, web.Entry(2), "an app scheme is refused unless configured")
	assert.NotNil(t, withApp.Entry(2))
	for _, s := range []*Snapshot{web, withApp} {
		assert.Nil(t, s.Entry(3), "a javascript link is never served")
		assert.Nil(t, s.Entry(4), "nor a javascript button")
	}
	require.Len(t, web.Problems, 3)
	assert.ErrorContains(t, web.Problems[0], `popup 2: invalid popup: link_url: scheme "myapp" is not allowed`)
	assert.ErrorContains(t, web.Problems[2], `popup 4: invalid popup: buttons[0].link_url: scheme "javascript" is not allowed`)
	assert.Len(t, withApp.Problems, 2)
}

func TestHolderNeverGoesBack(t *testing.T) {
	t.Parallel()
	var h Holder
	assert.True(t, h.Store(BuildWith(2, nil, t0, popup.LinkSchemes{}, nil)))
	assert.False(t, h.Store(BuildWith(1, nil, t0, popup.LinkSchemes{}, nil)))
	assert.EqualValues(t, 2, h.Load().Version)
	assert.True(t, h.Store(BuildWith(3, nil, t0, popup.LinkSchemes{}, nil)))
}

// TestHolderKeepsTheConfigOfAVersionThatChangesNothing: a snapshot keeps the current one's
// Config when it is of the same version (new audience sets) or of a version whose popups,
// pacing and holdout are the same (an audience's new members, announced); anything else that
// changes them is a new Config.
func TestHolderKeepsTheConfigOfAVersionThatChangesNothing(t *testing.T) {
	t.Parallel()
	start := t0.Add(time.Hour)
	base := func() []popup.Popup {
		p := wherePopup(t, 1, 5, popup.TargetingInput{Audiences: popup.AudienceRefs{Include: []int64{1}}})
		p.StartAt = &start
		return []popup.Popup{p, wherePopup(t, 2, 4, popup.TargetingInput{})}
	}
	tests := []struct {
		name     string
		version  int64
		edit     func(s *[]popup.Popup, pace *popup.Pacing, hold *popup.Holdout)
		sameConf bool
	}{
		{"the same version (new audience sets)", 1, nil, true},
		{"another version, the same popups and settings", 2, nil, true},
		{"another version, a start at the same instant elsewhere", 2, func(s *[]popup.Popup, _ *popup.Pacing, _ *popup.Holdout) {
			at := start.In(time.FixedZone("UTC+8", 8*3600))
			(*s)[0].StartAt = &at
		}, true},
		{"a popup's title", 2, func(s *[]popup.Popup, _ *popup.Pacing, _ *popup.Holdout) { (*s)[0].Title = "new" }, false},
		{"a popup's start", 2, func(s *[]popup.Popup, _ *popup.Pacing, _ *popup.Holdout) {
			later := start.Add(time.Second)
			(*s)[0].StartAt = &later
		}, false},
		{"a popup's audiences", 2, func(s *[]popup.Popup, _ *popup.Pacing, _ *popup.Holdout) {
			(*s)[0].Targeting.Audiences.Include = []int64{2}
		}, false},
		{"a popup removed", 2, func(s *[]popup.Popup, _ *popup.Pacing, _ *popup.Holdout) { *s = (*s)[:1] }, false},
		{"a popup paused", 2, func(s *[]popup.Popup, _ *popup.Pacing, _ *popup.Holdout) { (*s)[1].Status = popup.StatusPaused }, false},
		{"the pacing", 2, func(_ *[]popup.Popup, pace *popup.Pacing, _ *popup.Holdout) { pace.DailyCap = 3 }, false},
		{"the holdout", 2, func(_ *[]popup.Popup, _ *popup.Pacing, hold *popup.Holdout) {
			*hold = popup.Holdout{Percent: 5, Salt: "s", Phase: 1, StartedAt: t0}
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h Holder
			first := BuildWith(1, base(), t0, popup.LinkSchemes{}, nil)
			require.Empty(t, first.Problems)
			require.True(t, h.Store(first))
			popups, pace, hold := base(), popup.Pacing{}, popup.Holdout{}
			if tt.edit != nil {
				tt.edit(&popups, &pace, &hold)
			}
			next := BuildWith(tt.version, popups, t0, popup.LinkSchemes{}, audience.NewSets(1, nil, nil))
			next.Pacing = pace
			next.SetHoldout(hold)
			require.Empty(t, next.Problems)
			require.True(t, h.Store(next))
			assert.Equal(t, first.Gen+1, next.Gen)
			if tt.sameConf {
				assert.Equal(t, first.Config, next.Config)
			} else {
				assert.Equal(t, first.Config+1, next.Config)
			}
		})
	}
}

// BenchmarkSelect10k compares selection over every active popup with selection over the
// index's candidates, with 10,000 configs targeting 3 platforms x 8 regions.
func BenchmarkSelect10k(b *testing.B) {
	regions := []string{"cn", "us", "de", "jp", "br", "in", "fr", "gb"}
	pls := []string{"ios", "android", "web"}
	var popups []popup.Popup
	for i := 1; i <= 10000; i++ {
		in := popup.Input{Name: "p" + strconv.Itoa(i)}
		prio := i % 100
		in.Priority = &prio
		if i > 5 {
			rollout := 10 + i%90
			in.Targeting = &popup.TargetingInput{Platforms: []string{pls[i%3]}, Regions: []string{regions[i%8]},
				MinAppVersion: "8." + strconv.Itoa(i%12) + ".0", RolloutPercent: &rollout}
		}
		p, err := in.BuildWith(popup.LinkSchemes{})
		require.NoError(b, err)
		p.ID = int64(i)
		popups = append(popups, p)
	}
	s := BuildWith(1, popups, t0, popup.LinkSchemes{}, nil)
	v, _ := popup.ParseVersion("8.3.0")
	req := popup.Request{UID: "user-42", Platform: "android", AppVersion: v, Region: "de", Lang: "en"}
	st := &popup.UserState{}
	b.Run("all", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			popup.Select(s.Ordered, req, st, t0, popup.Pacing{})
		}
	})
	b.Run("candidates", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			popup.Select(s.Candidates(&req), req, st, t0, popup.Pacing{})
		}
	})
}

func TestBuildShowsEmptyButtonsAndExtForAPopupWithoutThem(t *testing.T) {
	t.Parallel()
	// A popup as it may come out of the Redis cache: nil slices, no ext.
	p := popup.Popup{ID: 9, Name: "bare", Status: popup.StatusActive, Targeting: popup.Targeting{RolloutPercent: 100}}
	s := BuildWith(1, []popup.Popup{p}, t0, popup.LinkSchemes{}, nil)
	require.Empty(t, s.Problems)
	assert.JSONEq(t, `{"id":9,"title":"","content":"","image_url":"","link_url":"","buttons":[],"ext":{}}`, string(s.Entry(9).JSON))
}

// TestEntryEncodesEachVariant: a popup with an experiment has, next to its own public JSON,
// each variant's: the popup's id with the variant's content.
func TestEntryEncodesEachVariant(t *testing.T) {
	t.Parallel()
	p, err := popup.Input{Name: "exp", Experiment: &popup.Experiment{Status: popup.ExperimentRunning, CoveragePercent: 100,
		Variants: []popup.Variant{
			{Key: "a", Weight: 50, Creative: popup.Creative{Title: "A", LinkURL: "https://a.example.com"}},
			{Key: "b", Weight: 50, Creative: popup.Creative{Title: "B", Buttons: []popup.Button{{Text: "Go", LinkURL: "https://b.example.com"}}, Ext: json.RawMessage(`{"k":1}`)}},
		}, Phase: 1, Salt: "3f9a0c2b7d1e4a65"}, Creative: popup.Creative{Title: "Own"}}.BuildWith(popup.LinkSchemes{})
	require.NoError(t, err)
	p.ID = 9
	plain, err := popup.Input{Name: "plain"}.BuildWith(popup.LinkSchemes{})
	require.NoError(t, err)
	plain.ID = 10
	s := BuildWith(1, []popup.Popup{p, plain}, t0, popup.LinkSchemes{}, nil)
	require.Empty(t, s.Problems)

	e := s.Entry(9)
	assert.JSONEq(t, `{"id":9,"title":"Own","content":"","image_url":"","link_url":"","buttons":[],"ext":{}}`, string(e.JSON))
	require.Len(t, e.Variants, 2)
	assert.JSONEq(t, `{"id":9,"title":"A","content":"","image_url":"","link_url":"https://a.example.com","buttons":[],"ext":{}}`, string(e.Shown(0)))
	assert.JSONEq(t, `{"id":9,"title":"B","content":"","image_url":"","link_url":"","buttons":[{"text":"Go","link_url":"https://b.example.com"}],"ext":{"k":1}}`, string(e.Shown(1)))
	assert.Equal(t, e.JSON, e.Shown(-1), "outside the experiment: the popup's own content")
	assert.Equal(t, [][]event.ArmRef{{{PopupID: 9, Salt: "3f9a0c2b7d1e4a65", Arm: "a"}}, {{PopupID: 9, Salt: "3f9a0c2b7d1e4a65", Arm: "b"}}}, e.ArmRefs)
	assert.Nil(t, s.Entry(10).Variants)
	assert.Nil(t, s.Entry(10).ArmRefs)
	assert.Equal(t, s.Entry(10).JSON, s.Entry(10).Shown(-1))
}

func TestCapExemptSaysWhetherAnActivePopupPassesThePacing(t *testing.T) {
	p := func(id int64, st popup.Status, exempt bool) popup.Popup {
		return popup.Popup{ID: id, Name: "p" + strconv.FormatInt(id, 10), Status: st, ExemptFromCaps: exempt,
			Targeting: popup.Targeting{RolloutPercent: 100}, Creative: popup.Creative{Title: "hi"}}
	}
	tests := []struct {
		name string
		give []popup.Popup
		want bool
	}{
		{"no popup exempt", []popup.Popup{p(1, popup.StatusActive, false), p(2, popup.StatusActive, false)}, false},
		{"an active notice", []popup.Popup{p(1, popup.StatusActive, false), p(2, popup.StatusActive, true)}, true},
		{"a paused notice serves nobody", []popup.Popup{p(1, popup.StatusActive, false), p(2, popup.StatusPaused, true)}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := BuildWith(1, tt.give, t0, popup.LinkSchemes{}, nil)
			require.Empty(t, s.Problems)
			assert.Equal(t, tt.want, s.CapExempt)
		})
	}
}
