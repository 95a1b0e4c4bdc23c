#!/usr/bin/env bash
# `npm test`: makes the real parts available (dependencies, the temporal CLI, a Docker engine, the
# sandbox image — quietly when all are present), then runs jest. Extra arguments go to jest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
node_modules/.bin/tsx scripts/prepare-platform.ts
exec node_modules/.bin/jest --runInBand "$@"
