package manage

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"time"
	"unsafe"

	"popupsvc/internal/audience"
	"popupsvc/internal/popup"
)

// The audience writes (docs/CONTRACT.md §11): create, update and delete an audience, and the
// member writes (replace the list, add to it, remove from it). A member write streams its upload
// into a staged upload of the store, keeping only the fingerprints in memory, then commits it in
// one short transaction that applies the rules in one order (commitMembers); anything that fails
// leaves the staged upload dropped and the audience as it was.

// AudienceStore is what the audience writes need of a store: the transaction of a commit, and
// the staged uploads written before it and the superseded ones pruned after it.
type AudienceStore interface {
	// InTx runs fn in one transaction: committed when fn returns nil, rolled back otherwise.
	InTx(ctx context.Context, fn func(AudienceTx) error) error
	// Get reads audience id (popup.ErrAudienceNotFound); List reads them all.
	Get(ctx context.Context, id int64) (popup.Audience, error)
	List(ctx context.Context) ([]popup.Audience, error)
	// UsedBy returns the popups that are not archived, by the audiences they target.
	UsedBy(ctx context.Context) (map[int64][]popup.AudienceUser, error)
	// LoadSet returns audience id's current members, reading only what changed since have (nil:
	// none held).
	LoadSet(ctx context.Context, id int64, have *audience.Set) (*audience.Set, error)
	// MemberRows reads the list at one version: its set to start, then the rows of uids sent by
	// the uploads that made it (newline-joined; some no longer members, some sent twice).
	MemberRows(ctx context.Context, id int64, have *audience.Set, start func(*audience.Set) error, row func([]byte) error) error
	// History returns an audience's changes, newest first (kept after a delete).
	History(ctx context.Context, id int64) ([]popup.AudienceChange, error)
	// StageUpload starts an upload of audience id's members; StageUIDs writes its uid rows as the
	// body streams in, StageFingerprints its sorted fingerprints (replacing any it had); an upload
	// counts only once AudienceTx.SetAudienceMembers commits it. DropUpload removes a staged one.
	StageUpload(ctx context.Context, id int64) (int64, error)
	StageUIDs(ctx context.Context, upload int64, seq int, uids []byte) error
	StageFingerprints(ctx context.Context, upload int64, fps []uint64, pace func(n int) error) error
	DropUpload(ctx context.Context, upload int64) error
	// Prune removes the uploads no version from base on reads; DropAudienceParts the uploads of
	// a deleted audience.
	Prune(ctx context.Context, id, base int64) error
	DropAudienceParts(ctx context.Context, id int64) error
}

// AudienceTx is what an audience write reads and writes in its transaction: persistence only.
type AudienceTx interface {
	// InsertAudience stores a new audience at version 1, empty (popup.ErrAudienceNameTaken).
	InsertAudience(ctx context.Context, m popup.AudienceMeta, key audience.Key) (popup.Audience, error)
	// LockAudience reads audience id and locks it until the transaction ends
	// (popup.ErrAudienceNotFound).
	LockAudience(ctx context.Context, id int64) (popup.Audience, error)
	// AudienceUsers returns the popups that are not archived and target audience id, by id, as
	// committed before the lock was granted.
	AudienceUsers(ctx context.Context, id int64) ([]popup.AudienceUser, error)
	// OtherMembers locks the memory budget until the transaction ends and returns the members of
	// every audience but id.
	OtherMembers(ctx context.Context, id int64) (int64, error)
	SetAudienceMeta(ctx context.Context, id int64, m popup.AudienceMeta, version int64) (popup.Audience, error)
	// SetAudienceMembers commits staged upload as the list at version, of size members; rebase
	// makes it the base (a replace).
	SetAudienceMembers(ctx context.Context, id, upload, version, size int64, rebase bool) (popup.Audience, error)
	DeleteAudience(ctx context.Context, id int64) error
	// RecordAudience adds a change to the audience's history.
	RecordAudience(ctx context.Context, c popup.AudienceChange) error
	// BumpVersion increments the config version, by which every instance sees that the config
	// (here: the members of an audience a popup uses) changed.
	BumpVersion(ctx context.Context) error
}

// AudienceTxFunc adapts a store whose transaction is its own concrete type to the InTx of
// AudienceStore, as TxFunc does for popup writes.
type AudienceTxFunc[T AudienceTx] func(ctx context.Context, fn func(T) error) error

