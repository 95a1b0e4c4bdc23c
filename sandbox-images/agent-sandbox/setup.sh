#!/bin/sh
# Common last steps of both build paths: a non-root user that owns /workspace, no secrets.
set -eu
groupadd --gid 1000 agent
useradd --uid 1000 --gid 1000 --create-home --shell /bin/bash agent
mkdir -p /workspace /var/cache/agent
chown agent:agent /workspace /var/cache/agent
# Identity for commits made inside the sandbox; no credentials of any kind.
cat > /etc/gitconfig <<'GIT'
[user]
	name = agent
	email = agent@sandbox.invalid
[safe]
	directory = *
[init]
	defaultBranch = main
GIT
rm -rf /root/.cache /var/cache/apt/archives/*.deb
