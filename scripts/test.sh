#!/usr/bin/env bash
# `npm test`: makes the real parts available (dependencies, the temporal CLI, a Docker engine, the
# sandbox image — quietly when all are present), then runs jest. Extra arguments go to jest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
node_modules/.bin/tsx scripts/prepare-platform.ts
# Three test files at a time: the suites spend much of their time waiting on the Temporal server,
# Docker and their own worker processes, so the other files use the cores one leaves idle (on 2
# cores, two at a time left 10-20 % of them idle after the first minutes; three keep them busy and
# took `npm test` from 883 s to 820 s in the same CI). Every suite uses its own task queues, session
# ids and sandbox name prefixes. The arguments may choose the jest workers themselves
# (`--maxWorkers=N`, `-w N`, `--runInBand`, `-i`).
workers=(--maxWorkers=3)
for arg in "$@"; do
  case "$arg" in --maxWorkers* | -w | --runInBand | -i) workers=() ;; esac
done
exec node_modules/.bin/jest "${workers[@]}" "$@"
