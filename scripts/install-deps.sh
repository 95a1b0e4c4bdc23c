#!/usr/bin/env bash
# Installs the npm dependencies when they are missing or older than package-lock.json; silent otherwise.
# Used by the README's commands (`npm test`, `npm run demo`) so each works on a fresh clone.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "[setup] installing dependencies (npm ci)"
  npm ci --no-audit --no-fund --loglevel=error
fi
