#!/usr/bin/env bash
# Tests for the sysctl profiles and sysctl/popup-sysctl.
#
#   bash sysctl/test.sh        (as root: it creates and deletes network namespaces)
#
# It never changes the host's own sysctls. Values are only written inside
# network namespaces this script creates (popup-sysctl-test-<pid>-<n>, deleted on
# exit), or into a fake proc tree and a fake sysctl.d under a temp dir. The
# host's values of every profile key are compared before vs after.
#
# Sections: (d) lint of the profiles, (a) every netns key set and read back in
# a fresh netns, (b) `popup-sysctl check` and a real apply/rollback inside a
# netns, (c) apply/rollback against a fake tree.
# Last line: "N passed, M failed". Exit status is non-zero on any failure.

set -uo pipefail
# Start from the tool's defaults whatever the caller's environment says.
unset POPUP_SYSCTL_PROC POPUP_SYSCTL_DIR POPUP_SYSCTL_BACKUP_DIR POPUP_SYSCTL_PROFILE_DIR

HERE=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
TOOL=$HERE/popup-sysctl
NS_PREFIX=popup-sysctl-test-$$
NS_SEQ=0
PASSED=0
FAILED=0
TMP=$(mktemp -d "${TMPDIR:-/tmp}/popup-sysctl-test.XXXXXX")
NOT_SETTABLE=()

pass() {
	PASSED=$((PASSED + 1))
	printf 'ok   %s\n' "$*"
}
fail() {
	FAILED=$((FAILED + 1))
	printf 'FAIL %s\n' "$*"
}
# check_that DESCRIPTION COMMAND...: pass when COMMAND succeeds.
check_that() {
	local desc=$1
	shift
	if "$@"; then pass "$desc"; else fail "$desc"; fi
}
# check_quiet DESCRIPTION COMMAND...: same, with COMMAND's output discarded.
check_quiet() {
	local desc=$1
	shift
	if "$@" >/dev/null 2>&1; then pass "$desc"; else fail "$desc"; fi
}

