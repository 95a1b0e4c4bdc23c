# Records the workspace as a checkpoint: a commit in the checkpoint repository on the journal volume
# (common/checkpoints.ts). This script runs as the journal's writer — root without the capabilities
# to read files it does not own — so the workspace is read by the agent's half ($1,
# checkpoint-read.sh, run as uid 1000), whose pack of new objects this half indexes into the
# repository (git computes every object's id as it does), checks that the trees are whole, and
# commits. The agent can add objects only through that pack; it never changes an object or a ref.
#
# In `probe` mode a workspace in which nothing changed since the session's last full checkpoint
# costs one `find` and no git: when no file or directory the checkpoint would hold (as the agent
# sees them) had its status changed since shortly before that checkpoint started ($5 µs: file times
# come from a clock that may lag by a tick), the session's head commit is this checkpoint too. The harness's copies of tool outputs (.agent/out/) do not
# count: the hands ask for `full` when a call's result points the model at its copy. The probe is
# trusted only while the wall clock kept pace with the boot clock, so a clock stepped back cannot
# hide a change.
# $1 the agent's half  $2 ref name (under refs/checkpoints/)  $3 commit message  $4 probe|full
# $5 the probe's margin in µs  $6… patterns left out
# stdout: "@@checkpoint-skipped <why>", or "@@checkpoint <commit> <parent or -> <changed> <unreadable>"
# and then the first changed paths, each ending with NUL (an unchanged workspace: its commit twice).
set -u
umask 022
repo=/var/lib/agent-journal/checkpoints.git
read_half=$1 ref=$2 message=$3 mode=$4 margin=$5
shift 5
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
  git --git-dir="$tmp" config gc.auto 0
  git --git-dir="$tmp" config core.logAllRefUpdates false
  printf '* -text -eol -filter -ident -working-tree-encoding\n' > "$tmp/info/attributes"
  mv -T "$tmp" "$repo" 2> /dev/null || rm -rf "$tmp"
fi
[ -f "$repo/HEAD" ] || exit 90
# $1… the patterns left out. Succeeds when the probe finds the workspace as the last full checkpoint left it.
unchanged() {
  [ "$mode" = probe ] && [ -n "$wall" ] && [ -n "$boot" ] || return 1
  local then_wall= then_boot= commit= unread= patterns= head= pattern found
  { read -r then_wall then_boot commit unread && IFS= read -r patterns; } < "$last" 2> /dev/null || return 1
  [[ $then_wall$then_boot =~ ^[0-9]+$ ]] && [ -n "$commit" ] && [ "$patterns" = "$joined" ] || return 1
  read -r head < "$repo/refs/checkpoints/head" 2> /dev/null && [ "$head" = "$commit" ] || return 1
  # A wall clock set back (or forward) since then, or a reboot, shows as a drift from the boot clock
  # (both are slewed alike; 50 ms is what sampling the two clocks may differ by).
  local drift=$(((wall - then_wall) - (boot - then_boot)))
  [[ $margin =~ ^[0-9]+$ ]] && [ "${drift#-}" -le 50000 ] || return 1
  local since=$((then_wall - margin))
  # Folders left out by a plain name are not walked; with a negation anywhere, every folder is.
  local prune=(-path /workspace/.agent/out)
  for pattern in "$@"; do
    case $pattern in
      '!'*)
        prune=(-path /workspace/.agent/out)
        break
        ;;
      *[][*?\\]*) ;;
      /*/) [[ ${pattern:1:-1} == */* ]] || prune+=(-o -path "/workspace${pattern%/}" -type d) ;;
      /*) [[ ${pattern:1} == */* ]] || prune+=(-o -path "/workspace$pattern") ;;
      */) [[ ${pattern%/} == */* ]] || prune+=(-o ! -path '/workspace/.git/*' -type d -name "${pattern%/}") ;;
      *) [[ $pattern == */* ]] || prune+=(-o ! -path '/workspace/.git/*' -name "$pattern") ;;
    esac
  done
  found=$(setpriv --reuid=1000 --regid=1000 --clear-groups -- find /workspace -path '/workspace/*' \( "${prune[@]}" \) \
    -prune -o -newerct "@${since:0:-6}.${since: -6}" -print -quit 2> /dev/null) && [ -z "$found" ] || return 1
  printf '@@checkpoint %s %s 0 %s\n' "$commit" "$commit" "${unread:-0}"
}
if unchanged "$@"; then exit 0; fi
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
parent=$(git rev-parse -q --verify refs/checkpoints/head 2> /dev/null)
commit=$(GIT_AUTHOR_NAME=agent-harness GIT_AUTHOR_EMAIL=harness@agent.invalid \
  GIT_COMMITTER_NAME=agent-harness GIT_COMMITTER_EMAIL=harness@agent.invalid \
  git commit-tree "$root" ${parent:+-p "$parent"} -m "$message") || exit 95
git update-ref "refs/checkpoints/$ref" "$commit" && git update-ref refs/checkpoints/head "$commit" || exit 96
from=${parent:+$parent:workspace}
git diff-tree -r --no-renames --name-only -z "${from:-4b825dc642cb6eb9a060e54bf8d69288fbee4904}" "$ws" > "$work/changed"
changed=$(tr -cd '\0' < "$work/changed" | wc -c)
printf '@@checkpoint %s %s %s %s\n' "$commit" "${parent:--}" "$changed" "${unreadable:-0}"
head -z -n 10 "$work/changed"
if [ -n "$wall" ]; then
  printf '%s %s %s %s\n%s\n' "$wall" "$boot" "$commit" "${unreadable:-0}" "$joined" > "$last.tmp" &&
    mv -f "$last.tmp" "$last"
fi
