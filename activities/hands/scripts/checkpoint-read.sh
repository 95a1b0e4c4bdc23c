# The agent's half of a checkpoint (see checkpoint.sh): runs as the agent (uid 1000), so it reads
# every file the agent can. It hashes the workspace and its .git directory into a scratch repository
# of its own (/tmp/.agent-checkpoint; its indexes keep the files' stat data, so an unchanged file is
# not read again) that borrows the checkpoint repository's objects, and writes the objects the
# checkpoint repository does not have yet to stdout as a pack.
# $1 checkpoint repository  $2 exclude file (gitignore patterns)
# fd 3: "<workspace tree> <.git tree> <files left out unreadable>"
set -u
repo=$1 excl=$2
s=/tmp/.agent-checkpoint
mkdir -p "$s" && [ -O "$s" ] || { echo "cannot use $s" >&2; exit 91; }
export GIT_DIR=$s/scratch.git
if [ ! -f "$GIT_DIR/HEAD" ]; then git init -q --bare "$GIT_DIR" || exit 92; fi
printf '* -text -eol -filter -ident -working-tree-encoding\n' > "$GIT_DIR/info/attributes"
export GIT_ALTERNATE_OBJECT_DIRECTORIES=$repo/objects GIT_LITERAL_PATHSPECS=1
loose() {
  find "$GIT_DIR/objects" -mindepth 2 -maxdepth 2 -type f -path "$GIT_DIR/objects/??/*" |
    sed -nE 's#.*/([0-9a-f]{2})/([0-9a-f]{38})$#\1\2#p'
}
# Objects the checkpoint repository took last time go; any it did not are sent again.
loose | git --git-dir="$repo" -c safe.directory='*' cat-file --batch-check='%(objectname)' 2>/dev/null |
  while read -r id rest; do
    [ -z "$rest" ] && rm -f "$GIT_DIR/objects/${id:0:2}/${id:2}"
  done
: > "$s/errors"
# The tree of work tree $1 with index $2, leaving out what exclude file $3 (may be empty) names.
snap() {
  if [ ! -d "$1" ]; then git mktree < /dev/null; return; fi
  (
    cd "$1" || exit 1
    export GIT_WORK_TREE=$1 GIT_INDEX_FILE=$2
    if [ -n "$3" ]; then git ls-files -z -c -i --exclude-from="$3" | git update-index -z --force-remove --stdin; fi
    git add -u --ignore-errors 2>> "$s/errors"
    # Regular files and symbolic links only: no fifos, sockets or nested repositories.
    git ls-files -z -o ${3:+"--exclude-from=$3"} 2>> "$s/errors" |
      perl -0 -ne 'chomp; print "$_\0" if -l $_ || -f _' |
      git add -f --ignore-errors --pathspec-from-file=- --pathspec-file-nul 2>> "$s/errors"
    git write-tree
  )
}
ws=$(snap /workspace "$s/index" "$excl") || exit 93
gt=$(snap /workspace/.git "$s/index-git" "") || exit 94
unreadable=$(grep -cE 'unable to index file|could not open directory' "$s/errors")
if [ -n "$(loose | head -n 1)" ]; then loose | git pack-objects --stdout -q || exit 95; fi
printf '%s %s %s\n' "$ws" "$gt" "${unreadable:-0}" >&3
