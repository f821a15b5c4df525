#!/usr/bin/env bash
# The demo that `make demo` runs: the KYC onboarding example, end to end,
# on a daemon with its own PostgreSQL. It needs only the built binaries and
# PostgreSQL's server binaries installed (not running).
#
#   1. make an API token and a webhook secret with rbd init, and start
#      rbd on the embedded PostgreSQL with them and the example's policy;
#   2. compile the runbook with rbc, submit it, watch it park awaiting the
#      client's documents;
#   3. deliver the documents as a signed notification, with rbd notify;
#   4. show the approval gate, approve it, watch the runbook complete;
#   5. show its event ledger;
#   6. stop rbd (SIGTERM) and, with it, its PostgreSQL.
set -euo pipefail

BIN=${BIN:-bin}
EX=examples/runbooks/kyc-onboarding
WORK=$BIN/demo

if [ -t 1 ]; then bold=$'\033[1m' plain=$'\033[0m'; else bold='' plain=''; fi
step() { printf '\n%s== %s%s\n' "$bold" "$*" "$plain"; }
# run shows a command, quoted so that it can be pasted, then runs it.
run() {
	local line='$' arg
	for arg in "$@"; do
		if [[ $arg =~ ^[A-Za-z0-9_./:=@,+-]+$ ]]; then
			line+=" $arg"
		else
			line+=" '${arg//\'/\'\\\'\'}'"
		fi
	done
	printf '%s\n' "$line"
	"$@"
}

if [ -n "${DEMO_SERVER:-}" ]; then
	# make cluster's workers (or any rbd with the example's verbs, no
	# token and no webhook secret): the demo runs its runbook there.
	mkdir -p "$WORK"
	step "1. Use the rbd at $DEMO_SERVER (make cluster's, on pg_auto_failover)"
	export RBD_SERVER=$DEMO_SERVER
	export RBD_USER=compliance-officer
	ADDR=${DEMO_SERVER#http://}
else
	# A fresh data directory each time, so the demo always starts the same way.
	# rbd init makes it, with an API token and a webhook secret; as root, the
	# embedded PostgreSQL runs as postgres, and rbd makes the directories it
	# must pass through passable.
	rm -rf "$WORK"
	DATA=$WORK/.rbd

	step "1. Make a token and a webhook secret, then start rbd; with no --database-url it starts its own PostgreSQL under $DATA"
	run "$BIN/rbd" init --data-dir "$DATA" | grep "^wrote"
	# The example's policy: the routine request for documents and the
	# screening run by themselves; without it only read_only steps would.
	printf '$ %s\n' "rbd serve --data-dir $DATA --verbs $EX/verbs --policy $EX/policy.yaml --listen 127.0.0.1:0 --api-token-file $DATA/api-tokens --webhook-secret-file $DATA/webhook-secret"
	: > "$WORK/rbd.log"
	"$BIN/rbd" serve --data-dir "$DATA" --verbs "$EX/verbs" --policy "$EX/policy.yaml" --listen 127.0.0.1:0 \
		--api-token-file "$DATA/api-tokens" --webhook-secret-file "$DATA/webhook-secret" \
		--log-format json 2> "$WORK/rbd.log" &
	RBD_PID=$!
	stop_rbd() {
		if kill -0 "$RBD_PID" 2> /dev/null; then
			kill -TERM "$RBD_PID"
			wait "$RBD_PID" || true
		fi
	}
	trap stop_rbd EXIT

	ADDR=
	for _ in $(seq 600); do
		ADDR=$(sed -n 's/.*"msg":"listening","addr":"\([^"]*\)".*/\1/p' "$WORK/rbd.log")
		[ -n "$ADDR" ] && break
		if ! kill -0 "$RBD_PID" 2> /dev/null; then
			echo "rbd serve exited; its log ($WORK/rbd.log):" >&2
			cat "$WORK/rbd.log" >&2
			exit 1
		fi
		sleep 0.1
	done
	[ -n "$ADDR" ] || { echo "rbd serve did not start within 60s; see $WORK/rbd.log" >&2; exit 1; }
	sed -n 's/.*"msg":"\([^"]*\)".*/rbd: \1/p' "$WORK/rbd.log"
	echo "rbd is listening on http://$ADDR"
	echo "the console: http://$ADDR/ui/ (sign in with the token in $DATA/api-tokens; make demo KEEP=1 keeps it up after the demo)"

	export RBD_SERVER="http://$ADDR"
	RBD_TOKEN=$(head -n 1 "$DATA/api-tokens")
	export RBD_TOKEN
	export RBD_WEBHOOK_SECRET_FILE="$DATA/webhook-secret"
	export RBD_USER=compliance-officer
fi

step "2. Compile the runbook, then submit it; it parks awaiting the client's documents"
run "$BIN/rbc" compile --verbs "$EX/verbs" "$EX/kyc-onboarding.rbk" -o "$WORK/kyc.plan.json"
echo "plan: $WORK/kyc.plan.json ($(grep -c '"key":' "$WORK/kyc.plan.json") steps)"
run "$BIN/rbd" submit "$EX/kyc-onboarding.rbk" \
	--input client_name="Acme Holdings SA" --input contact_email=compliance@acme.example \
	--idempotency-key demo-acme --wait | tee "$WORK/submit.out"
ID=$(grep -m 1 -E '^[0-9a-f-]{36}$' "$WORK/submit.out")
KEY=$("$BIN/rbd" status "$ID" --format json | sed -n 's/.*"correlation_key": "\([^"]*\)".*/\1/p' | head -n 1)

step "3. The client uploads the documents: deliver the notification, signed with the webhook secret"
run "$BIN/rbd" notify "$KEY" --result '{"documents": [{"type": "passport", "url": "s3://kyc/acme/passport.pdf"}, {"type": "proof_of_address", "url": "s3://kyc/acme/address.pdf"}]}'
echo "(a repeat is harmless:)"
run "$BIN/rbd" notify "$KEY" --result '{"documents": [{"type": "passport", "url": "s3://kyc/acme/passport.pdf"}, {"type": "proof_of_address", "url": "s3://kyc/acme/address.pdf"}]}'

step "4. Screening and review ran; the runbook waits at the approval gate"
run "$BIN/rbd" status "$ID" --wait
run "$BIN/rbd" approve "$ID" approval --comment "documents and screening reviewed"
run "$BIN/rbd" status "$ID" --wait

step "5. The event ledger"
run "$BIN/rbd" events "$ID"

if [ -n "${KEEP:-}" ]; then
	step "The console stays up at http://$ADDR/ui/ (token: $DATA/api-tokens); Ctrl-C goes on"
	trap ':' INT
	sleep infinity &
	keep=$!
	wait "$keep" || true
	kill "$keep" 2> /dev/null || true
	trap - INT
	# Ctrl-C reached rbd too, and a second signal would stop it at once.
	sleep 0.5
	grep -q '"msg":"shutting down"' "$WORK/rbd.log" && ALREADY_STOPPING=1
fi

if [ -n "${DEMO_SERVER:-}" ]; then
	echo
	echo "the runbook ran on $DEMO_SERVER; make cluster-stop stops the cluster"
	exit 0
fi

step "6. Stop rbd with SIGTERM; it releases its leases and stops its PostgreSQL"
[ -n "${ALREADY_STOPPING:-}" ] || kill -TERM "$RBD_PID"
status=0
wait "$RBD_PID" || status=$?
trap - EXIT
sed -n 's/.*"msg":"\(shutting down\|stopped[^"]*\)".*/rbd: \1/p' "$WORK/rbd.log"
echo "rbd exited with status $status"
exit "$status"
