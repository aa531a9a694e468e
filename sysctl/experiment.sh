#!/usr/bin/env bash
# experiment.sh: the TIME_WAIT experiment. Short-connection HTTP load (one request per
# connection) with the kernel defaults and then with our profiles, and the same load over
# keep-alive, all between two network namespaces this script creates. Prints req/s, errors and
# TIME_WAIT counts side by side (docs/PERFORMANCE.md, "TIME_WAIT").
#
#   sudo bash sysctl/experiment.sh            # 6 runs of 15 s, about 2 minutes
#
# Environment: POPUP_EXP_DURATION (seconds per run, default 15, at most 120),
# POPUP_EXP_CONNS (wrk connections, default 64), POPUP_EXP_ROUNDS (repeat the six runs, default
# 1), POPUP_EXP_KEEP (a directory to keep the raw wrk/ss/nstat output in). Each wrk run is
# bounded by `timeout`, so the whole script takes about ROUNDS x 6 x (DURATION + 3) seconds.
#
# Every run gets two fresh namespaces, popup-exp-<pid>-<run>-srv and -cli, joined by a veth
# pair with 10.213.0.1/24 (server) and 10.213.0.2/24 (client). The addresses exist only inside
# those namespaces: no traffic leaves them, and the host's own sysctls are never written (the
# profiles are applied inside the namespaces with `popup-sysctl apply --netns-only`, its
# sysctl.d and backup directories redirected to a temp dir). A fresh namespace also starts with
# kernel-default values and no TIME_WAIT sockets, so runs cannot pollute each other.
#
# Server: sysctl/expserver (a bare net/http server with a 320-byte body; see its doc comment).
# Client: wrk (installed from Debian if missing). With 2+ CPUs the server is pinned to CPU 0
# (GOMAXPROCS=1) and wrk to CPU 1, so neither starves the other.
#
# Runs, each once with the kernel defaults and once with the profiles (api-host.conf in the
# server namespace, loadgen-host.conf in the client namespace):
#   server-closes  wrk -H 'Connection: close' on /: the server closes first (net/http, and so
#                  popup-api, does this), TIME_WAIT piles up on the server side
#   client-closes  wrk on /client-closes: the answer says "Connection: close" and the server
#                  waits for the client to close first, TIME_WAIT piles up on the client side
#                  (the load generator's case, and popup-api's towards Redis/MySQL)
#   keep-alive     wrk on /: 64 connections, kept open
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

duration=${POPUP_EXP_DURATION:-15}
conns=${POPUP_EXP_CONNS:-64}
rounds=${POPUP_EXP_ROUNDS:-1}
in_range() { [[ $1 =~ ^[0-9]+$ ]] && (($1 >= $2 && $1 <= $3)); }
if ! in_range "$duration" 1 120 || ! in_range "$conns" 1 10000 || ! in_range "$rounds" 1 5; then
	echo "experiment.sh: POPUP_EXP_DURATION must be 1..120, POPUP_EXP_CONNS 1..10000, POPUP_EXP_ROUNDS 1..5" >&2
	exit 2
fi
((EUID == 0)) || {
	echo "experiment.sh: needs root (ip netns)" >&2
	exit 2
}
command -v ip >/dev/null || {
	echo "experiment.sh: needs iproute2 (ip, ss, nstat)" >&2
	exit 2
}
if ! command -v wrk >/dev/null; then
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null
fi

readonly prefix="popup-exp-$$"
readonly srv_ip=10.213.0.1 cli_ip=10.213.0.2 port=8080
work=$(mktemp -d /tmp/popup-exp.XXXXXX)
server_pid=
sampler_pid=
namespaces=()

