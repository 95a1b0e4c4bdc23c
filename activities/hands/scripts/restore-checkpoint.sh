# Makes a new workspace from a checkpoint (common/checkpoints.ts), in a short-lived container of the
# harness's own: the checkpoint repository of the original session read-only at /checkpoints, the new
# workspace at /workspace and its journal at /var/lib/agent-journal. Starts over on every attempt
# (whatever a crashed attempt left is removed first) and records the restore last, so a retry after
# a crash ends with the same files and a restore already done is only reported again.
# $1 the checkpoint's commit
# stdout: "@@restored <record JSON>", or "@@unknown-checkpoint".
set -eu
umask 022
commit=$1
record=/var/lib/agent-journal/restored.json
export HOME=/nonexistent GIT_CONFIG_NOSYSTEM=1 GIT_DIR=/checkpoints/checkpoints.git
empty=4b825dc642cb6eb9a060e54bf8d69288fbee4904
if [ -f "$record" ]; then
  printf '@@restored %s\n' "$(cat "$record")"
  exit 0
fi
if ! git cat-file -e "$commit^{commit}" 2> /dev/null; then
  printf '@@unknown-checkpoint\n'
  exit 0
fi
find /workspace -mindepth 1 -maxdepth 1 ! -name lost+found -exec rm -rf -- {} +
index=$(mktemp)
files=0
# $1 tree  $2 where
restore() {
  [ "$(git rev-parse "$1")" = "$empty" ] && return 0
  GIT_INDEX_FILE=$index.$3 git read-tree "$1"
  mkdir -p "$2"
  GIT_INDEX_FILE=$index.$3 GIT_WORK_TREE=$2 git checkout-index -a -f
  files=$((files + $(GIT_INDEX_FILE=$index.$3 git ls-files -z | tr -cd '\0' | wc -c)))
}
restore "$commit:workspace" /workspace ws
restore "$commit:git" /workspace/.git git
chown -R -h 1000:1000 /workspace
printf '{"commit":"%s","files":%d}' "$commit" "$files" > "$record.tmp"
mv -f "$record.tmp" "$record"
printf '@@restored %s\n' "$(cat "$record")"
