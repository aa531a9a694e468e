package popup_test

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/popup"
	"popupsvc/internal/popup/popuptest"
)

// now is the fixed instant every test runs at.
var now = time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)

func ptr[T any](v T) *T { return &v }

// input returns a minimal valid Input changed by mod.
func input(mod func(*popup.Input)) popup.Input {
	in := popup.Input{Name: "winter sale"}
	mod(&in)
	return in
}

func noChange(*popup.Input) {}

// compiled builds a popup from a minimal valid Input changed by mod, gives it id, and compiles it.
func compiled(t testing.TB, id int64, mod func(*popup.Input)) *popup.Compiled {
	t.Helper()
	p, err := input(mod).BuildWith(popup.LinkSchemes{})
	require.NoError(t, err)
	p.ID = id
	c, err := popup.CompileWith(p, popup.LinkSchemes{})
	require.NoError(t, err)
	return c
}

func fieldErrors(t *testing.T, err error) []popup.FieldError {
	t.Helper()
	var ve *popup.ValidationError
	require.ErrorAs(t, err, &ve)
	return ve.Fields
}

func TestBuildAppliesDefaults(t *testing.T) {
	t.Parallel()
	got, err := popup.Input{Name: "winter sale"}.BuildWith(popup.LinkSchemes{})
	require.NoError(t, err)

	want := popup.Popup{
		Name:     "winter sale",
		Status:   popup.StatusActive,
		Priority: 0,
		Targeting: popup.Targeting{
			Platforms:      []string{},
			Regions:        []string{},
			Langs:          []string{},
			RolloutPercent: 100,
			UIDs:           []string{},
		},
		ReshowAfterSeconds:   86400,
		ClickCooldownSeconds: 0,
		CloseCooldownSeconds: 86400,
		MaxImpressions:       0,
		Creative: popup.Creative{
			Buttons: []popup.Button{},
			Ext:     json.RawMessage("{}"),
		},
	}
	assert.Equal(t, want, got)
}

func TestBuildDefaultsTargetingFieldsOmittedInsideTargeting(t *testing.T) {
	t.Parallel()
	got, err := input(func(in *popup.Input) {
		in.Targeting = &popup.TargetingInput{Platforms: []string{"ios"}}
	}).BuildWith(popup.LinkSchemes{})
	require.NoError(t, err)
	assert.Equal(t, 100, got.Targeting.RolloutPercent)
	assert.Equal(t, []string{}, got.Targeting.UIDs)
}

func TestBuildCloseCooldownDefaultsToReshow(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		give popup.Input
		want int64
	}{
		{name: "default reshow", give: input(noChange), want: 86400},
		{name: "supplied reshow", give: input(func(in *popup.Input) { in.ReshowAfterSeconds = ptr[int64](3600) }), want: 3600},
		{name: "supplied zero reshow", give: input(func(in *popup.Input) { in.ReshowAfterSeconds = ptr[int64](0) }), want: 0},
		{
			name: "supplied close wins",
			give: input(func(in *popup.Input) {
				in.ReshowAfterSeconds = ptr[int64](3600)
				in.CloseCooldownSeconds = ptr[int64](60)
			}),
			want: 60,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.give.BuildWith(popup.LinkSchemes{})
			require.NoError(t, err)
			assert.Equal(t, tt.want, got.CloseCooldownSeconds)
		})
	}
}

func TestBuildKeepsSuppliedZeroValues(t *testing.T) {
	t.Parallel()
	// Pointers exist so that an explicit 0 (or -1) is not mistaken for "omitted".
	in := popup.Input{
		Name: "x", Status: ptr(popup.StatusPaused), Priority: ptr(0),
		Targeting:          &popup.TargetingInput{RolloutPercent: ptr(0)},
		ReshowAfterSeconds: ptr[int64](0), ClickCooldownSeconds: ptr[int64](-1), CloseCooldownSeconds: ptr[int64](-1),
		MaxImpressions: ptr(0), Creative: popup.Creative{Ext: json.RawMessage(`null`)},
	}

	got, err := in.BuildWith(popup.LinkSchemes{})
	require.NoError(t, err)

	assert.Equal(t, popup.StatusPaused, got.Status)
	assert.Equal(t, 0, got.Targeting.RolloutPercent)
	assert.Equal(t, int64(0), got.ReshowAfterSeconds)
	assert.Equal(t, int64(-1), got.ClickCooldownSeconds)
	assert.Equal(t, int64(-1), got.CloseCooldownSeconds)
	assert.JSONEq(t, `{}`, string(got.Ext))
}