// InTx runs fn with the store's transaction.
func (f AudienceTxFunc[T]) InTx(ctx context.Context, fn func(AudienceTx) error) error {
	return f(ctx, func(tx T) error { return fn(tx) })
}

// CurrentSets gives the member set an instance holds for an audience (it may lag the store).
type CurrentSets interface {
	Current(ctx context.Context, id int64) (*audience.Set, error)
}

// Audiences makes the admin API's audience writes and the reads that need the member sets.
type Audiences struct {
	store AudienceStore
	held  CurrentSets // nil: none held, every set read from the store
	// memory is POPUP_AUDIENCE_MEMORY: what every instance may hold for all audiences' sets.
	memory int64
	now    func() time.Time
	// uploadRate is POPUP_AUDIENCE_UPLOAD_RATE: the uids a second a member write reads and
	// stores (0: as fast as it can).
	uploadRate int
}

// NewAudiences returns the audience writes over store. held, when not nil, gives the sets the
// instance holds, from which a member write reads only what changed since; memory is
// POPUP_AUDIENCE_MEMORY.
func NewAudiences(store AudienceStore, held CurrentSets, memory int64, now func() time.Time) *Audiences {
	return &Audiences{store: store, held: held, memory: memory, now: now}
}

// PaceUploads makes every member write read and store at most rate uids a second (0: as fast
// as it can) and returns s: an upload then takes a bounded share of the CPU that the public
// API of the same process, and MySQL, serve with.
func (s *Audiences) PaceUploads(rate int) *Audiences {
	s.uploadRate = rate
	return s
}

// Get, List, UsedBy and History read the store.
func (s *Audiences) Get(ctx context.Context, id int64) (popup.Audience, error) {
	return s.store.Get(ctx, id)
}

func (s *Audiences) List(ctx context.Context) ([]popup.Audience, error) {
	return s.store.List(ctx)
}

func (s *Audiences) UsedBy(ctx context.Context) (map[int64][]popup.AudienceUser, error) {
	return s.store.UsedBy(ctx)
}

func (s *Audiences) History(ctx context.Context, id int64) ([]popup.AudienceChange, error) {
	return s.store.History(ctx, id)
}

// Create stores a new, empty audience with a key of its own; an editor's.
func (s *Audiences) Create(ctx context.Context, actor popup.Actor, m popup.AudienceMeta) (popup.Audience, error) {
	if err := actor.Need(popup.RoleEditor, "creating an audience"); err != nil {
		return popup.Audience{}, err
	}
	if err := m.Validate(); err != nil {
		return popup.Audience{}, err
	}
	key, err := audience.NewKey()
	if err != nil {
		return popup.Audience{}, err
	}
	var out popup.Audience
	err = s.store.InTx(ctx, func(tx AudienceTx) (err error) {
		if out, err = tx.InsertAudience(ctx, m, key); err != nil {
			return err
		}
		return tx.RecordAudience(ctx, popup.AudienceChange{AudienceID: out.ID, Version: out.Version, At: s.now(), Actor: actor, Action: popup.AudienceCreate})
	})
	if err != nil {
		return popup.Audience{}, fmt.Errorf("create audience: %w", err)
	}
	return out, nil
}

// Update writes audience id's name and description, an editor's; with ifVersion non-nil only
// while its version is one of them. Metadata the audience already has writes nothing (changed
// false).
func (s *Audiences) Update(ctx context.Context, actor popup.Actor, id int64, m popup.AudienceMeta, ifVersion []int64) (out popup.Audience, changed bool, err error) {
	if err := m.Validate(); err != nil {
		return out, false, err
	}
	err = s.store.InTx(ctx, func(tx AudienceTx) error {
		a, err := tx.LockAudience(ctx, id)
		if err != nil {
			return err
		}
		if err := actor.Need(popup.RoleEditor, "changing an audience"); err != nil {
			return err
		}
		if err := versionMatches(a, ifVersion); err != nil {
			return err
		}
		if a.Name == m.Name && a.Description == m.Description {
			out = a
			return nil
		}
		if out, err = tx.SetAudienceMeta(ctx, id, m, a.Version+1); err != nil {
			return err
		}
		changed = true
		return tx.RecordAudience(ctx, popup.AudienceChange{AudienceID: id, Version: out.Version, At: s.now(), Actor: actor,
			Action: popup.AudienceUpdate, Size: out.Size})
	})
	if err != nil {
		return popup.Audience{}, false, fmt.Errorf("update audience %d: %w", id, err)
	}
	return out, changed, nil
}

