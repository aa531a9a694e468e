package sysctl

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// ExitStatus maps Run's error to the tool's exit status and the message for
// stderr ("" for none): 0 success, 1 a difference or failed write, 2 usage or
// setup error.
func ExitStatus(err error) (int, string) {
	var ee *exitError
	switch {
	case err == nil:
		return 0, ""
	case errors.As(err, &ee):
		return ee.code, ee.msg
	}
	return 2, err.Error()
}

const usage = `popup-sysctl: check, apply and roll back the popup service's kernel network
profiles (sysctl/*.conf, built in). See sysctl/README.md.

  popup-sysctl check    PROFILE   live values vs the profile (exit 1 on any DIFF)
  popup-sysctl apply    PROFILE   back up, install into sysctl.d, load
  popup-sysctl rollback [PROFILE] undo the most recent apply (of PROFILE)
  popup-sysctl keys     PROFILE   list keys with their namespace scope
  popup-sysctl backups            list backups, oldest first

Options (anywhere on the command line):
  --netns-only     only keys that live in a network namespace
  --global-only    only host-global keys
  --strict         check: a key missing on this kernel counts as a failure
  --force          rollback: ignore a proc-tree mismatch with the backup
  --root DIR       operate on a fake tree: DIR/proc/sys, DIR/etc/sysctl.d,
                   DIR/var/lib/popup-sysctl (for tests)

Environment:
  POPUP_SYSCTL_PROC        sysctl tree          (default /proc/sys)
  POPUP_SYSCTL_DIR         sysctl.d directory   (default /etc/sysctl.d)
  POPUP_SYSCTL_BACKUP_DIR  backup directory     (default /var/lib/popup-sysctl)
  POPUP_SYSCTL_PROFILE_DIR where PROFILE names are looked up (default: built in)

Exit status: 0 success / all match, 1 a difference or a failed write,
2 usage or setup error.
`

const (
	realProc      = "/proc/sys"
	realSysctlDir = "/etc/sysctl.d"
)

// exitError carries an exit code; a non-empty message goes to stderr.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

func fail(code int, format string, a ...any) error {
	return &exitError{code, fmt.Sprintf(format, a...)}
}

type tool struct {
	out                   io.Writer
	proc, sysctlDir, bdir string
	profileDir            string
	filter                Filter
	strict, force         bool
}

