#!/usr/bin/env bash
# make cluster / make cluster-stop: rbd on PostgreSQL's own high
# availability, on this machine. pg_auto_failover (Debian's
# postgresql-15-auto-failover and pg-auto-failover-cli) runs a monitor and
# two PostgreSQL nodes, a primary and a synchronous standby; two
# `rbd serve` workers connect to both through one multi-host URL and follow
# the primary across failovers. docs/scaling.md says why pg_auto_failover
# and how the same runs on three machines.
#
#   cluster/cluster.sh up            install what is missing, start it all, print the URLs
#   cluster/cluster.sh down          stop it all and remove its directory
#   cluster/cluster.sh status        pg_auto_failover's view of the nodes
#   cluster/cluster.sh switchover    a planned switchover (the primary hands over)
#   cluster/cluster.sh kill-primary  kill -9 the primary's PostgreSQL and its keeper, wait for the
#                                    standby to be promoted, then bring the old one back as a standby
#   cluster/cluster.sh primary       the node that is primary now (node1 or node2)
#
# It runs as root (PostgreSQL and pg_autoctl then run as the postgres user)
# or as any user with PostgreSQL's binaries installed.
set -euo pipefail

DIR=${CLUSTER_DIR:-/tmp/rbd-cluster}
BIN=${BIN:-bin}
MONITOR_PORT=${CLUSTER_MONITOR_PORT:-6500}
NODE_PORTS=(${CLUSTER_NODE_PORTS:-6501 6502})
# CLUSTER_WORKERS= (empty) starts no rbd: make soak-failover starts its own.
WORKER_ADDRS=(${CLUSTER_WORKERS-127.0.0.1:8081 127.0.0.1:8082})
VERBS=${CLUSTER_VERBS:-examples/runbooks/kyc-onboarding/verbs}
# The example's policy (docs/reference/policy.md): without one only
# read_only steps run unattended. CLUSTER_POLICY= (empty) runs without.
POLICY=${CLUSTER_POLICY-examples/runbooks/kyc-onboarding/policy.yaml}