// Delete removes audience id, a publisher's; an audience that live (active or paused) popups
// use is an *popup.InUseError naming them. Its history stays, with the delete.
func (s *Audiences) Delete(ctx context.Context, actor popup.Actor, id int64, ifVersion []int64) (out popup.Audience, err error) {
	err = s.store.InTx(ctx, func(tx AudienceTx) error {
		a, err := tx.LockAudience(ctx, id)
		if err != nil {
			return err
		}
		if err := actor.Need(popup.RolePublisher, "deleting an audience"); err != nil {
			return err
		}
		if err := versionMatches(a, ifVersion); err != nil {
			return err
		}
		users, err := tx.AudienceUsers(ctx, id)
		if err != nil {
			return err
		}
		if live := liveUsers(users); len(live) > 0 {
			return &popup.AudienceInUseError{Popups: live}
		}
		if err := tx.RecordAudience(ctx, popup.AudienceChange{AudienceID: id, Version: a.Version + 1, At: s.now(), Actor: actor,
			Action: popup.AudienceDelete, Removed: a.Size}); err != nil {
			return err
		}
		if err := tx.DeleteAudience(ctx, id); err != nil {
			return err
		}
		out = a
		if len(users) > 0 {
			return tx.BumpVersion(ctx) // drafts name it: their next save is refused
		}
		return nil
	})
	if err != nil {
		return popup.Audience{}, fmt.Errorf("delete audience %d: %w", id, err)
	}
	// The rows are the bulk of it: removed after the commit, and by any later prune when this
	// fails (they belong to no audience then).
	_ = s.store.DropAudienceParts(context.WithoutCancel(ctx), id)
	return out, nil
}

func versionMatches(a popup.Audience, ifVersion []int64) error {
	if ifVersion != nil && !slices.Contains(ifVersion, a.Version) {
		return popup.ErrAudienceVersionMismatch
	}
	return nil
}

func liveUsers(users []popup.AudienceUser) []popup.AudienceUser {
	var live []popup.AudienceUser
	for _, u := range users {
		if u.Live() {
			live = append(live, u)
		}
	}
	return live
}

// mayWriteMembers is the rights rule of member writes: an editor's while no live popup uses the
// audience, a publisher's once one does (a change of who sees a live popup).
func mayWriteMembers(actor popup.Actor, users []popup.AudienceUser) error {
	if len(liveUsers(users)) > 0 {
		return actor.Need(popup.RolePublisher, "changing the members of an audience that a live popup uses")
	}
	return actor.Need(popup.RoleEditor, "changing the members of an audience")
}

// upload is what the body of a member write held, read and validated.
type upload struct {
	id    int64 // the staged upload
	lines int   // uids read, repeats included
	// fps are the uids' fingerprints, sorted and distinct once read: outside the Go heap, freed
	// as soon as the write is committed (audience.Buffer).
	fps *audience.Buffer
}

// WriteMembers replaces audience id's members with those src yields (ActionReplace), or adds or
// removes them (ActionAdd, ActionRemove); with ifVersion non-nil only while its version is one of
// them. In this order: the audience, If-Match and the role as they stand (before reading the
// body); the body, streamed, each uid checked (*popup.InvalidMembersError naming the bad
// lines), the count limit (*popup.TooManyMembersError) and the memory budget
// (*popup.MemoryError); then the commit, which checks the role, If-Match and the budget
// again under the audience's lock (commitMembers).
func (s *Audiences) WriteMembers(ctx context.Context, actor popup.Actor, id int64, action popup.AudienceAction, ifVersion []int64, src popup.MemberLines) (popup.MemberWrite, error) {
	out, err := s.writeMembers(ctx, actor, id, action, ifVersion, src)
	if err != nil {
		return popup.MemberWrite{}, fmt.Errorf("%s members of audience %d: %w", action, id, err)
	}
	return out, nil
}