func TestBuildNormalizes(t *testing.T) {
	t.Parallel()
	shanghai := time.FixedZone("UTC+8", 8*3600)
	start := time.Date(2026, 12, 1, 8, 0, 0, 0, shanghai)
	got, err := input(func(in *popup.Input) {
		in.StartAt = &start
		in.Ext = json.RawMessage(" { \"theme\" : \"dark\" } ")
	}).BuildWith(popup.LinkSchemes{})
	require.NoError(t, err)

	assert.Equal(t, time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), *got.StartAt)
	assert.Equal(t, time.UTC, got.StartAt.Location())
	assert.Equal(t, `{"theme":"dark"}`, string(got.Ext))
}

func TestBuiltPopupHasEmptyListsAndObjectsNotNil(t *testing.T) {
	t.Parallel()
	// Every encoding of a popup (admin API, Redis blob, MySQL columns) then shows [] and {},
	// never null, for what was left out.
	p, err := input(noChange).BuildWith(popup.LinkSchemes{})
	require.NoError(t, err)

	for name, list := range map[string][]string{"platforms": p.Targeting.Platforms, "regions": p.Targeting.Regions,
		"langs": p.Targeting.Langs, "uids": p.Targeting.UIDs} {
		assert.NotNil(t, list, name)
		assert.Empty(t, list, name)
	}
	assert.Equal(t, []popup.Button{}, p.Buttons)
	assert.Equal(t, json.RawMessage(`{}`), p.Ext)
	assert.Nil(t, p.StartAt)
	assert.Nil(t, p.EndAt)
	assert.Equal(t, popup.StatusActive, p.Status)
	assert.Equal(t, 100, p.Targeting.RolloutPercent)
}

