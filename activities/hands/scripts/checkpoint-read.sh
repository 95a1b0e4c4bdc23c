# The agent's half of a checkpoint (see checkpoint.sh): runs as the agent (uid 1000), so it reads
# every file the agent can. It hashes the workspace and its .git directory into a scratch repository
# of its own (/tmp/.agent-checkpoint; its indexes keep the files' stat data, so an unchanged file is
# not read again) that borrows the checkpoint repository's objects, and writes the objects the
# checkpoint repository does not have yet to stdout as a pack.
# $1 checkpoint repository  $2 exclude file (gitignore patterns)
# fd 3: "<workspace tree> <.git tree> <files left out unreadable>"
set -u
shopt -s nullglob
repo=$1 excl=$2
s=/tmp/.agent-checkpoint
[ -d "$s" ] || mkdir -p "$s"
[ -d "$s" ] && [ -O "$s" ] || { echo "cannot use $s" >&2; exit 91; }
export GIT_DIR=$s/scratch.git
if [ ! -f "$GIT_DIR/HEAD" ]; then git init -q --bare "$GIT_DIR" || exit 92; fi
printf '* -text -eol -filter -ident -working-tree-encoding\n' > "$GIT_DIR/info/attributes"
export GIT_ALTERNATE_OBJECT_DIRECTORIES=$repo/objects GIT_LITERAL_PATHSPECS=1
# The scratch repository's loose objects, by id, into the array `ids` (no process: a checkpoint
# runs on every turn that changed a file, and each process costs more than its work here).
loose() {
  ids=()
  local path name
  for path in "$GIT_DIR"/objects/[0-9a-f][0-9a-f]/[0-9a-f]*; do
    name=${path##*/}
    ((${#name} == 38)) && ids+=("${path: -41:2}$name")
  done
}
# Objects the checkpoint repository took last time go; any it did not are sent again.
loose
if ((${#ids[@]})); then
  taken=()
  while read -r id rest; do
    [ -z "$rest" ] && taken+=("$GIT_DIR/objects/${id:0:2}/${id:2}")
  done < <(printf '%s\n' "${ids[@]}" | git --git-dir="$repo" -c safe.directory='*' cat-file --batch-check='%(objectname)' 2>/dev/null)
  ((${#taken[@]})) && printf '%s\0' "${taken[@]}" | xargs -0 rm -f
fi
: > "$s/errors"
# The tree of work tree $1 with index $2, leaving out what exclude file $3 (may be empty) names.
# The files excluded are taken out of an index that may hold them: one made with other patterns
# (the patterns it was made with are kept beside it).
snap() {
  if [ ! -d "$1" ]; then git mktree < /dev/null; return; fi
  (
    cd "$1" || exit 1
    export GIT_WORK_TREE=$1 GIT_INDEX_FILE=$2
    local now= before=
    [ -n "$3" ] && IFS= read -r -d '' now < "$3"
    [ -f "$2" ] && [ -f "$2.patterns" ] && IFS= read -r -d '' before < "$2.patterns"
    if [ -n "$3" ] && [ -f "$2" ] && { [ ! -f "$2.patterns" ] || [ "$now" != "$before" ]; }; then
      git ls-files -z -c -i --exclude-from="$3" | git update-index -z --force-remove --stdin
    fi
    git add -u --ignore-errors 2>> "$s/errors"
    # Regular files and symbolic links only: no fifos, sockets or nested repositories.
    git ls-files -z -o ${3:+"--exclude-from=$3"} > "$2.untracked" 2>> "$s/errors"
    if [ -s "$2.untracked" ]; then
      perl -0 -ne 'chomp; print "$_\0" if -l $_ || -f _' < "$2.untracked" |
        git add -f --ignore-errors --pathspec-from-file=- --pathspec-file-nul 2>> "$s/errors"
    fi
    printf '%s' "$now" > "$2.patterns"
    git write-tree
  )
}
ws=$(snap /workspace "$s/index" "$excl") || exit 93
gt=$(snap /workspace/.git "$s/index-git" "") || exit 94
unreadable=0
[ -s "$s/errors" ] && unreadable=$(grep -cE 'unable to index file|could not open directory' "$s/errors")
loose
if ((${#ids[@]})); then printf '%s\n' "${ids[@]}" | git pack-objects --stdout -q || exit 95; fi
printf '%s %s %s\n' "$ws" "$gt" "${unreadable:-0}" >&3