func (s *Audiences) writeMembers(ctx context.Context, actor popup.Actor, id int64, action popup.AudienceAction, ifVersion []int64, src popup.MemberLines) (popup.MemberWrite, error) {
	if !action.Members() {
		return popup.MemberWrite{}, fmt.Errorf("not a member write: %s", action)
	}
	a, err := s.store.Get(ctx, id)
	if err != nil {
		return popup.MemberWrite{}, err
	}
	if err := versionMatches(a, ifVersion); err != nil {
		return popup.MemberWrite{}, err
	}
	users, err := s.store.UsedBy(ctx)
	if err != nil {
		return popup.MemberWrite{}, err
	}
	if err := mayWriteMembers(actor, users[id]); err != nil {
		return popup.MemberWrite{}, err
	}
	all, err := s.store.List(ctx)
	if err != nil {
		return popup.MemberWrite{}, err
	}
	var others int64
	for _, o := range all {
		if o.ID != id {
			others += o.Size
		}
	}
	// Room for what read holds before its first deduplication, at most.
	up := upload{fps: audience.NewBuffer(action.Limit() + action.Limit()/4 + 1)}
	defer up.fps.Free()
	if up.id, err = s.store.StageUpload(ctx, id); err != nil {
		return popup.MemberWrite{}, err
	}
	committed := false
	defer func() {
		if !committed {
			_ = s.store.DropUpload(context.WithoutCancel(ctx), up.id) // what is left, a later prune takes
		}
	}()
	// Wall time, not s.now: the pacing is of real work.
	pace := newPacer(s.uploadRate, time.Now)
	if err := s.read(ctx, action, a.Key, src, others, &up, pace); err != nil {
		return popup.MemberWrite{}, err
	}
	fps := up.fps.Fingerprints() // valid until up.fps.Free
	distinct := len(fps)
	// The list can move between reading it and the commit (another write); the commit then
	// refuses (errListMoved) and the change is worked out again against the newer list.
	const attempts = 5
	var have *audience.Set
	if s.held != nil {
		if have, err = s.held.Current(ctx, id); err != nil && !errors.Is(err, popup.ErrAudienceNotFound) {
			return popup.MemberWrite{}, err
		}
	}
	for i := 0; ; i++ {
		cur, err := s.store.LoadSet(ctx, id, have)
		if err != nil {
			return popup.MemberWrite{}, err
		}
		have = cur
		ch := changeOf(action, cur, fps)
		if action != popup.AudienceReplace || i == 0 {
			// A replace stores the whole list whatever the current one; a delta only what changes it.
			if err := s.store.StageFingerprints(ctx, up.id, ch.fps, func(n int) error { return pace.wait(ctx, n) }); err != nil {
				return popup.MemberWrite{}, err
			}
		}
		out, err := s.commitMembers(ctx, actor, id, action, ifVersion, up.id, cur.Version(), ch)
		if errors.Is(err, errListMoved) && i+1 < attempts {
			continue
		}
		if err != nil {
			return popup.MemberWrite{}, err
		}
		committed = true
		// The fingerprints are stored: their memory leaves the process now, before this instance
		// loads the new set (a replace's is as large).
		up.fps.Free()
		if action == popup.AudienceReplace {
			// The uploads the new base supersedes: a failure leaves them to the next replace's prune.
			_ = s.store.Prune(context.WithoutCancel(ctx), id, out.Version)
		}
		return popup.MemberWrite{Audience: out, Lines: up.lines, Duplicates: up.lines - distinct, Added: ch.added, Removed: ch.removed}, nil
	}
}

// errListMoved is a commit that found the list at another version than the one its change was
// worked out against.
var errListMoved = errors.New("the member list changed meanwhile")

// paceLines is how many lines a member write reads between two looks at its pacer, and two
// yields to the requests: under 0.4 ms of reading (popup-api's own CPU for a whole 20 M replace,
// its sort and staging included, read 3.4-7.5 s in `make bench-upload`). On one P (GOMAXPROCS=1)
// the public GETs wait out each stretch; 075deda's message has the traces that chose 1,024.
const paceLines = 1024

// uidRowBytes is about what one staged row of uids holds: small enough that the store writes it
// without a copy (mysqlstore.StageRowBytes; a row of a megabyte cost two, about 640 MB of garbage
// for a 20 M replace, a collection every second while it ran), large enough that the rows are few.
const uidRowBytes = 128 << 10