func TestBuildAccepts(t *testing.T) {
	t.Parallel()
	start := now
	tests := []struct {
		name string
		give func(*popup.Input)
	}{
		{name: "200 character name", give: func(in *popup.Input) { in.Name = strings.Repeat("é", 200) }},
		{name: "every status", give: func(in *popup.Input) { in.Status = ptr(popup.StatusArchived) }},
		{name: "negative priority", give: func(in *popup.Input) { in.Priority = ptr(-5) }},
		{name: "only start_at", give: func(in *popup.Input) { in.StartAt = &start }},
		{name: "only end_at", give: func(in *popup.Input) { in.EndAt = &start }},
		{name: "end_at 1ns after start_at", give: func(in *popup.Input) {
			in.StartAt, in.EndAt = &start, ptr(start.Add(time.Nanosecond))
		}},
		{name: "all platforms", give: func(in *popup.Input) {
			in.Targeting = &popup.TargetingInput{Platforms: []string{"ios", "android", "web", "ios"}}
		}},
		{name: "min equals max version", give: func(in *popup.Input) {
			in.Targeting = &popup.TargetingInput{MinAppVersion: "8.10", MaxAppVersion: "8.10.0"}
		}},
		{name: "only min version", give: func(in *popup.Input) { in.Targeting = &popup.TargetingInput{MinAppVersion: "8"} }},
		{name: "only max version", give: func(in *popup.Input) { in.Targeting = &popup.TargetingInput{MaxAppVersion: "1.2.3.4"} }},
		{name: "region and lang codes", give: func(in *popup.Input) {
			in.Targeting = &popup.TargetingInput{Regions: []string{"cn", "US", "abcdefghijklmnop"}, Langs: []string{"zh-Hans", "en_US"}}
		}},
		{name: "rollout 0", give: func(in *popup.Input) { in.Targeting = &popup.TargetingInput{RolloutPercent: ptr(0)} }},
		{name: "rollout 100", give: func(in *popup.Input) { in.Targeting = &popup.TargetingInput{RolloutPercent: ptr(100)} }},
		{name: "1000 uids", give: func(in *popup.Input) { in.Targeting = &popup.TargetingInput{UIDs: uids(1000)} }},
		{name: "uid alphabet", give: func(in *popup.Input) {
			in.Targeting = &popup.TargetingInput{UIDs: []string{"qa-device_1.a:B", strings.Repeat("x", 64)}}
		}},
		{name: "zero durations", give: func(in *popup.Input) {
			in.ReshowAfterSeconds, in.ClickCooldownSeconds, in.CloseCooldownSeconds = ptr[int64](0), ptr[int64](0), ptr[int64](0)
		}},
		{name: "never again", give: func(in *popup.Input) {
			in.ClickCooldownSeconds, in.CloseCooldownSeconds = ptr[int64](-1), ptr[int64](-1)
		}},
		{name: "max impressions", give: func(in *popup.Input) { in.MaxImpressions = ptr(3) }},
		{name: "longest title and content", give: func(in *popup.Input) {
			in.Title, in.Content = strings.Repeat("标", 200), strings.Repeat("a", 4000)
		}},
		{name: "http and https", give: func(in *popup.Input) {
			in.ImageURL, in.LinkURL = "http://cdn.example.com/a.png", "https://example.com/sale?x=1#top"
		}},
		{name: "upper-case web scheme", give: func(in *popup.Input) { in.LinkURL = "HTTPS://example.com/x" }},
		{name: "IDN host and escaped path", give: func(in *popup.Input) { in.LinkURL = "https://例子.测试/%E4%BD%A0?q=1" }},
		{name: "2048 character URL", give: func(in *popup.Input) {
			in.LinkURL = "https://e.com/" + strings.Repeat("a", 2048-len("https://e.com/"))
		}},
		{name: "10 buttons", give: func(in *popup.Input) { in.Buttons = buttons(10) }},
		{name: "ext object", give: func(in *popup.Input) { in.Ext = json.RawMessage(`{"theme":"dark","n":[1,2]}`) }},
		{name: "empty ext", give: func(in *popup.Input) { in.Ext = json.RawMessage(``) }},
		{name: "int32 priorities", give: func(in *popup.Input) { in.Priority = ptr(math.MaxInt32) }},
		{name: "lowest priority", give: func(in *popup.Input) { in.Priority = ptr(math.MinInt32) }},
		{name: "most impressions", give: func(in *popup.Input) { in.MaxImpressions = ptr(math.MaxInt32) }},
		{name: "10 year durations", give: func(in *popup.Input) {
			in.ReshowAfterSeconds, in.ClickCooldownSeconds, in.CloseCooldownSeconds = ptr(popup.MaxDurationSeconds), ptr(popup.MaxDurationSeconds), ptr(popup.MaxDurationSeconds)
		}},
		{name: "window at the epoch and the last DATETIME millisecond", give: func(in *popup.Input) {
			in.StartAt = ptr(time.Unix(0, 0))
			in.EndAt = ptr(time.Date(9999, 12, 31, 23, 59, 59, 999_000_000, time.UTC))
		}},
		{name: "end_at at the last millisecond in another zone", give: func(in *popup.Input) {
			in.EndAt = ptr(time.Date(9999, 12, 31, 22, 59, 59, 0, time.FixedZone("UTC-1", -3600)))
		}},
		{name: "ext 8 levels deep", give: func(in *popup.Input) { in.Ext = json.RawMessage(nested(8)) }},
		{name: "ext brackets inside strings do not count", give: func(in *popup.Input) {
			in.Ext = json.RawMessage(`{"s":"[[[[[[[[[[{{{{{{{{\\\"]]]"}`)
		}},
		{name: "ext of 16 KiB", give: func(in *popup.Input) {
			in.Ext = json.RawMessage(`{"k":"` + strings.Repeat("a", 16<<10-len(`{"k":""}`)) + `"}`)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := input(tt.give).BuildWith(popup.LinkSchemes{})
			assert.NoError(t, err)
		})
	}
}