cleanup() {
	local ns
	if [[ -n $sampler_pid ]]; then
		kill "$sampler_pid" 2>/dev/null || true
	fi
	if [[ -n $server_pid ]]; then
		kill "$server_pid" 2>/dev/null || true
		wait "$server_pid" 2>/dev/null || true
	fi
	for ns in "${namespaces[@]}"; do
		ip netns del "$ns" 2>/dev/null || true
	done
	if [[ -n ${POPUP_EXP_KEEP:-} ]]; then
		mkdir -p "$POPUP_EXP_KEEP" && cp -r "$work"/. "$POPUP_EXP_KEEP"/
	fi
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "building sysctl/expserver"
go build -o "$work/expserver" ./sysctl/expserver
go build -o "$work/popup-sysctl" ./cmd/popup-sysctl

pin_srv=() pin_cli=()
if (($(nproc) >= 2)) && command -v taskset >/dev/null; then
	pin_srv=(taskset -c 0 env GOMAXPROCS=1)
	pin_cli=(taskset -c 1)
fi

in_ns() {
	local ns=$1
	shift
	ip netns exec "$ns" "$@"
}

# setup_pair SRV CLI: two fresh namespaces joined by a veth pair.
setup_pair() {
	local s=$1 c=$2
	ip netns add "$s"
	namespaces+=("$s")
	ip netns add "$c"
	namespaces+=("$c")
	ip -n "$s" link add veth-srv type veth peer name veth-cli netns "$c"
	ip -n "$s" addr add "$srv_ip/24" dev veth-srv
	ip -n "$c" addr add "$cli_ip/24" dev veth-cli
	ip -n "$s" link set lo up
	ip -n "$c" link set lo up
	ip -n "$s" link set veth-srv up
	ip -n "$c" link set veth-cli up
}

teardown_pair() {
	local ns keep=()
	if [[ -n $server_pid ]]; then
		kill "$server_pid" 2>/dev/null || true
		wait "$server_pid" 2>/dev/null || true
		server_pid=
	fi
	ip netns del "$1" 2>/dev/null || true
	ip netns del "$2" 2>/dev/null || true
	for ns in "${namespaces[@]}"; do
		[[ $ns == "$1" || $ns == "$2" ]] || keep+=("$ns")
	done
	namespaces=("${keep[@]}")
}

# apply_profile NS PROFILE: the production path for a pod (netns keys only), with the
# installed file and the backup kept in our temp dir instead of /etc and /var/lib.
apply_profile() {
	local ns=$1 profile=$2 dir="$work/sysctl-$1"
	mkdir -p "$dir"
	in_ns "$ns" env POPUP_SYSCTL_DIR="$dir/sysctl.d" POPUP_SYSCTL_BACKUP_DIR="$dir/backup" \
		"$work/popup-sysctl" apply --netns-only "$profile" >"$dir/apply.log"
	in_ns "$ns" "$work/popup-sysctl" check --netns-only "$profile" >"$dir/check.log" || {
		cat "$dir/check.log" >&2
		echo "experiment.sh: $profile did not take in $ns" >&2
		return 1
	}
}

# start_server SRV CLI: expserver in SRV, and wait until CLI can connect to it. `ip netns exec`,
# taskset and env all exec, so $! is the server's own pid.
start_server() {
	local tries
	ip netns exec "$1" "${pin_srv[@]}" "$work/expserver" -addr "$srv_ip:$port" 2>>"$work/expserver.log" &
	server_pid=$!
	for ((tries = 0; tries < 50; tries++)); do
		if in_ns "$2" bash -c "exec 3<>/dev/tcp/$srv_ip/$port" 2>/dev/null; then
			return 0
		fi
		sleep 0.1
	done
	echo "experiment.sh: expserver did not come up" >&2
	return 1
}

tw_count() { in_ns "$1" ss -Htan state time-wait | wc -l; }

# sample SRV CLI: once a second, the client's new connections in that second (TcpActiveOpens)
# and the TIME_WAIT counts on both sides, until killed.
sample() {
	local prev now t=0
	prev=$(counter "$2" TcpActiveOpens)
	while sleep 1; do
		t=$((t + 1))
		now=$(counter "$2" TcpActiveOpens)
		printf 't=%ds new_conns=%d time_wait_srv=%d time_wait_cli=%d\n' "$t" $((now - prev)) "$(tw_count "$1")" "$(tw_count "$2")"
		prev=$now
	done
}

# per5s FILE: the new connections per second from sample's output, averaged over 5-second
# windows, e.g. "7010 6985 312 290 281 275".
per5s() {
	awk -F'new_conns=' 'NF > 1 { split($2, a, " "); sum += a[1]; n++; if (n == 5) { printf "%s%d", sep, sum / 5; sep = " "; sum = 0; n = 0 } }' "$1"
}
counter() { in_ns "$1" nstat -asz "$2" | awk -v k="$2" '$1 == k { print $2 }'; }
sysval() { in_ns "$1" cat "/proc/sys/${2//.//}" | tr -s '\t ' ' '; }

# wrk_field FILE WHAT: requests/sec, total requests, socket errors (sum) or non-2xx/3xx.
wrk_field() {
	case $2 in
	rps) awk '/^Requests\/sec:/ { printf "%d", $2 }' "$1" ;;
	requests) awk '/ requests in / { print $1 }' "$1" ;;
	sockerr) awk '/Socket errors:/ { gsub(",", ""); print $4 + $6 + $8 + $10; f = 1 } END { if (!f) print 0 }' "$1" ;;
	sockdetail) awk '/Socket errors:/ { sub(/^ *Socket errors: */, ""); print; f = 1 } END { if (!f) print "-" }' "$1" ;;
	non2xx) awk '/Non-2xx or 3xx responses:/ { print $NF; f = 1 } END { if (!f) print 0 }' "$1" ;;
	esac
}

