#!/usr/bin/env bash
# `npm test`: makes the real parts available (dependencies, the temporal CLI, a Docker engine, the
# sandbox image — quietly when all are present), then runs jest. Extra arguments go to jest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
node_modules/.bin/tsx scripts/prepare-platform.ts
# Two test files at a time: the suites spend much of their time waiting on the Temporal server, Docker
# and their own worker processes, so a second file uses the cores the first leaves idle. Every suite
# uses its own task queues, session ids and sandbox name prefixes. The arguments may choose the jest
# workers themselves (`--maxWorkers=N`, `-w N`, `--runInBand`, `-i`).
workers=(--maxWorkers=2)
for arg in "$@"; do
  case "$arg" in --maxWorkers* | -w | --runInBand | -i) workers=() ;; esac
done
exec node_modules/.bin/jest "${workers[@]}" "$@"