func TestBuildRejects(t *testing.T) {
	t.Parallel()
	start := now
	tests := []struct {
		name      string
		give      func(*popup.Input)
		wantField string
		wantMsg   string
	}{
		{"empty name", func(in *popup.Input) { in.Name = "" }, "name", "is required"},
		{"blank name", func(in *popup.Input) { in.Name = "   " }, "name", "is required"},
		{"201 character name", func(in *popup.Input) { in.Name = strings.Repeat("é", 201) }, "name", "must be at most 200 characters"},
		{"unknown status", func(in *popup.Input) { in.Status = ptr(popup.Status("live")) }, "status", "must be one of draft, active, paused, archived"},
		{"empty status", func(in *popup.Input) { in.Status = ptr(popup.Status("")) }, "status", "must be one of draft, active, paused, archived"},
		{"end_at equals start_at", func(in *popup.Input) { in.StartAt, in.EndAt = &start, &start }, "end_at", "must be after start_at"},
		{"end_at before start_at", func(in *popup.Input) {
			in.StartAt, in.EndAt = &start, ptr(start.Add(-time.Hour))
		}, "end_at", "must be after start_at"},
		{"unknown platform", func(in *popup.Input) {
			in.Targeting = &popup.TargetingInput{Platforms: []string{"ios", "linux"}}
		}, "targeting.platforms[1]", "must be one of ios, android, web"},
		{"upper-case platform", func(in *popup.Input) {
			in.Targeting = &popup.TargetingInput{Platforms: []string{"IOS"}}
		}, "targeting.platforms[0]", "must be one of ios, android, web"},
		{"bad min version", func(in *popup.Input) {
			in.Targeting = &popup.TargetingInput{MinAppVersion: "8.x"}
		}, "targeting.min_app_version", "must be a dotted numeric version such as 8.10.0"},
		{"bad max version", func(in *popup.Input) {
			in.Targeting = &popup.TargetingInput{MaxAppVersion: "1..2"}
		}, "targeting.max_app_version", "must be a dotted numeric version such as 8.10.0"},
		{"min above max numerically", func(in *popup.Input) {
			in.Targeting = &popup.TargetingInput{MinAppVersion: "8.10", MaxAppVersion: "8.9.9"}
		}, "targeting.min_app_version", "must not be greater than max_app_version"},
		{"empty region", func(in *popup.Input) {
			in.Targeting = &popup.TargetingInput{Regions: []string{""}}
		}, "targeting.regions[0]", "must be 1-16 characters of [A-Za-z0-9_-]"},
		{"17 character region", func(in *popup.Input) {
			in.Targeting = &popup.TargetingInput{Regions: []string{"cn", "abcdefghijklmnopq"}}
		}, "targeting.regions[1]", "must be 1-16 characters of [A-Za-z0-9_-]"},
		{"region with space", func(in *popup.Input) {
			in.Targeting = &popup.TargetingInput{Regions: []string{"c n"}}
		}, "targeting.regions[0]", "must be 1-16 characters of [A-Za-z0-9_-]"},
		{"lang with symbol", func(in *popup.Input) {
			in.Targeting = &popup.TargetingInput{Langs: []string{"zh*"}}
		}, "targeting.langs[0]", "must be 1-16 characters of [A-Za-z0-9_-]"},
		{"rollout below 0", func(in *popup.Input) {
			in.Targeting = &popup.TargetingInput{RolloutPercent: ptr(-1)}
		}, "targeting.rollout_percent", "must be between 0 and 100"},
		{"rollout above 100", func(in *popup.Input) {
			in.Targeting = &popup.TargetingInput{RolloutPercent: ptr(101)}
		}, "targeting.rollout_percent", "must be between 0 and 100"},
		{"1001 uids", func(in *popup.Input) {
			in.Targeting = &popup.TargetingInput{UIDs: uids(1001)}
		}, "targeting.uids", "must have at most 1000 uids"},
		{"uid with space", func(in *popup.Input) {
			in.Targeting = &popup.TargetingInput{UIDs: []string{"ok", "not ok"}}
		}, "targeting.uids[1]", "must be 1-64 characters of [A-Za-z0-9_.:-]"},
		{"65 character uid", func(in *popup.Input) {
			in.Targeting = &popup.TargetingInput{UIDs: []string{strings.Repeat("x", 65)}}
		}, "targeting.uids[0]", "must be 1-64 characters of [A-Za-z0-9_.:-]"},
		{"negative reshow", func(in *popup.Input) { in.ReshowAfterSeconds = ptr[int64](-1) }, "reshow_after_seconds", badDuration},
		{"reshow over 10 years", func(in *popup.Input) {
			in.ReshowAfterSeconds, in.CloseCooldownSeconds = ptr(popup.MaxDurationSeconds+1), ptr[int64](0)
		}, "reshow_after_seconds", badDuration},
		{"click cooldown -2", func(in *popup.Input) { in.ClickCooldownSeconds = ptr[int64](-2) }, "click_cooldown_seconds", badCooldown},
		{"click cooldown beyond int64 seconds as a Duration", func(in *popup.Input) { in.ClickCooldownSeconds = ptr[int64](math.MaxInt64) }, "click_cooldown_seconds", badCooldown},
		{"close cooldown -2", func(in *popup.Input) { in.CloseCooldownSeconds = ptr[int64](-2) }, "close_cooldown_seconds", badCooldown},
		{"close cooldown over 10 years", func(in *popup.Input) { in.CloseCooldownSeconds = ptr(popup.MaxDurationSeconds + 1) }, "close_cooldown_seconds", badCooldown},
		{"negative max impressions", func(in *popup.Input) { in.MaxImpressions = ptr(-1) }, "max_impressions", "must be between 0 (unlimited) and 2147483647"},
		{"max impressions beyond INT", func(in *popup.Input) { in.MaxImpressions = ptr(math.MaxInt32 + 1) }, "max_impressions", "must be between 0 (unlimited) and 2147483647"},
		{"priority beyond INT", func(in *popup.Input) { in.Priority = ptr(2147483648) }, "priority", "must be between -2147483648 and 2147483647"},
		{"priority below INT", func(in *popup.Input) { in.Priority = ptr(math.MinInt32 - 1) }, "priority", "must be between -2147483648 and 2147483647"},
		{"start_at in year 0", func(in *popup.Input) { in.StartAt = ptr(time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC)) }, "start_at", badTime},
		{"start_at before the epoch", func(in *popup.Input) { in.StartAt = ptr(time.Unix(-1, 0)) }, "start_at", badTime},
		{"end_at past year 9999 once in UTC", func(in *popup.Input) {
			in.EndAt = ptr(time.Date(9999, 12, 31, 23, 59, 59, 0, time.FixedZone("UTC-1", -3600)))
		}, "end_at", badTime},
		{"end_at past the last millisecond", func(in *popup.Input) {
			in.EndAt = ptr(time.Date(9999, 12, 31, 23, 59, 59, 999_500_000, time.UTC))
		}, "end_at", badTime},
		{"201 character title", func(in *popup.Input) { in.Title = strings.Repeat("标", 201) }, "title", "must be at most 200 characters"},
		{"4001 character content", func(in *popup.Input) { in.Content = strings.Repeat("a", 4001) }, "content", "must be at most 4000 characters"},
		{"javascript URL", func(in *popup.Input) { in.LinkURL = "javascript:alert(1)" }, "link_url", `scheme "javascript" is not allowed: ` + badURL},
		{"javascript URL with an escaped newline", func(in *popup.Input) { in.LinkURL = "javascript://%0aalert(1)" }, "link_url", `scheme "javascript" is not allowed: ` + badURL},
		{"upper-case javascript", func(in *popup.Input) { in.LinkURL = "JaVaScRiPt://%0aalert(1)" }, "link_url", `scheme "javascript" is not allowed: ` + badURL},
		{"file URL", func(in *popup.Input) { in.LinkURL = "file:///etc/passwd" }, "link_url", `scheme "file" is not allowed: ` + badURL},
		{"data URL", func(in *popup.Input) { in.LinkURL = "data://text/html,<script>alert(1)</script>" }, "link_url", `scheme "data" is not allowed: ` + badURL},
		{"vbscript URL", func(in *popup.Input) { in.LinkURL = "vbscript://msgbox(1)" }, "link_url", `scheme "vbscript" is not allowed: ` + badURL},
		{"intent URL", func(in *popup.Input) { in.LinkURL = "intent://scan/#Intent;scheme=zxing;end" }, "link_url", `scheme "intent" is not allowed: ` + badURL},
		{"an app scheme not configured", func(in *popup.Input) { in.LinkURL = "app://home" }, "link_url", `scheme "app" is not allowed: ` + badURL},
		{"relative URL", func(in *popup.Input) { in.LinkURL = "/sale" }, "link_url", badURL},
		{"scheme only", func(in *popup.Input) { in.LinkURL = "https://" }, "link_url", "must name a host, as in https://example.com/path"},
		{"http without a host", func(in *popup.Input) { in.LinkURL = "https:///path" }, "link_url", "must name a host, as in https://example.com/path"},
		{"opaque https", func(in *popup.Input) { in.LinkURL = "https:example.com" }, "link_url", "must name a host, as in https://example.com/path"},
		{"bad escape", func(in *popup.Input) { in.LinkURL = "https://e.com/%zz" }, "link_url", `is not a valid URL: invalid URL escape "%zz"`},
		{"missing scheme", func(in *popup.Input) { in.ImageURL = "://cdn/a.png" }, "image_url", badImage},
		{"scheme starting with a digit", func(in *popup.Input) { in.ImageURL = "1app://x" }, "image_url", badImage},
		{"image from a data URL", func(in *popup.Input) { in.ImageURL = "data://image/png;base64,AAAA" }, "image_url", `scheme "data" is not allowed: ` + badImage},
		{"URL with space", func(in *popup.Input) { in.LinkURL = "https://e.com/a b" }, "link_url", "must not contain spaces or control characters"},
		{"URL with a tab", func(in *popup.Input) { in.LinkURL = "https://e.com/\ta" }, "link_url", "must not contain spaces or control characters"},
		{"URL with a no-break space", func(in *popup.Input) { in.LinkURL = "https://e.com/\u00a0" }, "link_url", "must not contain spaces or control characters"},
		{"URL with a bidi override", func(in *popup.Input) { in.LinkURL = "https://e.com/\u202egnp.exe" }, "link_url", "must not contain spaces or control characters"},
		{"URL with invalid UTF-8", func(in *popup.Input) { in.LinkURL = "https://e.com/\xff" }, "link_url", "must not contain spaces or control characters"},
		{"2049 character URL", func(in *popup.Input) {
			in.LinkURL = "https://e.com/" + strings.Repeat("a", 2049-len("https://e.com/"))
		}, "link_url", "must be at most 2048 characters"},
		{"11 buttons", func(in *popup.Input) { in.Buttons = buttons(11) }, "buttons", "must have at most 10 buttons"},
		{"button without text", func(in *popup.Input) {
			in.Buttons = []popup.Button{{Text: "Open"}, {Text: " "}}
		}, "buttons[1].text", "is required"},
		{"button with bad link", func(in *popup.Input) {
			in.Buttons = []popup.Button{{Text: "Open", LinkURL: "www.example.com"}}
		}, "buttons[0].link_url", badURL},
		{"button with a javascript link", func(in *popup.Input) {
			in.Buttons = []popup.Button{{Text: "Open", LinkURL: "https://e.com"}, {Text: "Go", LinkURL: "javascript://%0aalert(1)"}}
		}, "buttons[1].link_url", `scheme "javascript" is not allowed: ` + badURL},
		{"ext array", func(in *popup.Input) { in.Ext = json.RawMessage(`[1]`) }, "ext", "must be a JSON object"},
		{"ext string", func(in *popup.Input) { in.Ext = json.RawMessage(`"x"`) }, "ext", "must be a JSON object"},
		{"ext broken", func(in *popup.Input) { in.Ext = json.RawMessage(`{"a":`) }, "ext", "must be a JSON object"},
		{"ext 9 levels deep", func(in *popup.Input) { in.Ext = json.RawMessage(nested(9)) }, "ext", "must nest objects and arrays at most 8 levels deep"},
		{"ext 9,000 levels deep", func(in *popup.Input) { in.Ext = json.RawMessage(nested(9000)) }, "ext", "must nest objects and arrays at most 8 levels deep"},
		{"ext over 16 KiB", func(in *popup.Input) {
			in.Ext = json.RawMessage(`{"k":"` + strings.Repeat("a", 16<<10-len(`{"k":""}`)+1) + `"}`)
		}, "ext", "must be at most 16384 bytes of compact JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := input(tt.give).BuildWith(popup.LinkSchemes{})
			assert.Equal(t, []popup.FieldError{{Field: tt.wantField, Message: tt.wantMsg}}, fieldErrors(t, err))
			assert.Zero(t, got)
		})
	}
}

