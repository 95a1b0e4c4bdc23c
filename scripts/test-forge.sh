#!/usr/bin/env bash
# `npm run test:forge`: builds Gitea from its Go module when it is not built yet (minutes, once), then
# runs the forge's tests (test/forge): each file starts a Gitea of its own. Extra arguments go to jest.
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh || exit 1
node_modules/.bin/tsx scripts/prepare-platform.ts || exit 1
node_modules/.bin/tsx scripts/forge.ts build > /dev/null || exit 1
exec node_modules/.bin/jest -c jest.forge.config.js "$@"
