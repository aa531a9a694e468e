package popupdoc_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/popup"
	"popupsvc/internal/popup/popuptest"
	"popupsvc/internal/popupdoc"
)

// -update rewrites the golden files from this build's encoding: only for a deliberate change of
// the documents, and then testdata/older/ must keep a copy of what the previous build wrote.
var update = flag.Bool("update", false, "rewrite testdata/*.json from this build's encoding")

// plain is Full without an experiment, a bucket seed, translations, the caps exemption, placements,
// a trigger or rules, and with no buttons: the keys that are absent when empty are absent from its
// documents.
func plain() popup.Popup {
	p := popuptest.WithoutWhere(popuptest.Full())
	p.ID, p.Name, p.BucketSeed, p.Experiment, p.Buttons = 8, "plain", "", nil, nil
	p.Translations, p.ExemptFromCaps, p.HoldoutExempt = nil, false, false
	return p
}

// untranslated is p as a document from before translations and pacing reads: no translations
// (the variants' neither) and no caps exemption. No primary goal either: goals came later.
func untranslated(p popup.Popup) popup.Popup {
	p = withoutImageAlt(popuptest.WithoutWhere(p))
	p.Translations, p.ExemptFromCaps, p.HoldoutExempt = nil, false, false
	if p.Experiment != nil {
		p.Experiment.PrimaryGoal = "" // goals came after translations
		for i := range p.Experiment.Variants {
			p.Experiment.Variants[i].Translations = nil
		}
	}
	return p
}

// withoutImageAlt is p as a release before image_alt wrote it: no image alternative anywhere
// (the popup's own, its variants').
func withoutImageAlt(p popup.Popup) popup.Popup {
	p.ImageAlt = ""
	if p.Experiment != nil {
		e := *p.Experiment
		e.Variants = append([]popup.Variant(nil), e.Variants...)
		for i := range e.Variants {
			e.Variants[i].ImageAlt = ""
		}
		p.Experiment = &e
	}
	return p
}

