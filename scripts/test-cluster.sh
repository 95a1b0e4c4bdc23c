#!/usr/bin/env bash
# `npm run test:cluster`: starts the Temporal cluster of `npm run cluster` (building the server from
# its Go module when it is not built yet), runs the cluster's tests (test/cluster) against it with
# TEMPORAL_ADDRESS, and stops it again (its data stays). Extra arguments go to jest.
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh || exit 1
node_modules/.bin/tsx scripts/prepare-platform.ts || exit 1
node_modules/.bin/tsx scripts/cluster.ts start || exit 1
# --forceExit: the stage runs in band, with the suites' in-process workers and the soak's clients in
# this one process, and it must end when its tests have ended (a native handle one of them leaves
# open once kept it waiting after 31 of 31 tests had passed); leaks are the leak check's business.
TEMPORAL_ADDRESS="127.0.0.1:${AGENT_CLUSTER_PORT:-17233}" node_modules/.bin/jest -c jest.cluster.config.js --runInBand --forceExit "$@"
status=$?
node_modules/.bin/tsx scripts/cluster.ts stop || status=1
exit $status