cleanup() {
	local ns
	# Only namespaces this run created (the prefix carries our PID).
	while read -r ns _; do
		[[ $ns == "$NS_PREFIX"-* ]] && ip netns delete "$ns" 2>/dev/null
	done < <(ip netns list 2>/dev/null)
	rm -rf -- "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

norm() {
	local v=${1//$'\n'/ }
	local -a parts=()
	v=${v//$'\t'/ }
	read -r -a parts <<<"$v" || true
	printf '%s' "${parts[*]:-}"
}

# profile_pairs FILE: "key<TAB>value" for each key line (value normalised).
profile_pairs() {
	local line key val
	while IFS= read -r line || [[ -n $line ]]; do
		line=$(norm "$line")
		[[ -z $line || $line == '#'* || $line == ';'* ]] && continue
		key=$(norm "${line%%=*}")
		val=$(norm "${line#*=}")
		printf '%s\t%s\n' "${key#-}" "$val"
	done <"$1"
}

host_value() {
	local p=/proc/sys/${1//.//}
	if [[ -r $p ]]; then norm "$(cat -- "$p")"; else printf '<absent>'; fi
}

new_ns() {
	NS_SEQ=$((NS_SEQ + 1))
	NS=$NS_PREFIX-$NS_SEQ
	ip netns add "$NS"
}

del_ns() { ip netns delete "$1"; }

shopt -s nullglob
PROFILES=("$HERE"/*.conf)
shopt -u nullglob

echo "# popup-sysctl tests: kernel $(uname -r), ${#PROFILES[@]} profiles"
if ((${#PROFILES[@]} == 0)); then
	fail "no profiles (*.conf) found in $HERE"
fi

declare -A ALL_KEYS=()
for prof in "${PROFILES[@]}"; do
	while IFS=$'\t' read -r k _; do ALL_KEYS[$k]=1; done < <(profile_pairs "$prof")
done

# Host snapshot of every profile key, compared again at the very end.
declare -A HOST_BEFORE=()
for k in "${!ALL_KEYS[@]}"; do HOST_BEFORE[$k]=$(host_value "$k"); done

# ------------------------------------------------------------------ (d) lint
echo "# (d) lint"
check_that "popup-sysctl parses (bash -n)" bash -n "$TOOL"
if command -v shellcheck >/dev/null 2>&1; then
	check_that "shellcheck popup-sysctl test.sh" shellcheck "$TOOL" "${BASH_SOURCE[0]}"
fi

for prof in "${PROFILES[@]}"; do
	pname=$(basename "$prof" .conf)
	check_quiet "$pname: popup-sysctl keys parses it" "$TOOL" keys "$prof"

	# Every key line sits right under a comment, and its comment block states
	# Why and Cost.
	bad=$(awk '
		/^[ \t]*$/ { block = ""; prevc = 0; next }
		/^[ \t]*[#;]/ { block = block "\n" $0; prevc = 1; next }
		{
			k = $0; sub(/[ \t]*=.*/, "", k); sub(/^[ \t]*-?/, "", k)
			if (!prevc) print k ": no comment line directly above"
			else if (block !~ /Why:/ || block !~ /Cost:/) print k ": comment lacks Why:/Cost:"
			block = ""; prevc = 0
		}' "$prof")
	if [[ -z $bad ]]; then pass "$pname: every key has a Why/Cost comment directly above"; else fail "$pname: $bad"; fi

	pairs=$(profile_pairs "$prof")
	if grep -q 'tcp_tw_recycle' <<<"$(cut -f1 <<<"$pairs")"; then
		fail "$pname: sets tcp_tw_recycle (removed in Linux 4.12, broke NAT clients)"
	else
		pass "$pname: no tcp_tw_recycle"
	fi

	dups=$(cut -f1 <<<"$pairs" | sort | uniq -d)
	if [[ -z $dups ]]; then pass "$pname: no duplicate keys"; else fail "$pname: duplicate keys: $dups"; fi

	tw=$(awk -F'\t' '$1=="net.ipv4.tcp_max_tw_buckets"{print $2}' <<<"$pairs")
	if [[ $tw =~ ^[0-9]+$ ]] && ((tw >= 100000)); then
		pass "$pname: tcp_max_tw_buckets explicitly high ($tw >= 100000)"
	else
		fail "$pname: tcp_max_tw_buckets must be set and >= 100000 (got '${tw:-unset}')"
	fi

	range=$(awk -F'\t' '$1=="net.ipv4.ip_local_port_range"{print $2}' <<<"$pairs")
	if [[ -n $range ]]; then
		read -r lo hi <<<"$range"
		if [[ $lo =~ ^[0-9]+$ && $hi =~ ^[0-9]+$ ]] && ((lo >= 10240 && lo < hi && hi <= 65535)); then
			pass "$pname: ip_local_port_range $lo-$hi starts >= 10240"
		else
			fail "$pname: ip_local_port_range '$range' must be LOW HIGH with 10240 <= LOW < HIGH <= 65535"
		fi
		if (((lo % 2) != (hi % 2))); then
			pass "$pname: ip_local_port_range bounds have different parity"
		else
			fail "$pname: ip_local_port_range bounds have the same parity (kernel: prefer different parity)"
		fi
	fi

	missing=()
	while IFS=$'\t' read -r k _; do
		[[ -e /proc/sys/${k//.//} ]] || missing+=("$k")
	done <<<"$pairs"
	if ((${#missing[@]} == 0)); then
		pass "$pname: every key exists on this kernel"
	else
		fail "$pname: keys not present on this kernel: ${missing[*]}"
	fi
done

if ((EUID != 0)); then
	fail "sections (a) and (b) need root (ip netns); run as root"
fi
if ! command -v ip >/dev/null 2>&1; then
	fail "sections (a) and (b) need iproute2 (ip)"
fi

if ((EUID == 0)) && command -v ip >/dev/null 2>&1; then
	# --------------------------------------------- classification vs kernel
	# A net.* key the tool calls "netns" must exist inside a fresh netns; one it
	# calls "global" must not (the kernel registers those in the initial
	# namespace only).
	echo "# classification vs this kernel"
	declare -A SCOPE=()
	for prof in "${PROFILES[@]}"; do
		while read -r k s _; do SCOPE[$k]=$s; done < <("$TOOL" keys "$prof")
	done
	new_ns
	probe=$NS
	for k in $(printf '%s\n' "${!ALL_KEYS[@]}" | sort); do
		[[ $k == net.* ]] || continue
		[[ -e /proc/sys/${k//.//} ]] || continue # absent from this kernel: lint reports it
		scope=${SCOPE[$k]:-?}
		if ip netns exec "$probe" test -e "/proc/sys/${k//.//}"; then seen=netns; else seen=global; fi
		if [[ $scope == "$seen" ]]; then
			pass "scope of $k is $scope (matches the kernel)"
		else
			fail "scope of $k: tool says '$scope', kernel behaves as '$seen'"
		fi
	done
	del_ns "$probe"

	# -------------------------------------------- (a) set/read back per netns
	echo "# (a) each network-namespaced key in its own fresh namespace"
	for prof in "${PROFILES[@]}"; do
		pname=$(basename "$prof" .conf)
		declare -A want=()
		while IFS=$'\t' read -r k v; do want[$k]=$v; done < <(profile_pairs "$prof")
		while read -r k _; do
			v=${want[$k]}
			before=$(host_value "$k")
			if ! new_ns; then
				fail "$pname $k: ip netns add failed"
				continue
			fi
			if out=$(ip netns exec "$NS" sysctl -w "$k=$v" 2>&1); then
				got=$(norm "$(ip netns exec "$NS" sysctl -n "$k" 2>&1)")
				if [[ $got == "$v" ]]; then
					pass "$pname $k = $v inside $NS"
				else
					fail "$pname $k: wrote '$v' inside $NS, read back '$got'"
					NOT_SETTABLE+=("$k")
				fi
			else
				fail "$pname $k: cannot be set inside a netns: $out"
				NOT_SETTABLE+=("$k")
			fi
			del_ns "$NS"
			after=$(host_value "$k")
			if [[ $before == "$after" ]]; then
				pass "$pname $k: host value unchanged ($after)"
			else
				fail "$pname $k: host value changed from '$before' to '$after'"
			fi
		done < <("$TOOL" keys --netns-only "$prof")
		unset want
	done

	# --------------------------------------------- (b) check inside a netns
	echo "# (b) popup-sysctl inside a network namespace"
	for prof in "${PROFILES[@]}"; do
		pname=$(basename "$prof" .conf)
		mapfile -t nskeys < <("$TOOL" keys --netns-only "$prof" | awk '{print $1}')
		mapfile -t globalkeys < <("$TOOL" keys --global-only "$prof" | awk '{print $1}')
		declare -A want=()
		while IFS=$'\t' read -r k v; do want[$k]=$v; done < <(profile_pairs "$prof")

		# A fresh namespace starts at kernel defaults: check must see a DIFF.
		new_ns
		ip netns exec "$NS" "$TOOL" check --netns-only "$prof" >"$TMP/out" 2>&1
		rc=$?
		if ((rc == 1)) && grep -q ' DIFF$' "$TMP/out"; then
			pass "$pname: check in a fresh netns reports DIFF and exits 1"
		else
			fail "$pname: check in a fresh netns: rc=$rc, expected 1 with DIFF lines"
			sed 's/^/    /' "$TMP/out"
		fi

		setok=1
		for k in "${nskeys[@]}"; do
			ip netns exec "$NS" sysctl -q -w "$k=${want[$k]}" >/dev/null 2>&1 || setok=0
		done
		check_that "$pname: all netns keys written inside $NS" test "$setok" = 1

		ip netns exec "$NS" "$TOOL" check --netns-only "$prof" >"$TMP/out" 2>&1
		rc=$?
		if ((rc == 0)); then pass "$pname: check --netns-only exits 0 inside $NS"; else fail "$pname: check --netns-only exited $rc inside $NS"; fi
		for k in "${nskeys[@]}"; do
			if grep -Eq "^${k//./\\.} .* OK$" "$TMP/out"; then
				pass "$pname: check reports OK for $k"
			else
				fail "$pname: check does not report OK for $k: $(grep -E "^${k//./\\.} " "$TMP/out")"
			fi
		done

		# Unfiltered: host-global net.* keys are invisible in a netns -> MISSING,
		# which is reported but (without --strict) not a failure.
		ip netns exec "$NS" "$TOOL" check "$prof" >"$TMP/out" 2>&1
		rc=$?
		allmissing=1
		for k in "${globalkeys[@]}"; do
			[[ $k == net.* ]] || continue
			grep -Eq "^${k//./\\.} .* MISSING$" "$TMP/out" || allmissing=0
		done
		if ((rc == 0 && allmissing)); then
			pass "$pname: unfiltered check in netns: global keys MISSING, exit 0"
		else
			fail "$pname: unfiltered check in netns: rc=$rc, global keys MISSING=$allmissing"
			sed 's/^/    /' "$TMP/out"
		fi
		if ((${#globalkeys[@]})); then
			ip netns exec "$NS" "$TOOL" --strict check "$prof" >/dev/null 2>&1
			rc=$?
			check_that "$pname: --strict makes MISSING fatal (exit 1)" test "$rc" = 1
		fi
		del_ns "$NS"

		# The production load path (sysctl -p on the real /proc/sys), but inside
		# a throwaway netns, with sysctl.d and backups redirected to $TMP.
		new_ns
		nsroot=$TMP/ns-$pname
		mkdir -p "$nsroot"
		defaults=$(ip netns exec "$NS" "$TOOL" check --netns-only "$prof" | awk 'NR>1 && NF>=4 {print $1, $(NF-1)}')
		if ip netns exec "$NS" env POPUP_SYSCTL_DIR="$nsroot/sysctl.d" POPUP_SYSCTL_BACKUP_DIR="$nsroot/backup" \
			"$TOOL" apply --netns-only "$prof" >"$TMP/out" 2>&1; then
			pass "$pname: apply --netns-only via sysctl -p inside $NS"
		else
			fail "$pname: apply --netns-only inside $NS failed"
			sed 's/^/    /' "$TMP/out"
		fi
		check_that "$pname: apply used sysctl -p on the netns /proc/sys" grep -q '^loading: sysctl -e -q -p' "$TMP/out"
		check_quiet "$pname: after apply, check --netns-only passes inside $NS" \
			ip netns exec "$NS" "$TOOL" check --netns-only "$prof"
		inst=$nsroot/sysctl.d/90-popup-$pname.conf
		if ((${#globalkeys[@]})); then
			check_that "$pname: installed file comments out global keys under --netns-only" \
				grep -q '^# \[popup-sysctl: not selected by --netns-only\] net.core.netdev_max_backlog' "$inst"
		fi
		if ip netns exec "$NS" env POPUP_SYSCTL_DIR="$nsroot/sysctl.d" POPUP_SYSCTL_BACKUP_DIR="$nsroot/backup" \
			"$TOOL" rollback >"$TMP/out" 2>&1; then
			pass "$pname: rollback inside $NS"
		else
			fail "$pname: rollback inside $NS failed"
			sed 's/^/    /' "$TMP/out"
		fi
		restored=$(ip netns exec "$NS" "$TOOL" check --netns-only "$prof" | awk 'NR>1 && NF>=4 {print $1, $(NF-1)}')
		check_that "$pname: rollback restored the netns defaults" test "$restored" = "$defaults"
		check_that "$pname: rollback removed the installed file" test ! -e "$inst"
		del_ns "$NS"
		unset want
	done
fi

# ------------------------------------------- (c) apply/rollback, fake tree
echo "# (c) apply + rollback against a fake proc tree and sysctl.d"

# Old values for the fake tree: kernel-default-like, the port range with a TAB
# the way /proc prints it.
declare -A OLD=(
	[net.core.somaxconn]=4096
	[net.ipv4.tcp_max_syn_backlog]=2048
	[net.core.netdev_max_backlog]=1000
	[net.ipv4.ip_local_port_range]=$'32768\t60999'
	[net.ipv4.tcp_fin_timeout]=60
	[net.ipv4.tcp_tw_reuse]=2
	[net.ipv4.tcp_timestamps]=1
	[net.ipv4.tcp_keepalive_time]=7200
	[net.ipv4.tcp_keepalive_intvl]=75
	[net.ipv4.tcp_keepalive_probes]=9
	[net.ipv4.tcp_max_tw_buckets]=131072
	[net.ipv4.tcp_slow_start_after_idle]=1
	[net.ipv4.tcp_syncookies]=1
)
# make_tree PROCDIR PROFILE [SKIPKEY]: fake /proc/sys holding every key of
# PROFILE (except SKIPKEY, to simulate a key this kernel lacks).
make_tree() {
	local proc=$1 prof=$2 skip=${3:-} k v
	while IFS=$'\t' read -r k _; do
		[[ $k == "$skip" ]] && continue
		v=${OLD[$k]:-0}
		mkdir -p "$proc/$(dirname "${k//.//}")"
		printf '%s\n' "$v" >"$proc/${k//.//}"
	done < <(profile_pairs "$prof")
}
# tree_matches PROCDIR PROFILE WHICH: every key file equals OLD (WHICH=old) or
# the profile's value (WHICH=new), whitespace-normalised.
tree_matches() {
	local proc=$1 prof=$2 which=$3 k v want ok=0
	while IFS=$'\t' read -r k v; do
		[[ -e $proc/${k//.//} ]] || continue
		if [[ $which == old ]]; then want=$(norm "${OLD[$k]:-0}"); else want=$v; fi
		if [[ $(norm "$(cat "$proc/${k//.//}")") != "$want" ]]; then
			echo "    $k: want '$want', have '$(norm "$(cat "$proc/${k//.//}")")'"
			ok=1
		fi
	done < <(profile_pairs "$prof")
	return "$ok"
}

API=$HERE/api-host.conf
LOADGEN=$HERE/loadgen-host.conf
FAKE=$TMP/fake
export POPUP_SYSCTL_PROC=$FAKE/proc/sys
export POPUP_SYSCTL_DIR=$FAKE/sysctl.d
export POPUP_SYSCTL_BACKUP_DIR=$FAKE/backup
SKIPKEY=net.core.netdev_max_backlog
make_tree "$POPUP_SYSCTL_PROC" "$API" "$SKIPKEY"

"$TOOL" apply api-host >"$TMP/out" 2>&1
rc=$?
check_that "apply api-host on the fake tree exits 0 (a missing key is not fatal)" test "$rc" = 0
check_that "apply reports the missing key as skipped" grep -q "^skip: $SKIPKEY" "$TMP/out"
check_that "apply wrote through the proc override (not sysctl -p)" grep -q '^loading: writing keys under' "$TMP/out"

shopt -s nullglob
backups=("$POPUP_SYSCTL_BACKUP_DIR"/backup-*-api-host.conf)
shopt -u nullglob
check_that "exactly one backup file in the backup dir" test "${#backups[@]}" = 1
b=${backups[0]:-/nonexistent}
bad=0
while IFS=$'\t' read -r k _; do
	[[ $k == "$SKIPKEY" ]] && continue
	grep -Fxq "$k = $(norm "${OLD[$k]:-0}")" "$b" || {
		echo "    backup lacks '$k = $(norm "${OLD[$k]:-0}")'"
		bad=1
	}
done < <(profile_pairs "$API")
check_that "backup holds every old value (normalised)" test "$bad" = 0
check_that "backup records the missing key as missing" grep -q "^# missing-on-this-kernel: $SKIPKEY" "$b"

inst=$POPUP_SYSCTL_DIR/90-popup-api-host.conf
check_that "profile installed as 90-popup-api-host.conf" test -f "$inst"
check_that "installed file is the profile (after one header line)" cmp -s <(tail -n +2 "$inst") "$API"
check_that "fake tree now holds the profile's values" tree_matches "$POPUP_SYSCTL_PROC" "$API" new
check_quiet "check on the fake tree exits 0 after apply" "$TOOL" check api-host

# Whitespace: a TAB-separated range (as /proc prints it) still matches.
printf '10240\t60999\n' >"$POPUP_SYSCTL_PROC/net/ipv4/ip_local_port_range"
"$TOOL" check api-host >"$TMP/out" 2>&1
rc=$?
if ((rc == 0)) && grep -Eq '^net\.ipv4\.ip_local_port_range .* OK$' "$TMP/out"; then
	pass "check treats '10240<TAB>60999' as equal to '10240 60999'"
else
	fail "check whitespace equivalence (rc=$rc)"
fi
# A changed value is a DIFF with exit 1.
printf '128\n' >"$POPUP_SYSCTL_PROC/net/core/somaxconn"
"$TOOL" check api-host >"$TMP/out" 2>&1
rc=$?
if ((rc == 1)) && grep -Eq '^net\.core\.somaxconn +8192 +128 +DIFF$' "$TMP/out"; then
	pass "check reports DIFF (want 8192, have 128) and exits 1"
else
	fail "check DIFF detection (rc=$rc)"
	sed 's/^/    /' "$TMP/out"
fi
printf '8192\n' >"$POPUP_SYSCTL_PROC/net/core/somaxconn"

# A second apply stacks a second backup; rollbacks unwind one at a time.
sleep 0.01
"$TOOL" apply api-host >/dev/null 2>&1
check_that "second apply exits 0" test "$?" = 0
"$TOOL" rollback >"$TMP/out" 2>&1
check_that "first rollback exits 0" test "$?" = 0
check_that "after first rollback the earlier install is reinstated" cmp -s <(tail -n +2 "$inst") "$API"
check_that "after first rollback the profile's values are still in place" tree_matches "$POPUP_SYSCTL_PROC" "$API" new
"$TOOL" rollback >"$TMP/out" 2>&1
check_that "second rollback exits 0" test "$?" = 0
check_that "rollback restored every old value" tree_matches "$POPUP_SYSCTL_PROC" "$API" old
check_that "rollback removed the installed file" test ! -e "$inst"
check_that "backup stored the TAB-separated range as '32768 60999'" grep -q "^net.ipv4.ip_local_port_range = 32768 60999$" "${b}.rolled-back"
"$TOOL" rollback >"$TMP/out" 2>&1
rc=$?
check_that "rollback with nothing left fails (exit 1) and says so" test "$rc" = 1 -a -n "$(grep 'no backup' "$TMP/out")"

# Rollback refuses to write a backup's values into a different tree.
"$TOOL" apply api-host >/dev/null 2>&1
OTHER=$TMP/other/proc/sys
make_tree "$OTHER" "$API"
POPUP_SYSCTL_PROC=$OTHER "$TOOL" rollback >"$TMP/out" 2>&1
rc=$?
check_that "rollback refuses a backup taken from another proc tree (exit 2)" test "$rc" = 2
check_that "...and left that tree untouched" tree_matches "$OTHER" "$API" old
"$TOOL" rollback >/dev/null 2>&1
check_that "rollback in the right tree still works" tree_matches "$POPUP_SYSCTL_PROC" "$API" old
unset POPUP_SYSCTL_PROC POPUP_SYSCTL_DIR POPUP_SYSCTL_BACKUP_DIR

# --root DIR: the same flow with one option, on the load-generator profile.
R=$TMP/root
make_tree "$R/proc/sys" "$LOADGEN"
"$TOOL" --root "$R" apply loadgen-host >"$TMP/out" 2>&1
check_that "--root apply loadgen-host exits 0" test "$?" = 0
check_that "--root installs under ROOT/etc/sysctl.d" test -f "$R/etc/sysctl.d/90-popup-loadgen-host.conf"
has_backup() { compgen -G "$1/backup-*-$2.conf" >/dev/null; }
check_that "--root backs up under ROOT/var/lib/popup-sysctl" has_backup "$R/var/lib/popup-sysctl" loadgen-host
check_that "--root values applied" tree_matches "$R/proc/sys" "$LOADGEN" new
"$TOOL" rollback --root "$R" loadgen-host >"$TMP/out" 2>&1
check_that "--root rollback loadgen-host exits 0" test "$?" = 0
check_that "--root rollback restored old values" tree_matches "$R/proc/sys" "$LOADGEN" old
check_that "--root rollback removed the installed file" test ! -e "$R/etc/sysctl.d/90-popup-loadgen-host.conf"

# ------------------------------------------------------ host untouched
echo "# host values"
changed=()
for k in "${!ALL_KEYS[@]}"; do
	now=$(host_value "$k")
	[[ $now == "${HOST_BEFORE[$k]}" ]] || changed+=("$k: '${HOST_BEFORE[$k]}' -> '$now'")
done
if ((${#changed[@]} == 0)); then
	pass "host values of all ${#ALL_KEYS[@]} profile keys unchanged by the whole run"
else
	fail "host values changed: ${changed[*]}"
fi

if ((${#NOT_SETTABLE[@]})); then
	echo "# keys that could not be set in a netns on this kernel: ${NOT_SETTABLE[*]}"
else
	echo "# every network-namespaced key could be set inside a netns on this kernel"
fi

echo "$PASSED passed, $FAILED failed"
((FAILED == 0))