// golden checks that v encodes to testdata/name byte for byte (indented for reading; the key
// order is the encoding's) and returns the document, compact.
func golden(t *testing.T, name string, v any) []byte {
	t.Helper()
	raw, err := json.Marshal(v)
	require.NoError(t, err)
	var indented bytes.Buffer
	require.NoError(t, json.Indent(&indented, raw, "", "  "))
	indented.WriteByte('\n')
	path := filepath.Join("testdata", name)
	if *update {
		require.NoError(t, os.WriteFile(path, indented.Bytes(), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, string(want), indented.String(), "%s: this build writes another document (go test -update, if deliberate)", name)
	return compact(t, want)
}

// compact is a document as stores hold it: the files are indented for reading, and an indented
// "ext" would decode with its whitespace.
func compact(t *testing.T, raw []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, json.Compact(&b, raw))
	return b.Bytes()
}

func decode[T any](t *testing.T, raw []byte) T {
	t.Helper()
	var v T
	require.NoError(t, json.Unmarshal(raw, &v))
	return v
}

func TestDocumentsAreTheGoldenFiles(t *testing.T) {
	full, bare := popuptest.Full(), plain()
	popuptest.RequireNoZeroField(t, popupdoc.EntryOf(&full))
	popuptest.RequireNoZeroField(t, popupdoc.RevisionOf(&full))

	blob := golden(t, "blob.json", []popupdoc.Entry{popupdoc.EntryOf(&full), popupdoc.EntryOf(&bare)})
	entries := decode[[]popupdoc.Entry](t, blob)
	require.Len(t, entries, 2)
	assert.Equal(t, full, entries[0].Popup())
	bare.Buttons = []popup.Button{} // a creative reads with a list of buttons, empty or not
	assert.Equal(t, bare, entries[1].Popup())

	rev := decode[popupdoc.Revision](t, golden(t, "revision.json", popupdoc.RevisionOf(&full)))
	assert.Equal(t, full, rev.Popup())
	rev = decode[popupdoc.Revision](t, golden(t, "revision-plain.json", popupdoc.RevisionOf(&bare)))
	assert.Equal(t, bare, rev.Popup())

	tg := decode[popupdoc.Targeting](t, golden(t, "targeting.json", popupdoc.TargetingOf(full.Targeting)))
	assert.Equal(t, full.Targeting, tg.Popup())
	c := decode[popupdoc.Content](t, golden(t, "content.json", popupdoc.ContentOf(full.Creative)))
	assert.Equal(t, full.Creative, c.Creative())
	e := decode[*popupdoc.Experiment](t, golden(t, "experiment.json", popupdoc.ExperimentOf(full.Experiment)))
	assert.Equal(t, full.Experiment, e.Popup())
}

func TestKeysAbsentWhenEmpty(t *testing.T) {
	bare := plain()
	for name, v := range map[string]any{"entry": popupdoc.EntryOf(&bare), "revision": popupdoc.RevisionOf(&bare)} {
		raw, err := json.Marshal(v)
		require.NoError(t, err)
		assert.NotContains(t, string(raw), `"experiment"`, "%s: no experiment, no key (as before experiments existed)", name)
		assert.NotContains(t, string(raw), `"bucket_seed"`, "%s: no seed, no key (as before seeds existed)", name)
		assert.NotContains(t, string(raw), `"translations"`, "%s: no translations, no key (as before translations existed)", name)
		assert.NotContains(t, string(raw), `"exempt_from_caps"`, "%s: not exempt, no key (as before pacing existed)", name)
		assert.NotContains(t, string(raw), `"holdout_exempt"`, "%s: not exempt, no key (as before the holdout existed)", name)
		assert.NotContains(t, string(raw), `"placements"`, "%s: the homepage alone, no key (as before placements existed)", name)
		assert.NotContains(t, string(raw), `"trigger"`, "%s: no trigger, no key (as before triggers existed)", name)
		assert.NotContains(t, string(raw), `"rules"`, "%s: no rules, no key (as before rules existed)", name)
	}
}

// TestDocumentsOlderReleasesWroteStillDecode reads testdata/older/: what the release before the
// one codec wrote (2026-11-26: its own blob, revision and column types), the blob of the builds
// before seeds and experiments, migration 00004's first revisions, and a content column from
// before buttons and ext, the documents of the release before translations and pacing, those
// of the release before the holdout (no holdout_exempt), and those of the release before
// placements, triggers and rules.
// None of them knew translations or the caps exemption; those before audiences read as no
// audience targeting.
func TestDocumentsOlderReleasesWroteStillDecode(t *testing.T) {
	older := func(name string) []byte {
		raw, err := os.ReadFile(filepath.Join("testdata", "older", name))
		require.NoError(t, err)
		return compact(t, raw)
	}
	// The release before placements, triggers and rules: every other field (Full), and the
	// targeting reads as the homepage alone, no trigger, no rules.
	beforeRules := popuptest.WithoutWhere(popuptest.Full())
	entries := decode[[]popupdoc.Entry](t, older("blob-before-rules.json"))
	require.Len(t, entries, 2)
	assert.Equal(t, beforeRules, entries[0].Popup())
	rev := decode[popupdoc.Revision](t, older("revision-before-rules.json"))
	assert.Equal(t, beforeRules, rev.Popup())
	tg := decode[popupdoc.Targeting](t, older("targeting-before-rules.json"))
	assert.Equal(t, beforeRules.Targeting, tg.Popup())

	// The release before the holdout: every field but holdout_exempt.
	beforeHoldout := withoutImageAlt(popuptest.WithoutWhere(popuptest.Full()))
	beforeHoldout.HoldoutExempt = false
	entries = decode[[]popupdoc.Entry](t, older("blob-before-holdout.json"))
	require.Len(t, entries, 2)
	assert.Equal(t, beforeHoldout, entries[0].Popup())
	rev = decode[popupdoc.Revision](t, older("revision-before-holdout.json"))
	assert.Equal(t, beforeHoldout, rev.Popup())

	full, bare := untranslated(popuptest.Full()), withoutImageAlt(plain())
	bare.Buttons = []popup.Button{}

	// The release before translations and pacing: its blob, revision, content and experiment.
	entries = decode[[]popupdoc.Entry](t, older("blob-before-translations.json"))
	require.Len(t, entries, 2)
	assert.Equal(t, full, entries[0].Popup())
	assert.Equal(t, bare, entries[1].Popup())
	rev = decode[popupdoc.Revision](t, older("revision-before-translations.json"))
	assert.Equal(t, full, rev.Popup())
	c := decode[popupdoc.Content](t, older("content-before-translations.json"))
	assert.Equal(t, full.Creative, c.Creative())
	e := decode[*popupdoc.Experiment](t, older("experiment-before-translations.json"))
	assert.Equal(t, full.Experiment, e.Popup())

	// A goal's history before value caps: no cap.
	oldGoal := popuptest.FullGoal()
	oldGoal.ValueCap = nil
	assert.Equal(t, &oldGoal, decode[*popupdoc.Goal](t, older("goal-before-value-cap.json")).Popup())

	// Every document below was written before audiences existed.
	full.Targeting.Audiences, bare.Targeting.Audiences = popup.AudienceRefs{}, popup.AudienceRefs{}

	entries = decode[[]popupdoc.Entry](t, older("blob-2026-11-26.json"))
	require.Len(t, entries, 2)
	assert.Equal(t, full, entries[0].Popup())
	assert.Equal(t, bare, entries[1].Popup())
	rev = decode[popupdoc.Revision](t, older("revision-2026-11-26.json"))
	assert.Equal(t, full, rev.Popup())
	tg = decode[popupdoc.Targeting](t, older("targeting-2026-11-26.json"))
	assert.Equal(t, full.Targeting, tg.Popup())
	c = decode[popupdoc.Content](t, older("content-2026-11-26.json"))
	assert.Equal(t, full.Creative, c.Creative())
	e = decode[*popupdoc.Experiment](t, older("experiment-2026-11-26.json"))
	assert.Equal(t, full.Experiment, e.Popup())

	// Before seeds and experiments: no bucket_seed (the popup's id is its seed) and no experiment.
	entries = decode[[]popupdoc.Entry](t, older("blob-before-seeds.json"))
	require.Len(t, entries, 2)
	first := entries[0].Popup()
	assert.Empty(t, first.BucketSeed)
	assert.Equal(t, "7", first.RolloutSeed())
	assert.Nil(t, first.Experiment)
	assert.Equal(t, "spring-sale", first.Name)
	assert.Equal(t, []popup.Button{{Text: "Open", LinkURL: "app://sale/open"}, {Text: "Later"}}, first.Buttons)

	// Migration 00004: times with microseconds, no seed, no experiment, the columns verbatim.
	rev = decode[popupdoc.Revision](t, older("revision-migration-00004.json"))
	got := rev.Popup()
	want := full
	want.BucketSeed, want.Experiment, want.EndAt = "", nil, nil
	assert.Equal(t, want, got)

	// A content column from before buttons and ext: no buttons, ext {}.
	c = decode[popupdoc.Content](t, older("content-without-buttons-or-ext.json"))
	cr := c.Creative()
	assert.Equal(t, []popup.Button{}, cr.Buttons)
	assert.JSONEq(t, `{}`, string(cr.Ext))
}

func TestTimesReadInUTC(t *testing.T) {
	rev := decode[popupdoc.Revision](t, []byte(`{"id":1,"start_at":"2026-03-01T09:00:00+01:00","created_at":"2026-02-01T10:00:00+02:00",`+
		`"updated_at":"2026-02-01T10:00:00Z","targeting":{},"content":{},`+
		`"experiment":{"status":"running","planned_end_at":"2026-12-09T01:00:00+01:00","phase_started_at":null,"variants":[]}}`))

	p := rev.Popup()

	assert.Equal(t, time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC), *p.StartAt)
	assert.Equal(t, time.UTC, p.StartAt.Location())
	assert.Equal(t, time.UTC, p.CreatedAt.Location())
	assert.Equal(t, time.Date(2026, 12, 9, 0, 0, 0, 0, time.UTC), *p.Experiment.PlannedEndAt)
}