func env(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// Run runs popup-sysctl with argv (without the program name), writing its
// report to out. Its error carries the exit status (see ExitStatus).
func Run(argv []string, out io.Writer) error {
	t := &tool{
		out:        out,
		proc:       env("POPUP_SYSCTL_PROC", realProc),
		sysctlDir:  env("POPUP_SYSCTL_DIR", realSysctlDir),
		bdir:       env("POPUP_SYSCTL_BACKUP_DIR", "/var/lib/popup-sysctl"),
		profileDir: os.Getenv("POPUP_SYSCTL_PROFILE_DIR"),
		filter:     All,
	}
	setRoot := func(dir string) {
		t.proc = filepath.Join(dir, "proc/sys")
		t.sysctlDir = filepath.Join(dir, "etc/sysctl.d")
		t.bdir = filepath.Join(dir, "var/lib/popup-sysctl")
	}
	var args []string
	for i := 0; i < len(argv); i++ {
		a := argv[i]
		switch {
		case a == "--netns-only":
			t.filter = NetNS
		case a == "--global-only":
			t.filter = Global
		case a == "--strict":
			t.strict = true
		case a == "--force":
			t.force = true
		case a == "--root":
			if i+1 >= len(argv) || argv[i+1] == "" {
				return fail(2, "--root needs a directory")
			}
			i++
			setRoot(argv[i])
		case strings.HasPrefix(a, "--root="):
			setRoot(strings.TrimPrefix(a, "--root="))
		case a == "-h" || a == "--help" || a == "help":
			fmt.Fprint(out, usage)
			return nil
		case a == "--":
			args = append(args, argv[i+1:]...)
			i = len(argv)
		case strings.HasPrefix(a, "-"):
			return fail(2, "unknown option: %s (try: popup-sysctl --help)", a)
		default:
			args = append(args, a)
		}
	}
	if len(args) == 0 {
		fmt.Fprint(os.Stderr, usage)
		return fail(2, "")
	}
	arg := ""
	if len(args) > 1 {
		arg = args[1]
	}
	switch args[0] {
	case "check", "apply", "keys":
		if arg == "" {
			return fail(2, "%s needs a PROFILE argument (try: popup-sysctl --help)", args[0])
		}
	}
	switch args[0] {
	case "check":
		return t.check(arg)
	case "apply":
		return t.apply(arg)
	case "rollback":
		return t.rollback(arg)
	case "keys":
		return t.keys(arg)
	case "backups":
		return t.backups()
	}
	return fail(2, "unknown command: %s (try: popup-sysctl --help)", args[0])
}

// resolve returns the profile's source (a path or "built-in NAME") and text.
func (t *tool) resolve(arg string) (string, string, error) {
	if st, err := os.Stat(arg); err == nil && st.Mode().IsRegular() {
		b, err := os.ReadFile(arg)
		return arg, string(b), err
	}
	if t.profileDir != "" {
		p := filepath.Join(t.profileDir, arg+".conf")
		if b, err := os.ReadFile(p); err == nil {
			return p, string(b), nil
		}
		return "", "", fail(2, "no such profile: %s (looked for %s and %s)", arg, arg, p)
	}
	if text, ok := Profile(arg); ok {
		return "built-in " + arg + ".conf", text, nil
	}
	return "", "", fail(2, "no such profile: %s (looked for %s and the built-in profiles api-host, loadgen-host)", arg, arg)
}

func (t *tool) load(arg string) (src, name, text string, set []Setting, err error) {
	if src, text, err = t.resolve(arg); err != nil {
		return
	}
	if name, err = ProfileName(arg); err != nil {
		err = fail(2, "%v", err)
		return
	}
	if set, err = Parse(src, text, t.filter); err != nil {
		err = fail(2, "%v", err)
	}
	return
}

func (t *tool) keys(arg string) error {
	_, _, _, set, err := t.load(arg)
	if err != nil {
		return err
	}
	for _, s := range set {
		fmt.Fprintf(t.out, "%-40s %-7s %s\n", s.Key, Scope(s.Key), K8s(s.Key))
	}
	return nil
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

func (t *tool) check(arg string) error {
	src, name, _, set, err := t.load(arg)
	if err != nil {
		return err
	}
	if !isDir(t.proc) {
		return fail(2, "sysctl tree not found: %s", t.proc)
	}
	rs := Check(DirTree(t.proc), set)
	fmt.Fprintf(t.out, "%-40s %-22s %-22s %s\n", "KEY", "WANT", "HAVE", "STATUS")
	for _, r := range rs {
		fmt.Fprintf(t.out, "%-40s %-22s %-22s %s\n", r.Key, r.Want, r.Have, r.Status)
	}
	ok, diff, missing := Count(rs)
	fmt.Fprintf(t.out, "%s: %d OK, %d DIFF, %d MISSING (profile %s, tree %s)\n", name, ok, diff, missing, src, t.proc)
	if Failed(rs, t.strict) {
		return fail(1, "")
	}
	return nil
}

func sameFile(a, b string) bool {
	sa, err1 := os.Stat(a)
	sb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(sa, sb)
}

func writeAtomic(p string, data []byte, mode os.FileMode) error {
	tmp := fmt.Sprintf("%s.tmp.%d", p, os.Getpid())
	if err := os.WriteFile(tmp, data, mode); err != nil {
		return err
	}
	if err := os.Chmod(tmp, mode); err != nil {
		return err
	}
	return os.Rename(tmp, p)
}

func (t *tool) apply(arg string) error {
	src, name, text, set, err := t.load(arg)
	if err != nil {
		return err
	}
	if len(set) == 0 {
		return fail(2, "profile %s has no keys selected by --%s-only", name, t.filter)
	}
	// A fake proc tree with the real sysctl.d would install a file that the
	// next boot applies to the real kernel. That is never what a test wants.
	if !sameFile(t.proc, realProc) && (t.sysctlDir == realSysctlDir || sameFile(t.sysctlDir, realSysctlDir)) {
		return fail(2, "refusing: tree %s is not %s but the sysctl.d dir is %s; set POPUP_SYSCTL_DIR or use --root", t.proc, realProc, realSysctlDir)
	}
	if !isDir(t.proc) {
		return fail(2, "sysctl tree not found: %s", t.proc)
	}
	tree := DirTree(t.proc)
	installed := filepath.Join(t.sysctlDir, "90-popup-"+name+".conf")
	for _, d := range []string{t.bdir, t.sysctlDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fail(2, "%v", err)
		}
	}
	_ = os.Chmod(t.bdir, 0o700) // best effort, as before
	now := time.Now().UTC()
	backup := filepath.Join(t.bdir, fmt.Sprintf("backup-%s%09dZ-%s.conf", now.Format("20060102T150405."), now.Nanosecond(), name))
	prev := "none"
	if old, err := os.ReadFile(installed); err == nil {
		prev = backup + ".prev"
		if err := os.WriteFile(prev, old, 0o644); err != nil {
			return fail(2, "%v", err)
		}
	}

	// 1. Back up the current value of every selected key (before any change).
	var b strings.Builder
	stamp := now.Format("2006-01-02T15:04:05Z")
	fmt.Fprintf(&b, "# popup-sysctl backup\n# created: %s\n# profile: %s\n# source: %s\n# proc: %s\n# installed: %s\n# previous-install: %s\n",
		stamp, name, src, t.proc, installed, prev)
	for _, s := range set {
		if !tree.Present(s.Key) {
			fmt.Fprintf(&b, "# missing-on-this-kernel: %s\n", s.Key)
		} else if have, err := tree.Read(s.Key); err == nil {
			fmt.Fprintf(&b, "%s = %s\n", s.Key, have)
		} else {
			fmt.Fprintf(&b, "# unreadable: %s\n", s.Key)
		}
	}
	if err := writeAtomic(backup, []byte(b.String()), 0o600); err != nil {
		return fail(2, "%v", err)
	}
	fmt.Fprintf(t.out, "backup: %s\n", backup)

	// 2. Install the profile into sysctl.d (atomically).
	if err := writeAtomic(installed, []byte(RenderInstall(text, src, stamp, t.filter, set)), 0o644); err != nil {
		return fail(2, "%v", err)
	}
	fmt.Fprintf(t.out, "installed: %s\n", installed)

	// 3. Load it. Keys this kernel (or this network namespace) lacks are skipped.
	skipped := 0
	for _, s := range set {
		if !tree.Present(s.Key) {
			fmt.Fprintf(t.out, "skip: %s (not present on this kernel / in this network namespace)\n", s.Key)
			skipped++
		}
	}
	fmt.Fprintf(t.out, "loading: writing keys under %s\n", t.proc)
	_, lerr := Load(tree, set)
	if lerr != nil {
		fmt.Fprintf(os.Stderr, "popup-sysctl: %v\n", lerr)
	}

	// 4. Verify.
	failed := 0
	for _, r := range Check(tree, set) {
		switch r.Status {
		case OK:
			fmt.Fprintf(t.out, "set: %s = %s\n", r.Key, r.Have)
		case Diff:
			fmt.Fprintf(t.out, "FAILED: %s: want %s, have %s\n", r.Key, r.Want, r.Have)
			failed++
		}
	}
	fmt.Fprintf(t.out, "apply %s: %d set, %d skipped, %d failed\n", name, len(set)-skipped-failed, skipped, failed)
	if failed > 0 || lerr != nil {
		return fail(1, "apply incomplete; 'popup-sysctl rollback' restores the backed-up values")
	}
	return nil
}

func (t *tool) backupFiles(pattern string) []string {
	files, _ := filepath.Glob(filepath.Join(t.bdir, pattern))
	return files
}

func (t *tool) rollback(only string) error {
	if only != "" {
		n, err := ProfileName(only)
		if err != nil {
			return fail(2, "%v", err)
		}
		only = n
	}
	var backup, text string
	for _, f := range t.backupFiles("backup-*.conf") {
		b, err := os.ReadFile(f)
		if err != nil || only != "" && BackupHeader(string(b), "profile") != only {
			continue
		}
		if backup == "" || filepath.Base(f) > filepath.Base(backup) {
			backup, text = f, string(b)
		}
	}
	if backup == "" {
		msg := "no backup to roll back in " + t.bdir
		if only != "" {
			msg += " for profile " + only
		}
		return fail(1, "%s", msg)
	}
	installed := BackupHeader(text, "installed")
	prev := BackupHeader(text, "previous-install")
	recorded := BackupHeader(text, "proc")
	if installed == "" {
		return fail(2, "%s: no '# installed:' header", backup)
	}
	if recorded != t.proc && !sameFile(recorded, t.proc) && !t.force {
		return fail(2, "%s was taken from %s, not %s; refusing (use the same --root/POPUP_SYSCTL_PROC, or --force)", backup, recorded, t.proc)
	}
	fmt.Fprintf(t.out, "rollback: %s\n", backup)
	set, err := Parse(backup, text, All)
	if err != nil {
		return fail(2, "%v", err)
	}
	tree := DirTree(t.proc)
	_, lerr := Load(tree, set)
	if lerr != nil {
		fmt.Fprintf(os.Stderr, "popup-sysctl: %v\n", lerr)
	}
	failed := 0
	for _, r := range Check(tree, set) {
		switch r.Status {
		case Missing:
			fmt.Fprintf(t.out, "skip: %s (not present)\n", r.Key)
		case OK:
			fmt.Fprintf(t.out, "restored: %s = %s\n", r.Key, r.Have)
		default:
			fmt.Fprintf(t.out, "FAILED: %s: want %s, have %s\n", r.Key, r.Want, r.Have)
			failed++
		}
	}
	if st, err := os.Stat(prev); prev != "none" && err == nil && st.Mode().IsRegular() {
		if err := os.Rename(prev, installed); err != nil {
			return fail(2, "%v", err)
		}
		fmt.Fprintf(t.out, "reinstated previous: %s\n", installed)
	} else {
		if err := os.Remove(installed); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fail(2, "%v", err)
		}
		fmt.Fprintf(t.out, "removed: %s\n", installed)
	}
	if err := os.Rename(backup, backup+".rolled-back"); err != nil {
		return fail(2, "%v", err)
	}
	if failed > 0 || lerr != nil {
		return fail(1, "rollback incomplete: %d key(s) not restored", failed)
	}
	return nil
}

func (t *tool) backups() error {
	files := append(t.backupFiles("backup-*.conf"), t.backupFiles("backup-*.conf.rolled-back")...)
	if len(files) == 0 {
		fmt.Fprintf(t.out, "no backups in %s\n", t.bdir)
		return nil
	}
	sort.Strings(files)
	for _, f := range files {
		fmt.Fprintln(t.out, f)
	}
	return nil
}
