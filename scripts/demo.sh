#!/usr/bin/env bash
# `npm run demo`: installs what is missing (as .ci/run does), then runs the demo.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x node_modules/.bin/tsx ]; then
  echo "[demo] installing dependencies (npm ci)"
  npm ci --no-audit --no-fund
fi
exec node_modules/.bin/tsx scripts/demo.ts "$@"
