# Reports the latest attempt under a run base, then prints its output (possibly partial).
# One JSON line: {"attempt","state","exit","process","journal"}, then the raw output.
# state: none (no attempt) | unstarted (the command never started and its wrapper is gone)
#        | starting (wrapper alive, no pid yet) | running (the command, or its wrapper recording the
#        result, is alive) | finished | dead
# $1 runBase  $2 journal path (may be empty)
set -u
base=$1 jp=$2
alive() {
  [ -r "/proc/$1/stat" ] || return 1
  local f
  read -r -a f < "/proc/$1/stat" 2>/dev/null || return 1
  [ "${f[21]}" = "$2" ] && [ "${f[2]}" != Z ]
}
# Is the wrapper that claimed attempt directory $1 still alive (about to start the command, or
# writing its result after it ended)?
wrapping() {
  local wp
  wp=$(cat "$1/wrapper" 2>/dev/null)
  [ -n "$wp" ] && [ -r "/proc/$wp/cmdline" ] && tr '\0' ' ' < "/proc/$wp/cmdline" | grep -qF -- "$base"
}
journal=null
[ -n "$jp" ] && [ -s "$jp" ] && journal=$(cat "$jp")
n=0
for e in "$base"/*; do
  [ -d "$e" ] || continue
  k=${e##*/}
  case $k in *[!0-9]* | '') continue ;; esac
  [ "$k" -gt "$n" ] && n=$k
done
state=none exit=null proc=null
if [ "$n" -gt 0 ]; then
  d=$base/$n
  if [ -s "$d/exit" ]; then
    state=finished
    exit=$(cat "$d/exit")
  elif [ -s "$d/pid" ]; then
    read -r p st < "$d/pid"
    proc="{\"pid\":$p,\"pgid\":$p,\"startTime\":$st}"
    # The command's group leader has exited but its wrapper is still recording the result: not dead yet.
    if alive "$p" "$st" || wrapping "$d"; then
      state=running
    elif [ -s "$d/exit" ]; then # the wrapper finished between the first look and now
      state=finished
      exit=$(cat "$d/exit")
    else
      state=dead
    fi
  else
    # No command yet: is the wrapper that claimed this attempt still about to start it?
    state=unstarted
    if wrapping "$d"; then state=starting; fi
  fi
fi
printf '{"attempt":%d,"state":"%s","exit":%s,"process":%s,"journal":%s}\n' "$n" "$state" "$exit" "$proc" "$journal"
if [ "$n" -gt 0 ] && [ -r "$base/$n/out" ]; then cat "$base/$n/out"; fi
exit 0
