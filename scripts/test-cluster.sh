#!/usr/bin/env bash
# `npm run test:cluster`: starts the Temporal cluster of `npm run cluster` (building the server from
# its Go module when it is not built yet), runs the cluster's tests (test/cluster) against it with
# TEMPORAL_ADDRESS, and stops it again (its data stays). Extra arguments go to jest.
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh || exit 1
node_modules/.bin/tsx scripts/prepare-platform.ts || exit 1
node_modules/.bin/tsx scripts/cluster.ts start || exit 1
TEMPORAL_ADDRESS="127.0.0.1:${AGENT_CLUSTER_PORT:-17233}" node_modules/.bin/jest -c jest.cluster.config.js --runInBand "$@"
status=$?
node_modules/.bin/tsx scripts/cluster.ts stop || status=1
exit $status
