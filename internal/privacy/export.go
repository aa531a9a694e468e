package privacy

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"popupsvc/internal/audience"
	"popupsvc/internal/popup"
)

// Export is everything the service holds about one uid (docs/CONTRACT.md §12): the answer to an
// access request.
type Export struct {
	UID        string
	ExportedAt time.Time
	// State is the user's display state per popup: the newest of what Redis and MySQL hold.
	State       []PopupState
	Actions     []Action     // the action log's rows still within retention, oldest first
	Experiments []Experiment // the user's rows of experiment phases
	Audiences   []Membership // the audiences whose current version has the uid as a member
	// Conversions are the user's reported conversions (docs/CONTRACT.md §14), oldest first.
	Conversions []Conversion
	// Goals are the user's goal attribution per experiment phase (popup_experiment_goal_user).
	Goals []GoalAttribution
	// Uploads are the stored audience upload rows whose uid lists name the user.
	Uploads []UploadRow
	// Kept are the rows that name the user and that an erasure keeps (docs/SECURITY.md): the
	// QA uids operators typed into a popup's targeting, in the popup, its revisions and its audit
	// entries.
	Kept []Kept
}

// GoalAttribution is the user's row of one goal in one experiment phase: the conversions that
// counted for the user's arm.
type GoalAttribution struct {
	PopupID     int64
	Salt        string
	Goal        string
	Arm         string
	Conversions int64
	ValueSum    float64
	FirstAt     time.Time
}

// UploadRow is one stored part of an audience upload whose uid list names the user.
type UploadRow struct {
	AudienceID int64
	UploadID   int64
	Part       int
	Version    int64 // 0: a staged upload, not yet a version
}

// Kept says that Rows rows of Table about popup PopupID name the user and stay after an erasure.
type Kept struct {
	Table   string // popup_config, popup_revision or popup_audit
	PopupID int64
	Rows    int64
}

// Conversion is one row of the conversion log.
type Conversion struct {
	Goal    string
	EventID string
	Value   float64
	At      time.Time
}

// PopupState is the user's state of one popup.
type PopupState struct {
	PopupID int64
	popup.PopupState
}

// Action is one row of the action log.
type Action struct {
	PopupID    int64
	Action     string
	At         time.Time
	EventID    string
	DecisionID string
	Button     int // -1: none
}

// Experiment is the user's row of one experiment phase.
type Experiment struct {
	PopupID        int64
	Salt           string
	Arm            string
	FirstExposedAt time.Time
	Exposures      int64
	Clicks         int64
	Closes         int64
	FirstClickAt   time.Time // zero: none
}

// Membership is an audience the user is a member of.
type Membership struct {
	AudienceID int64
	Name       string
	Version    int64
}

// ExportStore reads the user's rows (mysqlstore.PrivacyRepo).
type ExportStore interface {
	UserStateRows(ctx context.Context, uid string) (map[int64]popup.PopupState, error)
	Actions(ctx context.Context, uid string) ([]Action, error)
	ExperimentRows(ctx context.Context, uid string) ([]Experiment, error)
	Conversions(ctx context.Context, uid string) ([]Conversion, error)
	GoalRows(ctx context.Context, uid string) ([]GoalAttribution, error)
	UploadRows(ctx context.Context, uid string) ([]UploadRow, error)
	KeptRows(ctx context.Context, uid string) ([]Kept, error)
	// RecordExport adds the export, by actor at at, to the audit log (never the uid).
	RecordExport(ctx context.Context, actor popup.Actor, at time.Time) error
}

// StatePeek reads the user's state in Redis without caching anything (redisstore.UserStore).
type StatePeek interface {
	Peek(ctx context.Context, uid string) (popup.UserState, error)
}

// AudienceLists lists the audiences; AudienceSets gives the member set this instance serves.
type AudienceLists interface {
	List(ctx context.Context) ([]popup.Audience, error)
}

// AudienceSets gives the set of one audience this instance serves (popup.ErrAudienceNotFound).
type AudienceSets interface {
	Current(ctx context.Context, id int64) (*audience.Set, error)
}

// Exporter builds a user's export. It writes nothing of the user (a user who has been erased
// stays so); the audit log records who exported when.
type Exporter struct {
	Store     ExportStore
	States    StatePeek
	Audiences AudienceLists
	Sets      AudienceSets
	Now       func() time.Time
}

// Export returns what the service holds about uid (validated by the caller), asked by actor,
// once the audit log has recorded it: an export it cannot record is not made.
func (x *Exporter) Export(ctx context.Context, actor popup.Actor, uid string) (Export, error) {
	out := Export{UID: uid, ExportedAt: x.Now().UTC(), State: []PopupState{}}
	rows, err := x.Store.UserStateRows(ctx, uid)
	if err != nil {
		return Export{}, fmt.Errorf("export: %w", err)
	}
	live, err := x.States.Peek(ctx, uid)
	if err != nil {
		return Export{}, fmt.Errorf("export: %w", err)
	}
	for _, e := range live.Popups {
		rows[e.ID] = popup.MergeState(rows[e.ID], e.PopupState)
	}
	for id, ps := range rows {
		out.State = append(out.State, PopupState{PopupID: id, PopupState: ps})
	}
	slices.SortFunc(out.State, func(a, b PopupState) int { return cmp.Compare(a.PopupID, b.PopupID) })
	if out.Actions, err = x.Store.Actions(ctx, uid); err != nil {
		return Export{}, fmt.Errorf("export: %w", err)
	}
	if out.Experiments, err = x.Store.ExperimentRows(ctx, uid); err != nil {
		return Export{}, fmt.Errorf("export: %w", err)
	}
	if out.Conversions, err = x.Store.Conversions(ctx, uid); err != nil {
		return Export{}, fmt.Errorf("export: %w", err)
	}
	if out.Goals, err = x.Store.GoalRows(ctx, uid); err != nil {
		return Export{}, fmt.Errorf("export: %w", err)
	}
	if out.Uploads, err = x.Store.UploadRows(ctx, uid); err != nil {
		return Export{}, fmt.Errorf("export: %w", err)
	}
	if out.Kept, err = x.Store.KeptRows(ctx, uid); err != nil {
		return Export{}, fmt.Errorf("export: %w", err)
	}
	if out.Audiences, err = x.memberships(ctx, uid); err != nil {
		return Export{}, fmt.Errorf("export: %w", err)
	}
	if err := x.Store.RecordExport(ctx, actor, out.ExportedAt); err != nil {
		return Export{}, fmt.Errorf("export: %w", err)
	}
	return out, nil
}

// memberships checks uid against the set of every audience this instance serves.
func (x *Exporter) memberships(ctx context.Context, uid string) ([]Membership, error) {
	all, err := x.Audiences.List(ctx)
	if err != nil {
		return nil, err
	}
	out := []Membership{}
	for _, a := range all {
		set, err := x.Sets.Current(ctx, a.ID)
		if err != nil {
			if errors.Is(err, popup.ErrAudienceNotFound) {
				continue // deleted since the list
			}
			return nil, err
		}
		if set.Contains(uid) {
			out = append(out, Membership{AudienceID: a.ID, Name: a.Name, Version: set.Version()})
		}
	}
	return out, nil
}
