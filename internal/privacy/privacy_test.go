package privacy_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/privacy"
)

const key = "privacy-test-key-0123456789abcdef0123456789abcdef"

func TestKeyedHashes(t *testing.T) {
	k, err := privacy.NewKeyed(key)
	require.NoError(t, err)
	other, err := privacy.NewKeyed(key + "x")
	require.NoError(t, err)

	// The documented construction: HMAC-SHA256(key, "uid" 0x00 uid), hex.
	mac := hmac.New(sha256.New, []byte(key))
	mac.Write([]byte("uid\x00user-42"))
	assert.Equal(t, hex.EncodeToString(mac.Sum(nil)), k.UID("user-42"))

	tests := []struct {
		name string
		a, b string
	}{
		{"two uids", k.UID("user-1"), k.UID("user-2")},
		{"one uid under two keys", k.UID("user-1"), other.UID("user-1")},
		{"a uid and an event of it", k.UID("user-1"), k.Event("user-1", "")},
		{"two users' same event id", k.Event("user-1", "e1"), k.Event("user-2", "e1")},
		{"one user's two event ids", k.Event("user-1", "e1"), k.Event("user-1", "e2")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.NotEqual(t, tt.a, tt.b)
			assert.Len(t, tt.a, 64)
		})
	}
	assert.Equal(t, k.UID("user-1"), k.UID("user-1"), "a hash names the same uid every time")
}

func TestKeyRefusedWhenShort(t *testing.T) {
	_, err := privacy.NewKeyed("0123456789abcdef0123456789abcde") // 31 bytes
	require.ErrorIs(t, err, privacy.ErrKey)
}

func TestSealOpensOnlyUnderItsKey(t *testing.T) {
	k, err := privacy.NewKeyed(key)
	require.NoError(t, err)
	other, err := privacy.NewKeyed(key + "x")
	require.NoError(t, err)
	a, err := k.Seal("user-42")
	require.NoError(t, err)
	b, err := k.Seal("user-42")
	require.NoError(t, err)
	assert.NotEqual(t, a, b, "a fresh nonce per seal")
	assert.NotContains(t, string(a), "user-42")
	got, err := k.Open(a)
	require.NoError(t, err)
	assert.Equal(t, "user-42", got)
	_, err = other.Open(a)
	assert.ErrorIs(t, err, privacy.ErrSealed)
	a[len(a)-1] ^= 1
	_, err = k.Open(a)
	assert.ErrorIs(t, err, privacy.ErrSealed)
	_, err = k.Open(nil)
	assert.ErrorIs(t, err, privacy.ErrSealed)
}

func TestTombstoneDrops(t *testing.T) {
	cut := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		cutoff time.Time
		at     time.Time
		want   bool
	}{
		{"erasure running: an event of any time", time.Time{}, cut.Add(time.Hour), true},
		{"queued before the cut-off", cut, cut.Add(-time.Millisecond), true},
		{"stamped at the cut-off: a new visit", cut, cut, false},
		{"after the cut-off: a new visit", cut, cut.Add(time.Second), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, privacy.Tombstone{Cutoff: tt.cutoff}.Drops(tt.at))
		})
	}
}

func TestValidID(t *testing.T) {
	id, err := privacy.NewID()
	require.NoError(t, err)
	tests := []struct {
		give string
		want bool
	}{
		{id, true},
		{"0123456789abcdef0123456789abcdef", true},
		{"0123456789ABCDEF0123456789abcdef", false},
		{"0123456789abcdef0123456789abcde", false},
		{"0123456789abcdef0123456789abcdeg", false},
		{"", false},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, privacy.ValidID(tt.give), tt.give)
	}
}