results=()
conn_rates=()
run=0

# one_run NAME SETTINGS(default|profiles) PATH WRK-ARGS...
one_run() {
	local name=$1 settings=$2 path=$3
	shift 3
	run=$((run + 1))
	local s="$prefix-$run-srv" c="$prefix-$run-cli" out="$work/run-$run-$name-$settings-r$round.txt"
	setup_pair "$s" "$c"
	if [[ $settings == profiles ]]; then
		apply_profile "$s" api-host
		apply_profile "$c" loadgen-host
	fi
	{
		echo "# $name / $settings (loadavg before: $(cut -d' ' -f1-3 /proc/loadavg))"
		echo "server: tcp_max_tw_buckets=$(sysval "$s" net.ipv4.tcp_max_tw_buckets) somaxconn=$(sysval "$s" net.core.somaxconn)"
		echo "client: ip_local_port_range=$(sysval "$c" net.ipv4.ip_local_port_range) tcp_tw_reuse=$(sysval "$c" net.ipv4.tcp_tw_reuse) tcp_max_tw_buckets=$(sysval "$c" net.ipv4.tcp_max_tw_buckets)"
	} >"$out"
	start_server "$s" "$c"
	echo "run $run: $name, $settings: wrk $* http://$srv_ip:$port$path (${duration}s)"
	sample "$s" "$c" >"$out.samples" 2>/dev/null &
	sampler_pid=$!
	in_ns "$c" timeout $((duration + 30)) "${pin_cli[@]}" \
		wrk -t1 -c"$conns" -d"${duration}s" --timeout 2s "$@" "http://$srv_ip:$port$path" >>"$out" 2>&1 || true
	kill "$sampler_pid" 2>/dev/null || true
	wait "$sampler_pid" 2>/dev/null || true
	sampler_pid=
	local tw_s tw_c ovf_s ovf_c lovf
	tw_s=$(tw_count "$s")
	tw_c=$(tw_count "$c")
	ovf_s=$(counter "$s" TcpExtTCPTimeWaitOverflow)
	ovf_c=$(counter "$c" TcpExtTCPTimeWaitOverflow)
	lovf=$(counter "$s" TcpExtListenOverflows)
	echo "after: time_wait server=$tw_s client=$tw_c tw_overflow server=$ovf_s client=$ovf_c listen_overflows=$lovf" >>"$out"
	results+=("$(printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |' \
		"$name" "$settings" "$round" "$(wrk_field "$out" rps)" "$(wrk_field "$out" requests)" \
		"$(wrk_field "$out" sockdetail)" "$(wrk_field "$out" non2xx)" \
		"$tw_s" "$tw_c" "${ovf_s:-?} / ${ovf_c:-?}")")
	echo "new connections/s, 5 s averages: $(per5s "$out.samples")" >>"$out"
	sed -n '1,3p' "$out" | sed 's/^/    /'
	tail -n 2 "$out" | sed 's/^/    /'
	conn_rates+=("$(printf '%-14s %-9s round %d: %s' "$name" "$settings" "$round" "$(per5s "$out.samples")")")
	teardown_pair "$s" "$c"
}

# Defaults and profiles alternate, so that noise from anything else on the machine hits both.
for ((round = 1; round <= rounds; round++)); do
	for settings in default profiles; do
		one_run server-closes "$settings" / -H "Connection: close"
	done
	for settings in default profiles; do
		one_run client-closes "$settings" /client-closes
	done
	for settings in default profiles; do
		one_run keep-alive "$settings" /
	done
done

echo
echo "kernel $(uname -r), $(nproc) CPUs, wrk -t1 -c$conns -d${duration}s, 320-byte body, $rounds round(s)"
echo "TIME_WAIT counted with 'ss -Htan state time-wait | wc -l' in each namespace right after wrk ends"
echo
echo "| load | settings | round | req/s | requests | socket errors (wrk) | non-2xx | TIME_WAIT server ns | TIME_WAIT client ns | TW overflows srv / cli |"
echo "|---|---|---:|---:|---:|---|---:|---:|---:|---|"
printf '%s\n' "${results[@]}"
echo
echo "New connections per second opened by the client (TcpActiveOpens), averaged over 5 s windows:"
printf '    %s\n' "${conn_rates[@]}"