// read streams the body into up: each uid checked and fingerprinted under key, its bytes staged
// in rows of about uidRowBytes (a replace's and an add's: what the list streams back), the
// fingerprints deduplicated as they pile up so that the count limit and (for a replace) the
// memory budget refuse an upload as soon as it is over, without reading the rest. After a bad
// line nothing more is staged or kept, only the bad lines counted.
func (s *Audiences) read(ctx context.Context, action popup.AudienceAction, key audience.Key, src popup.MemberLines, others int64, up *upload, pace *pacer) error {
	var (
		limit    = action.Limit()
		stageUID = action != popup.AudienceRemove
		row      = make([]byte, 0, uidRowBytes+128)
		seq      int
		bad      popup.InvalidMembersError
		syn      *popup.MemberSyntaxError // outside the loop: errors.As's target escapes, once
		// fps are deduplicated when they reach next: often enough that repeats cannot pile up far
		// past the limit, seldom enough that sorting costs little.
		next = limit + 1
	)
	for {
		b, line, err := src.Next()
		if err == io.EOF {
			break
		}
		if errors.As(err, &syn) {
			bad.Total++
			if len(bad.Lines) < popup.MaxReportedLines {
				bad.Lines = append(bad.Lines, popup.LineError{Line: syn.Line, Message: syn.Message})
			}
			bad.Columns = syn.Columns
			break
		}
		if err != nil {
			return fmt.Errorf("read the upload: %w", err)
		}
		up.lines++
		if up.lines%paceLines == 0 {
			// A long upload shares the process with the public listener: let waiting requests run
			// now rather than at the scheduler's next preemption, and keep to the upload rate.
			runtime.Gosched()
			if err := pace.wait(ctx, paceLines); err != nil {
				return err
			}
		}
		// uid views b without a copy: it is used (checked, hashed, copied into row) before the
		// next call.
		uid := unsafe.String(unsafe.SliceData(b), len(b))
		if !popup.ValidUID(uid) {
			bad.Total++
			if len(bad.Lines) < popup.MaxReportedLines {
				bad.Lines = append(bad.Lines, popup.LineError{Line: line, Message: badUID(b)})
			}
			continue
		}
		if bad.Total > 0 {
			continue
		}
		up.fps.Append(audience.Fingerprint(key, uid))
		if up.fps.Len() >= next {
			if err := up.fps.SortUnique(pace.sortPause(ctx)); err != nil {
				return err
			}
			if err := s.within(action, others, up.fps.Len()); err != nil {
				return err
			}
			next = max(limit+1, up.fps.Len()+limit/4)
		}
		if stageUID {
			row = append(append(row, b...), '\n')
			if len(row) >= uidRowBytes {
				if err := s.store.StageUIDs(ctx, up.id, seq, row); err != nil {
					return err
				}
				seq, row = seq+1, row[:0]
			}
		}
	}
	if bad.Total > 0 {
		return &bad
	}
	if err := up.fps.SortUnique(pace.sortPause(ctx)); err != nil {
		return err
	}
	if err := s.within(action, others, up.fps.Len()); err != nil {
		return err
	}
	if len(row) > 0 {
		return s.store.StageUIDs(ctx, up.id, seq, row)
	}
	return nil
}

// within checks n distinct uids of an upload against its count limit and, for a replace (whose
// size will be n), the memory budget with the other audiences' members.
func (s *Audiences) within(action popup.AudienceAction, others int64, n int) error {
	if n > action.Limit() {
		return &popup.TooManyMembersError{Action: action, Limit: action.Limit()}
	}
	if action == popup.AudienceReplace {
		return s.fits(others + int64(n))
	}
	return nil
}

// fits checks that every audience's sets, members in all, fit POPUP_AUDIENCE_MEMORY.
func (s *Audiences) fits(members int64) error {
	if need := int64(float64(members) * audience.BytesPerMember); need > s.memory {
		return &popup.AudienceMemoryError{Members: members, Need: need, Limit: s.memory}
	}
	return nil
}

// badUID says what is wrong with a line that is not a uid.
func badUID(b []byte) string {
	switch {
	case len(b) == 0:
		return "no uid"
	case len(b) > 64:
		return "longer than 64 characters"
	}
	return "not a uid: " + strconvQuote(b) + " has characters other than A-Za-z0-9_.:-"
}

func strconvQuote(b []byte) string {
	if len(b) > 64 {
		b = b[:64]
	}
	return fmt.Sprintf("%q", b)
}

// change is what a member write does to the list it is worked out against: the fingerprints its
// upload stores (a replace's whole list; a delta's only those that change the list), the members
// it really adds and removes, and the list's size after it.
type change struct {
	fps                  []uint64
	added, removed, size int64
}