const (
	badURL      = "must be an absolute URL with one of the schemes http, https"
	badImage    = "must be an absolute URL with one of the schemes http, https"
	badDuration = "must be between 0 and 315360000 (10 years)"
	badCooldown = "must be between 0 and 315360000 (10 years), or -1 for never again"
	badTime     = "must be between 1970-01-01T00:00:00Z and 9999-12-31T23:59:59.999Z (after conversion to UTC)"
)

// nested returns an ext object nesting depth levels: {"a":[{"a":[...]}]}.
func nested(depth int) string {
	var b strings.Builder
	for i := range depth {
		if i%2 == 0 {
			b.WriteString(`{"a":`)
		} else {
			b.WriteString(`[`)
		}
	}
	b.WriteString("1")
	for i := depth - 1; i >= 0; i-- {
		if i%2 == 0 {
			b.WriteString(`}`)
		} else {
			b.WriteString(`]`)
		}
	}
	return b.String()
}

func TestBuildWithAppSchemes(t *testing.T) {
	t.Parallel()
	links, err := popup.ParseLinkSchemes([]string{"http", "https", "app", "fb123", "com.example.app"})
	require.NoError(t, err)
	tests := []struct {
		name      string
		give      func(*popup.Input)
		wantField string // "" = accepted
		wantMsg   string
	}{
		{name: "deep links", give: func(in *popup.Input) {
			in.LinkURL = "app://home"
			in.Buttons = []popup.Button{
				{Text: "Open", LinkURL: "fb123://page"},
				{Text: "Shop", LinkURL: "COM.Example.App://shop"},
				{Text: "Later"},
			}
		}},
		{name: "deep link with a path only", give: func(in *popup.Input) { in.LinkURL = "app:/home" }},
		{name: "web links still pass", give: func(in *popup.Input) { in.LinkURL = "https://e.com" }},
		{name: "deep link with nothing after the scheme", give: func(in *popup.Input) { in.LinkURL = "app://" },
			wantField: "link_url", wantMsg: "must have a host or path after the scheme, as in myapp://path"},
		{name: "another app's scheme", give: func(in *popup.Input) { in.LinkURL = "otherapp://x" },
			wantField: "link_url", wantMsg: `scheme "otherapp" is not allowed: must be an absolute URL with one of the schemes http, https, app, fb123, com.example.app`},
		{name: "image_url stays http or https", give: func(in *popup.Input) { in.ImageURL = "app://img.png" },
			wantField: "image_url", wantMsg: `scheme "app" is not allowed: ` + badImage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := input(tt.give).BuildWith(links)
			if tt.wantField == "" {
				assert.NoError(t, err)
				return
			}
			assert.Equal(t, []popup.FieldError{{Field: tt.wantField, Message: tt.wantMsg}}, fieldErrors(t, err))
		})
	}
}

