# Records the workspace as a checkpoint: a commit in the checkpoint repository on the journal volume
# (common/checkpoints.ts). This script runs as the journal's writer — root without the capabilities
# to read files it does not own — so the workspace is read by the agent's half ($1,
# checkpoint-read.sh, run as uid 1000), whose pack of new objects this half indexes into the
# repository (git computes every object's id as it does), checks that the trees are whole, and
# commits. The agent can add objects only through that pack; it never changes an object or a ref.
#
# After it, the sandbox tools' checkpoint-probe (sandbox-tools/probe.go) can answer a turn in which
# nothing changed without git, from the record this leaves in $repo/last-full: the clocks as the
# workspace was about to be read, the commit, the files left unread and the patterns.
# $1 the agent's half  $2 ref name (under refs/checkpoints/)  $3 commit message  $4… patterns left out
# stdout: "@@checkpoint-skipped <why>", or "@@checkpoint <commit> <parent or -> <changed> <unreadable>"
# and then the first changed paths, each ending with NUL.
set -u
umask 022
repo=/var/lib/agent-journal/checkpoints.git
read_half=$1 ref=$2 message=$3
shift 3
last=$repo/last-full
# The clocks as the workspace is about to be read: the wall clock in µs (empty in a bash without
# it) and the boot clock (/proc/uptime, hundredths of a second) in µs.
wall=${EPOCHREALTIME:-}
wall=${wall//[!0-9]/}
read -r boot _ < /proc/uptime 2> /dev/null || boot=
boot=${boot//[!0-9]/}
boot=${boot:+${boot}0000}
# The patterns as one line (a pattern has no control characters).
IFS=$'\x1f' joined="$*"
unset IFS
if ! command -v git > /dev/null 2>&1; then
  printf '@@checkpoint-skipped git is not installed in the sandbox image\n'
  exit 0
fi
export HOME=/nonexistent XDG_CONFIG_HOME=/nonexistent GIT_CONFIG_NOSYSTEM=1 GIT_TERMINAL_PROMPT=0
unset GIT_DIR GIT_WORK_TREE GIT_INDEX_FILE GIT_OBJECT_DIRECTORY GIT_ALTERNATE_OBJECT_DIRECTORIES
if [ ! -f "$repo/HEAD" ]; then
  tmp=$repo.new.$$
  rm -rf "$tmp"
  git init -q --bare "$tmp" || exit 90
  printf '[gc]\n\tauto = 0\n[core]\n\tlogAllRefUpdates = false\n' >> "$tmp/config"
  printf '* -text -eol -filter -ident -working-tree-encoding\n' > "$tmp/info/attributes"
  mv -T "$tmp" "$repo" 2> /dev/null || rm -rf "$tmp"
fi
[ -f "$repo/HEAD" ] || exit 90
export GIT_DIR=$repo
work=$(mktemp -d "$repo/tmp-checkpoint.XXXXXX") || exit 90
trap 'rm -rf "$work"' EXIT
chmod 755 "$work"
printf '%s\n' "$@" > "$work/exclude"
if ! setpriv --reuid=1000 --regid=1000 --clear-groups -- bash -c "$read_half" checkpoint-read "$repo" "$work/exclude" \
  3> "$work/trees" > "$work/pack"; then
  echo "reading the workspace failed" >&2
  exit 93
fi
if [ -s "$work/pack" ] && ! git index-pack --stdin < "$work/pack" > /dev/null; then
  echo "the workspace's objects could not be stored" >&2
  exit 93
fi
read -r ws gt unreadable < "$work/trees"
if ! git rev-list --objects "$ws" "$gt" > /dev/null 2>&1; then
  echo "the workspace's trees are incomplete" >&2
  exit 94
fi
root=$(printf '040000 tree %s\tgit\n040000 tree %s\tworkspace\n' "$gt" "$ws" | git mktree) || exit 95
# The head as its loose ref holds it (nothing here packs refs), else as git finds it.
parent=
[ -f "$repo/refs/checkpoints/head" ] && read -r parent < "$repo/refs/checkpoints/head"
[[ $parent =~ ^[0-9a-f]{40}$ ]] || parent=$(git rev-parse -q --verify refs/checkpoints/head 2> /dev/null)
commit=$(GIT_AUTHOR_NAME=agent-harness GIT_AUTHOR_EMAIL=harness@agent.invalid \
  GIT_COMMITTER_NAME=agent-harness GIT_COMMITTER_EMAIL=harness@agent.invalid \
  git commit-tree "$root" ${parent:+-p "$parent"} -m "$message") || exit 95
printf 'update refs/checkpoints/%s %s\nupdate refs/checkpoints/head %s\n' "$ref" "$commit" "$commit" |
  git update-ref --stdin || exit 96
from=${parent:+$parent:workspace}
git diff-tree -r --no-renames --name-only -z "${from:-4b825dc642cb6eb9a060e54bf8d69288fbee4904}" "$ws" > "$work/changed"
# (mapfile -d needs bash 4.4; an older bash in an environment's image reads them one by one)
if ! mapfile -d '' -t changed < "$work/changed" 2> /dev/null; then
  changed=()
  while IFS= read -r -d '' file; do changed+=("$file"); done < "$work/changed"
fi
printf '@@checkpoint %s %s %s %s\n' "$commit" "${parent:--}" "${#changed[@]}" "${unreadable:-0}"
((${#changed[@]})) && printf '%s\0' "${changed[@]:0:10}"
if [ -n "$wall" ]; then
  printf '%s %s %s %s\n%s\n' "$wall" "$boot" "$commit" "${unreadable:-0}" "$joined" > "$last.tmp" &&
    mv -f "$last.tmp" "$last"
fi