// changeOf works out the change of action with the sorted, distinct fps against cur.
func changeOf(action popup.AudienceAction, cur *audience.Set, fps []uint64) change {
	old := cur.Fingerprints()
	var both int64              // in old and in fps
	only := make([]uint64, 0)   // in fps, not in old (an add's)
	common := make([]uint64, 0) // in fps and old (a remove's)
	i := 0
	for k, fp := range fps {
		if k%audience.YieldEvery == audience.YieldEvery-1 {
			runtime.Gosched() // a replace's 20 M are tens of milliseconds: let requests in between
		}
		for i < len(old) && old[i] < fp {
			i++
		}
		if i < len(old) && old[i] == fp {
			both++
			if action == popup.AudienceRemove {
				common = append(common, fp)
			}
			continue
		}
		if action == popup.AudienceAdd {
			only = append(only, fp)
		}
	}
	n := int64(len(old))
	switch action {
	case popup.AudienceAdd:
		return change{fps: only, added: int64(len(only)), size: n + int64(len(only))}
	case popup.AudienceRemove:
		return change{fps: common, removed: both, size: n - both}
	}
	return change{fps: fps, added: int64(len(fps)) - both, removed: n - both, size: int64(len(fps))}
}

// commitMembers is the commit of a member write, in one transaction, in this order: lock the
// audience (popup.ErrAudienceNotFound: deleted meanwhile); the role, against the popups that use
// it now (*popup.ForbiddenError); If-Match (popup.ErrAudienceVersionMismatch); the version the
// change was worked out against (errListMoved); the memory budget, locked; then the list's new
// version, the history's row and, when a popup uses the audience, the config version.
func (s *Audiences) commitMembers(ctx context.Context, actor popup.Actor, id int64, action popup.AudienceAction, ifVersion []int64,
	upload, against int64, ch change) (popup.Audience, error) {
	var out popup.Audience
	err := s.store.InTx(ctx, func(tx AudienceTx) error {
		a, err := tx.LockAudience(ctx, id)
		if err != nil {
			return err
		}
		users, err := tx.AudienceUsers(ctx, id)
		if err != nil {
			return err
		}
		if err := mayWriteMembers(actor, users); err != nil {
			return err
		}
		if err := versionMatches(a, ifVersion); err != nil {
			return err
		}
		if a.Version != against {
			return errListMoved
		}
		others, err := tx.OtherMembers(ctx, id)
		if err != nil {
			return err
		}
		if ch.size > a.Size {
			if err := s.fits(others + ch.size); err != nil {
				return err
			}
		}
		if out, err = tx.SetAudienceMembers(ctx, id, upload, a.Version+1, ch.size, action == popup.AudienceReplace); err != nil {
			return err
		}
		if err := tx.RecordAudience(ctx, popup.AudienceChange{AudienceID: id, Version: out.Version, At: s.now(), Actor: actor,
			Action: action, Upload: upload, Added: ch.added, Removed: ch.removed, Size: ch.size}); err != nil {
			return err
		}
		if len(users) > 0 {
			return tx.BumpVersion(ctx)
		}
		return nil
	})
	return out, err
}

// Members streams audience id's members to the writer open gives (called once the list is read,
// with its version: a missing audience fails before it), one uid a line, each once: the uids the
// list's uploads sent, kept when the set holds them and their place in it is not yet written.
func (s *Audiences) Members(ctx context.Context, id int64, open func(version int64) io.Writer) error {
	var have *audience.Set
	if s.held != nil {
		have, _ = s.held.Current(ctx, id) // a miss reads the list whole
	}
	var (
		set  *audience.Set
		seen []uint64 // a bit per position of the set
		w    *bufio.Writer
	)
	err := s.store.MemberRows(ctx, id, have, func(cur *audience.Set) error {
		set, seen = cur, make([]uint64, (cur.Len()+63)/64)
		w = bufio.NewWriterSize(open(cur.Version()), 64<<10)
		return nil
	}, func(row []byte) error {
		for len(row) > 0 {
			uid, rest, _ := bytes.Cut(row, []byte{'\n'})
			row = rest
			if len(uid) == 0 {
				continue
			}
			pos := set.Position(unsafe.String(unsafe.SliceData(uid), len(uid)))
			if pos < 0 || seen[pos/64]&(1<<(pos%64)) != 0 {
				continue
			}
			seen[pos/64] |= 1 << (pos % 64)
			w.Write(uid)
			if err := w.WriteByte('\n'); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("members of audience %d: %w", id, err)
	}
	return w.Flush()
}