func TestParseLinkSchemes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		give    []string
		wantErr string // "" = accepted
	}{
		{name: "default", give: []string{"http", "https"}},
		{name: "app schemes", give: []string{"https", "myapp", "fb123", "com.example.app", "a+b-c"}},
		{name: "intent when an operator asks for it", give: []string{"intent"}},
		{name: "empty", give: nil, wantErr: "at least one scheme"},
		{name: "upper case", give: []string{"HTTPS"}, wantErr: `item 1 ("HTTPS") is not a lower-case URL scheme name`},
		{name: "empty item", give: []string{"https", ""}, wantErr: `item 2 ("")`},
		{name: "with colon", give: []string{"https:"}, wantErr: `item 1 ("https:")`},
		{name: "digit first", give: []string{"1app"}, wantErr: `item 1 ("1app")`},
		{name: "javascript", give: []string{"https", "javascript"}, wantErr: "javascript links run code or read local files and are never allowed"},
		{name: "data", give: []string{"data"}, wantErr: "data links"},
		{name: "file", give: []string{"file"}, wantErr: "file links"},
		{name: "vbscript", give: []string{"vbscript"}, wantErr: "vbscript links"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := popup.ParseLinkSchemes(tt.give)
			if tt.wantErr == "" {
				require.NoError(t, err)
				assert.Equal(t, strings.Join(tt.give, ", "), got.String())
				return
			}
			assert.ErrorContains(t, err, tt.wantErr)
		})
	}
}