func TestGoalDocumentIsTheGoldenFile(t *testing.T) {
	g := popuptest.FullGoal()
	popuptest.RequireNoZeroField(t, popupdoc.GoalOf(&g))
	got := decode[*popupdoc.Goal](t, golden(t, "goal.json", popupdoc.GoalOf(&g)))
	assert.Equal(t, &g, got.Popup())
	assert.Nil(t, popupdoc.GoalOf(nil))
	assert.Nil(t, (*popupdoc.Goal)(nil).Popup())
}

// TestAMalformedStoredConditionIsRefusedNotServed: a stored operand that is no scalar or list of
// them reads as none, which validation refuses naming it, so a snapshot reports the popup
// rather than serving it half-understood.
func TestAMalformedStoredConditionIsRefusedNotServed(t *testing.T) {
	tg := decode[popupdoc.Targeting](t, []byte(`{"rollout_percent":100,"rules":[{"conditions":[{"attr":"plan","op":"eq","value":{"x":1}}]}]}`))
	p := plain()
	p.Targeting = tg.Popup()
	links, err := popup.ParseLinkSchemes([]string{"https", "app"})
	require.NoError(t, err)
	var ve *popup.ValidationError
	require.ErrorAs(t, p.ValidateWith(links), &ve)
	assert.Equal(t, []popup.FieldError{{Field: "targeting.rules[0].conditions[0].value", Message: "must be a single value for eq"}}, ve.Fields)
}
