// Package popuptest is a test-only helper of the packages that convert popup.Popup at a boundary
// (the admin wire, the Redis config blob, the MySQL row and revision JSON): one popup with every
// field set, and a check that a value has no zero field. A field added to popup.Popup fails
// TestFullSetsEveryField until Full sets it, and then every boundary's round-trip test that
// starts from Full fails until its converter carries the field.
package popuptest

import (
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"popupsvc/internal/popup"
	"popupsvc/internal/popup/rules"
)

// Full is a valid popup with every field, and every field of its parts, set to a non-zero value
// that survives every store (UTC times at millisecond precision, links of http(s) and app).
func Full() popup.Popup {
	start := time.Date(2026, 3, 1, 8, 0, 0, 250_000_000, time.UTC)
	end := time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)
	return popup.Popup{
		ID: 7, Revision: 3, Name: "spring-sale", BucketSeed: "3f9a0c2b7d1e4a65", Status: popup.StatusPaused, Priority: 5,
		StartAt: &start, EndAt: &end,
		Targeting: popup.Targeting{Platforms: []string{"ios", "android"}, MinAppVersion: "8.1.0", MaxAppVersion: "9.0.0",
			Regions: []string{"cn", "us"}, Langs: []string{"zh"}, RolloutPercent: 40, UIDs: []string{"vip-1", "vip-2"},
			Audiences:  popup.AudienceRefs{Include: []int64{3, 5}, Exclude: []int64{4}},
			Placements: []string{"home", "checkout"},
			Trigger: &popup.Trigger{Event: "purchase_completed",
				Conditions: []rules.Condition{{Attr: "amount", Op: rules.OpGte, Values: []rules.Value{rules.Num("30")}}}},
			Rules: []rules.Rule{
				{Conditions: []rules.Condition{
					{Attr: "plan", Op: rules.OpIn, Values: []rules.Value{rules.Str("pro"), rules.Str("team")}},
					{Attr: "app_build", Op: rules.OpSemverGte, Values: []rules.Value{rules.Str("8.2.0")}},
					{Attr: "beta", Op: rules.OpEq, Values: []rules.Value{rules.Boolean(true)}},
				}},
				{Conditions: []rules.Condition{{Attr: "email", Op: rules.OpEndsWith, Values: []rules.Value{rules.Str("@corp.com")}}}},
			}},
		ReshowAfterSeconds: 3600, ClickCooldownSeconds: -1, CloseCooldownSeconds: 7200, MaxImpressions: 3, ExemptFromCaps: true,
		HoldoutExempt: true,
		Experiment:    FullExperiment(),
		CreatedAt:     time.Date(2026, 2, 1, 10, 0, 0, 123_000_000, time.UTC),
		UpdatedAt:     time.Date(2026, 2, 2, 11, 30, 0, 0, time.UTC),
		Creative: popup.Creative{
			Title:        "Spring",
			Content:      "Up to 50% off",
			ImageURL:     "https://cdn.example.com/s.png",
			ImageAlt:     "A spring bouquet: up to 50% off",
			LinkURL:      "app://sale",
			Buttons:      []popup.Button{{Text: "Open", LinkURL: "app://sale/open"}},
			Ext:          json.RawMessage(`{"theme":"dark"}`),
			Translations: []popup.Translation{FullTranslation("pt-BR", "sale"), FullTranslation("zh-Hans", "sale")},
		},
	}
}

// FullTranslation is a translation into locale with every field set, of a creative with one
// button whose links are app://<path>.
func FullTranslation(locale, path string) popup.Translation {
	return popup.Translation{Locale: locale, Title: locale + " title", Content: locale + " content",
		ImageURL: "https://cdn.example.com/" + locale + ".png", LinkURL: "app://" + path + "/" + locale,
		Buttons: []popup.Button{{Text: locale + " open", LinkURL: "app://" + path + "/" + locale + "/open"}}}
}

// ZeroFields returns the paths of the zero-valued fields in v (a struct, or a pointer to one),
// recursing into structs (an embedded one too, exported or not), pointers and the elements of
// slices.
func ZeroFields(v any) []string {
	var out []string
	walk(reflect.ValueOf(v), reflect.TypeOf(v).String(), &out)
	return out
}

func walk(v reflect.Value, path string, out *[]string) {
	if v.IsZero() {
		*out = append(*out, path)
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		walk(v.Elem(), path, out)
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(time.Time{}) {
			return
		}
		for i := 0; i < v.NumField(); i++ {
			f := v.Type().Field(i)
			if f.IsExported() || f.Anonymous { // an embedded struct's fields are the outer's
				walk(v.Field(i), path+"."+f.Name, out)
			}
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 { // raw JSON, bytes: non-empty is enough
			return
		}
		for i := 0; i < v.Len(); i++ {
			walk(v.Index(i), path+"["+strconv.Itoa(i)+"]", out)
		}
	}
}

// RequireNoZeroField fails t when v has a zero field (ZeroFields).
func RequireNoZeroField(t testing.TB, v any) {
	t.Helper()
	if z := ZeroFields(v); len(z) > 0 {
		t.Fatalf("zero fields (set them in popuptest.Full, or carry them across the boundary): %s", strings.Join(z, ", "))
	}
}

// FullGoal is a goal with every field set: a converter that drops one fails its round trip.
func FullGoal() popup.Goal {
	valueCap := 500.0
	return popup.Goal{Key: "purchase", Name: "Purchase", Window: 72 * time.Hour, Value: popup.GoalValueSum, ValueCap: &valueCap, Version: 3,
		CreatedAt: time.Date(2026, 11, 20, 9, 0, 0, 123_000_000, time.UTC), UpdatedAt: time.Date(2026, 11, 26, 10, 30, 0, 0, time.UTC)}
}

// WithoutWhere is p as a document from before placements, triggers and rules reads: the homepage
// alone, no trigger, no rules.
func WithoutWhere(p popup.Popup) popup.Popup {
	p.Targeting.Placements, p.Targeting.Trigger, p.Targeting.Rules = nil, nil, nil
	return p
}