func TestZeroLinkSchemesAllowOnlyTheWeb(t *testing.T) {
	t.Parallel()
	var links popup.LinkSchemes
	assert.True(t, links.Allows("https"))
	assert.True(t, links.Allows("HTTP"))
	assert.False(t, links.Allows("app"))
	assert.Equal(t, "http, https", links.String())
}

func TestValidateReportsEveryProblemInFieldOrder(t *testing.T) {
	t.Parallel()
	p := popup.Popup{
		Status:    "live",
		Targeting: popup.Targeting{Platforms: []string{"tv"}, RolloutPercent: 200},
		Creative: popup.Creative{
			Buttons: []popup.Button{{Text: ""}},
			Ext:     json.RawMessage(`[]`),
		},
	}

	err := p.ValidateWith(popup.LinkSchemes{})

	assert.Equal(t, []string{
		"name", "status", "targeting.platforms[0]", "targeting.rollout_percent", "buttons[0].text", "ext",
	}, fieldNames(fieldErrors(t, err)))
	assert.EqualError(t, err, "invalid popup: name: is required; status: must be one of draft, active, paused, archived; "+
		"targeting.platforms[0]: must be one of ios, android, web; targeting.rollout_percent: must be between 0 and 100; "+
		"buttons[0].text: is required; ext: must be a JSON object")
}

func TestValidateReturnsUntypedNil(t *testing.T) {
	t.Parallel()
	p, err := input(noChange).BuildWith(popup.LinkSchemes{})
	require.NoError(t, err)

	// A nil *ValidationError inside a non-nil error would make every caller's err != nil true.
	assert.Nil(t, p.ValidateWith(popup.LinkSchemes{}))
}

