#!/usr/bin/env bash
# `npm run demo`: installs what is missing (as .ci/run does), then runs the demo.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
exec node_modules/.bin/tsx scripts/demo.ts "$@"