pg_bin() {
	local d
	for d in /usr/lib/postgresql/*/bin; do
		[ -x "$d/pg_ctl" ] && { echo "$d"; return; }
	done
	command -v pg_ctl >/dev/null && dirname "$(command -v pg_ctl)"
}

# as runs a command as the user PostgreSQL runs as: postgres when root.
# pg_autoctl keeps its state and configuration under XDG_DATA_HOME and
# XDG_CONFIG_HOME: here, inside the cluster's directory, so that a cluster
# stopped and started again begins afresh.
as() {
	local env=(PATH="$PGBIN:$PATH" XDG_CONFIG_HOME="$DIR/xdg/config" XDG_DATA_HOME="$DIR/xdg/data" XDG_RUNTIME_DIR="$DIR/xdg/run")
	if [ "$(id -u)" = 0 ]; then
		runuser -u postgres -- env "${env[@]}" "$@"
	else
		env "${env[@]}" "$@"
	fi
}

ensure_packages() {
	if command -v pg_autoctl >/dev/null && [ -n "$(pg_bin)" ]; then
		return
	fi
	if ! command -v apt-get >/dev/null || [ "$(id -u)" != 0 ]; then
		echo "cluster: needs pg_auto_failover; install Debian's postgresql-15-auto-failover and pg-auto-failover-cli (as root: make cluster installs them)" >&2
		exit 1
	fi
	echo "cluster: installing pg_auto_failover from Debian's packages" >&2
	# The packages would start clusters of their own; this starts its own.
	local policy=/usr/sbin/policy-rc.d added=0
	if [ ! -e "$policy" ]; then
		printf '#!/bin/sh\nexit 101\n' >"$policy"
		chmod +x "$policy"
		added=1
	fi
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends postgresql postgresql-15-auto-failover pg-auto-failover-cli >/dev/null
	[ "$added" = 1 ] && rm -f "$policy"
}

monitor_uri() { echo "postgres://autoctl_node@127.0.0.1:$MONITOR_PORT/pg_auto_failover?sslmode=disable"; }

# logfile NAME: the path of a log the postgres user may append to.
logfile() {
	local f="$DIR/$1.log"
	touch "$f"
	[ "$(id -u)" = 0 ] && chown postgres: "$f"
	echo "$f"
}

# state prints "node1 primary" lines: each node's current state, when the
# node reports the state the monitor assigned it, and "node1 a->b" while
# it moves from one to the other.
state() {
	as psql -X -At -h 127.0.0.1 -p "$MONITOR_PORT" -U autoctl_node pg_auto_failover -c \
		"SELECT nodename, CASE WHEN reportedstate = goalstate THEN reportedstate::text
		                       ELSE reportedstate || '->' || goalstate END
		   FROM pgautofailover.node ORDER BY nodeid" 2>/dev/null | tr '|' ' '
}

# primary is the node the monitor has made primary (it may still be on
# its way there).
primary() { state | awk '$2 ~ /(^|>)(wait_)?primary$/ {print $1}' | head -n 1; }

# wait_for STATE_REGEX: until the nodes' states, joined, match.
wait_for() {
	local want=$1 got=
	for _ in $(seq 1200); do
		got=$(state | sort | tr '\n' ' ')
		[[ $got =~ $want ]] && return 0
		sleep 0.1
	done
	echo "cluster: the nodes never reached \"$want\" (now: $got); logs in $DIR" >&2
	return 1
}

start_keeper() { # NAME
	local name=$1 log
	log=$(logfile "$name")
	touch "$DIR/$name.keeper.pid"
	[ "$(id -u)" = 0 ] && chown postgres: "$DIR/$name.keeper.pid"
	# A session of its own: killing its process group is the node's loss.
	as bash -c "setsid nohup pg_autoctl run --pgdata '$DIR/$name' >>'$log' 2>&1 </dev/null & echo \$! >'$DIR/$name.keeper.pid'"
}

# ready ADDR: whether the rbd at ADDR answers /readyz with 200 (bash's
# /dev/tcp, so that curl need not be installed).
ready() (
	host=${1%:*} port=${1##*:}
	{ exec 3<>"/dev/tcp/$host/$port"; } 2>/dev/null || exit 1
	printf 'GET /readyz HTTP/1.0\r\nHost: %s\r\n\r\n' "$1" >&3
	IFS= read -r line <&3 || true
	[[ $line == *" 200 "* ]]
)

database_url() {
	echo "postgres://postgres@127.0.0.1:${NODE_PORTS[0]},127.0.0.1:${NODE_PORTS[1]}/postgres?target_session_attrs=read-write&sslmode=disable&connect_timeout=5"
}

up() {
	ensure_packages
	PGBIN=$(pg_bin)
	if [ -e "$DIR/monitor" ]; then
		echo "cluster: $DIR exists; make cluster-stop first" >&2
		exit 1
	fi
	mkdir -p "$DIR"
	[ "$(id -u)" = 0 ] && chown postgres: "$DIR"
	chmod 0755 "$DIR"
	echo "cluster: the monitor on port $MONITOR_PORT" >&2
	as pg_autoctl create monitor --pgdata "$DIR/monitor" --pgport "$MONITOR_PORT" --hostname 127.0.0.1 \
		--auth trust --no-ssl --pgctl "$PGBIN/pg_ctl" >>"$(logfile monitor)" 2>&1
	start_keeper monitor
	for _ in $(seq 300); do as pg_isready -q -h 127.0.0.1 -p "$MONITOR_PORT" && break; sleep 0.1; done
	local mon
	mon=$(monitor_uri)
	# Quicker to notice a dead primary than the defaults (20 s unhealthy).
	as psql -X -q -h 127.0.0.1 -p "$MONITOR_PORT" -U postgres pg_auto_failover \
		-c "ALTER SYSTEM SET pgautofailover.health_check_period = 1000" \
		-c "ALTER SYSTEM SET pgautofailover.health_check_timeout = 1000" \
		-c "ALTER SYSTEM SET pgautofailover.health_check_max_retries = 1" \
		-c "ALTER SYSTEM SET pgautofailover.health_check_retry_delay = 500" \
		-c "ALTER SYSTEM SET pgautofailover.node_considered_unhealthy_timeout = 5000" \
		-c "ALTER SYSTEM SET pgautofailover.primary_demote_timeout = 5000" \
		-c "SELECT pg_reload_conf()" >/dev/null
	local i
	for i in 0 1; do
		local name=node$((i + 1))
		echo "cluster: PostgreSQL $name on port ${NODE_PORTS[$i]}" >&2
		as pg_autoctl create postgres --pgdata "$DIR/$name" --pgport "${NODE_PORTS[$i]}" --hostname 127.0.0.1 \
			--name "$name" --monitor "$mon" --auth trust --no-ssl --pgctl "$PGBIN/pg_ctl" >>"$(logfile "$name")" 2>&1
		start_keeper "$name"
		if [ "$i" = 0 ]; then wait_for "node1 (single|primary)"; fi
	done
	wait_for "node1 primary node2 secondary"
	# rbd's workers connect as postgres over TCP; pg_autoctl's rules name
	# only its own connections.
	for name in node1 node2; do
		as bash -c "echo 'host all postgres 127.0.0.1/32 trust' >>'$DIR/$name/pg_hba.conf'"
		as pg_ctl reload -D "$DIR/$name" >/dev/null
	done
	local url
	url=$(database_url)
	local w=0 addr
	for addr in ${WORKER_ADDRS[@]+"${WORKER_ADDRS[@]}"}; do
		w=$((w + 1))
		echo "cluster: rbd worker $w on $addr" >&2
		"$BIN/rbd" serve --database-url "$url" --listen "$addr" --verbs "$VERBS" ${POLICY:+--policy "$POLICY"} --log-format json \
			--worker-id "cluster-worker-$w" >>"$DIR/rbd-$w.log" 2>&1 &
		echo $! >"$DIR/rbd-$w.pid"
	done
	for addr in ${WORKER_ADDRS[@]+"${WORKER_ADDRS[@]}"}; do
		for _ in $(seq 300); do ready "$addr" && break; sleep 0.1; done
		ready "$addr" || { echo "cluster: rbd on $addr is not ready; see $DIR/rbd-*.log" >&2; exit 1; }
	done
	echo
	echo "pg_auto_failover monitor: $mon"
	echo "PostgreSQL primary and synchronous standby: 127.0.0.1:${NODE_PORTS[0]}, 127.0.0.1:${NODE_PORTS[1]} (state: $(state | tr '\n' ',' | sed 's/,$//'))"
	echo "rbd's --database-url: $url"
	for addr in ${WORKER_ADDRS[@]+"${WORKER_ADDRS[@]}"}; do echo "rbd worker: http://$addr (console http://$addr/ui/)"; done
	if [ "${#WORKER_ADDRS[@]}" -gt 0 ]; then
		echo "make demo's runbook on it: make demo DEMO_SERVER=http://${WORKER_ADDRS[0]}"
	fi
	echo "logs: $DIR/*.log; stop it all with make cluster-stop"
}

stop_pidfile() { # FILE SIGNAL
	local f=$1 sig=${2:-TERM} pid
	[ -f "$f" ] || return 0
	pid=$(cat "$f")
	if kill -0 "$pid" 2>/dev/null; then
		kill "-$sig" "$pid" 2>/dev/null || true
		for _ in $(seq 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null || true
	fi
	rm -f "$f"
}

down() {
	[ -d "$DIR" ] || { echo "cluster: nothing at $DIR"; return 0; }
	PGBIN=$(pg_bin)
	local f
	for f in "$DIR"/rbd-*.pid; do [ -e "$f" ] && stop_pidfile "$f" TERM; done
	for name in node2 node1 monitor; do
		# The keeper leads a process group of its own (setsid): its
		# children go with it, even those a kill -9 left behind.
		if [ -f "$DIR/$name.keeper.pid" ]; then
			kill -TERM -- "-$(cat "$DIR/$name.keeper.pid")" 2>/dev/null || true
		fi
		stop_pidfile "$DIR/$name.keeper.pid" TERM
		# The keeper stops its PostgreSQL; one left behind (a keeper
		# killed) is stopped here.
		if [ -f "$DIR/$name/postmaster.pid" ]; then
			as pg_ctl stop -D "$DIR/$name" -m fast >/dev/null 2>&1 || true
		fi
	done
	rm -rf "$DIR"
	echo "cluster: stopped, and $DIR removed"
}

switchover() {
	PGBIN=$(pg_bin)
	local before
	before=$(primary)
	as pg_autoctl perform switchover --pgdata "$DIR/monitor" --formation default >>"$(logfile switchover)" 2>&1
	wait_for "node1 (primary|secondary) node2 (primary|secondary)"
	echo "switchover: $before -> $(primary)"
}

kill_primary() {
	PGBIN=$(pg_bin)
	local old
	old=$(primary)
	[ -n "$old" ] || { echo "cluster: no primary to kill" >&2; return 1; }
	# The machine's loss: its keeper first (or it would restart
	# PostgreSQL at once), then every PostgreSQL process of the node.
	local keeper pgpid
	keeper=$(cat "$DIR/$old.keeper.pid")
	pgpid=$(head -n 1 "$DIR/$old/postmaster.pid")
	kill -KILL -- "-$keeper" 2>/dev/null || true
	kill -KILL "$pgpid" 2>/dev/null || true
	pkill -KILL -P "$pgpid" 2>/dev/null || true
	local t0=$SECONDS
	while [ $((SECONDS - t0)) -lt 120 ]; do
		local p
		p=$(state | awk '$2 == "primary" || $2 == "wait_primary" {print $1}' | head -n 1)
		[ -n "$p" ] && [ "$p" != "$old" ] && break
		sleep 0.2
	done
	echo "kill-primary: $old killed; $(primary) promoted after $((SECONDS - t0)) s"
	rm -f "$DIR/$old/postmaster.pid"
	start_keeper "$old"
	wait_for "node1 (primary|secondary) node2 (primary|secondary)"
	echo "kill-primary: $old is back as a standby"
}

case "${1:-}" in
up) up ;;
down) down ;;
status) PGBIN=$(pg_bin); as pg_autoctl show state --pgdata "$DIR/monitor" ;;
switchover) switchover ;;
kill-primary) kill_primary ;;
primary) PGBIN=$(pg_bin); primary ;;
url) database_url ;;
*) echo "usage: cluster/cluster.sh up|down|status|switchover|kill-primary|primary|url" >&2; exit 2 ;;
esac
