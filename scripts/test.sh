#!/usr/bin/env bash
# `npm test`: makes the real parts available (dependencies, the temporal CLI, a Docker engine, the
# sandbox image — quietly when all are present), then runs jest. Extra arguments go to jest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
node_modules/.bin/tsx scripts/prepare-platform.ts
# Test files run one at a time (two cores, one Docker engine) unless the arguments choose the jest
# workers themselves (`--maxWorkers=N`, `-w N`, `--runInBand`, `-i`).
in_band=(--runInBand)
for arg in "$@"; do
  case "$arg" in --maxWorkers* | -w | --runInBand | -i) in_band=() ;; esac
done
exec node_modules/.bin/jest "${in_band[@]}" "$@"