func TestValidUID(t *testing.T) {
	t.Parallel()
	tests := []struct {
		give string
		want bool
	}{
		{give: "u", want: true},
		{give: "user-123", want: true},
		{give: "A.b:c_d-9", want: true},
		{give: strings.Repeat("x", 64), want: true},
		{give: "", want: false},
		{give: strings.Repeat("x", 65), want: false},
		{give: "a b", want: false},
		{give: "a/b", want: false},
		{give: "ü", want: false},
		{give: "a\x00", want: false},
	}
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			assert.Equal(t, tt.want, popup.ValidUID(tt.give))
		})
	}
	// Every byte, alone and inside a uid: exactly the rule's alphabet.
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.:-"
	for c := range 256 {
		want := strings.IndexByte(alphabet, byte(c)) >= 0
		assert.Equal(t, want, popup.ValidUID(string([]byte{byte(c)})), "byte %#x", c)
		assert.Equal(t, want, popup.ValidUID("ab"+string([]byte{byte(c)})+"cd"), "byte %#x inside", c)
	}
}

func TestStatusValid(t *testing.T) {
	t.Parallel()
	tests := []struct {
		give popup.Status
		want bool
	}{
		{give: popup.StatusDraft, want: true},
		{give: popup.StatusActive, want: true},
		{give: popup.StatusPaused, want: true},
		{give: popup.StatusArchived, want: true},
		{give: "Active", want: false},
		{give: "", want: false},
	}
	for _, tt := range tests {
		t.Run(string(tt.give), func(t *testing.T) {
			assert.Equal(t, tt.want, tt.give.Valid())
		})
	}
}

func uids(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = "qa-" + strings.Repeat("x", i%10) + string(rune('a'+i%26))
	}
	return out
}

func buttons(n int) []popup.Button {
	out := make([]popup.Button, n)
	for i := range out {
		out[i] = popup.Button{Text: "b", LinkURL: "https://e.com/b"}
	}
	return out
}

func fieldNames(fs []popup.FieldError) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.Field
	}
	return out
}

func TestValidateAudienceRefs(t *testing.T) {
	t.Parallel()
	many := make([]int64, 21)
	for i := range many {
		many[i] = int64(i + 1)
	}
	tests := []struct {
		name string
		give popup.AudienceRefs
		want []string
	}{
		{"none", popup.AudienceRefs{}, nil},
		{"include and exclude", popup.AudienceRefs{Include: []int64{1, 2}, Exclude: []int64{3}}, nil},
		{"not an id", popup.AudienceRefs{Include: []int64{0}, Exclude: []int64{-1}},
			[]string{"targeting.audiences.include[0]", "targeting.audiences.exclude[0]"}},
		{"twice in a list", popup.AudienceRefs{Include: []int64{1, 1}}, []string{"targeting.audiences.include[1]"}},
		{"in both lists", popup.AudienceRefs{Include: []int64{1}, Exclude: []int64{2, 1}}, []string{"targeting.audiences.exclude[1]"}},
		{"too many", popup.AudienceRefs{Include: many}, []string{"targeting.audiences.include"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := input(noChange).BuildWith(popup.LinkSchemes{})
			require.NoError(t, err)
			p.Targeting.Audiences = tt.give
			err = p.ValidateWith(popup.LinkSchemes{})
			if tt.want == nil {
				assert.NoError(t, err)
				return
			}
			assert.Equal(t, tt.want, fieldNames(fieldErrors(t, err)))
		})
	}
}

// TestCompileLeavesItsInputAlone: compiling normalizes a copy. The popup's slices and its
// experiment are shared with the snapshot it came from, which concurrent requests read (a draft
// preview compiles the live popups again), so sorting or canonicalising them in place raced.
func TestCompileLeavesItsInputAlone(t *testing.T) {
	p := popuptest.Full()
	p.Status = popup.StatusActive
	p.Creative.Translations = []popup.Translation{popuptest.FullTranslation("zh-hans", "sale"), popuptest.FullTranslation("pt-br", "sale")}
	p.Experiment.Variants[0].Creative.Translations = []popup.Translation{popuptest.FullTranslation("it", "a"), popuptest.FullTranslation("DE", "a")}
	before, err := json.Marshal(p)
	require.NoError(t, err)

	links, err := popup.ParseLinkSchemes([]string{"app", "https"})
	require.NoError(t, err)
	c, err := popup.CompileWith(p, links)
	require.NoError(t, err)

	after, err := json.Marshal(p)
	require.NoError(t, err)
	assert.JSONEq(t, string(before), string(after), "CompileWith changed the popup it was given")
	assert.Equal(t, "pt-BR", c.Popup.Creative.Translations[0].Locale, "the compiled copy is normalized")
	assert.Equal(t, "de", c.Popup.Experiment.Variants[0].Creative.Translations[0].Locale)
}
