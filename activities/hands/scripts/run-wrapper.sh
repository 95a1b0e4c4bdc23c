# Runs one command in the sandbox so that its identity, output and exit status survive the caller.
# See activities/hands/scripts.ts for the file layout and the stdout protocol. The command sees its
# attempt number (1, 2, ... per run base) as $AGENT_ATTEMPT.
# The wrapper runs as the journal store's writer (root, whose only capabilities are switching to the
# agent's uid and signalling its processes) and keeps the records where the agent cannot write
# (journal-store.ts); the command itself runs as the agent (uid 1000, no capabilities).
# $1 runBase  $2 outLink (may be empty)  $3 timeout seconds  $4 capture cap (bytes)  $5 command
# $6 journal path (may be empty)  $7 journal head  $8 started event (JSON object)
# $9 mode (fresh|append; fresh:<dir> also counts an attempt under <dir>, where an older version kept them)
# ${10}... arguments of the command ($1... inside it)
set -u
umask 022
base=$1 link=$2 t=$3 cap=$4 cmd=$5 jp=$6 jhead=$7 jstarted=$8 mode=$9
shift 9
legacy=
case $mode in fresh:*) legacy=${mode#fresh:} mode=fresh ;; esac
# The time (UTC, milliseconds) into the variable named $1. Builtins only: every process the wrapper
# forks is CPU on the sandbox's share of the machine, on every tool call.
stamp() {
  local TZ=UTC
  local s=${EPOCHREALTIME%[.,]*} f=${EPOCHREALTIME#*[.,]}
  printf -v "$1" '%(%Y-%m-%dT%H:%M:%S)T.%sZ' "$s" "${f:0:3}"
}
jwrite() { [ -n "$jp" ] || return 0; printf '%s]}' "$1" > "$jp.$$.tmp" && mv -f "$jp.$$.tmp" "$jp"; }
# The sandbox's resource counters (cgroup v1 or v2): forks the pid limit refused, processes killed for
# memory. Builtins only, so they work when no process can be forked. Sets "$1" to "<pids> <oom>".
limits() {
  local lk lv lf lp=0 lo=0
  for lf in /sys/fs/cgroup/pids/pids.events /sys/fs/cgroup/pids.events; do
    [ -r "$lf" ] || continue
    while read -r lk lv; do [ "$lk" = max ] && lp=$lv; done < "$lf"
    break
  done
  for lf in /sys/fs/cgroup/memory/memory.oom_control /sys/fs/cgroup/memory.events; do
    [ -r "$lf" ] || continue
    while read -r lk lv; do [ "$lk" = oom_kill ] && lo=$lv; done < "$lf"
    break
  done
  printf -v "$1" '%s %s' "$lp" "$lo"
}
# Claim an attempt directory atomically. `fresh` may only take attempt 1: when it is taken, an
# earlier attempt of this call exists and the caller must consult the journal instead of running.
mkdir -p "$base" || exit 90
n=1
if [ "$mode" = fresh ]; then
  if { [ -n "$legacy" ] && [ -d "$legacy/1" ]; } || ! mkdir "$base/1" 2>/dev/null; then printf '@@agent-journal\n'; cat "$jp" 2>/dev/null; exit 0; fi
else
  until mkdir "$base/$n" 2>/dev/null; do n=$((n + 1)); [ "$n" -gt 1000 ] && exit 90; done
fi
d=$base/$n
echo $$ > "$d/wrapper"
j=
if [ -n "$jp" ]; then
  [ -d "${jp%/*}" ] || mkdir -p "${jp%/*}" || exit 90
  if [ "$mode" != fresh ] && [ -s "$jp" ]; then j=$(cat "$jp"); j="${j%']}'},"; else j=$jhead; fi
  stamp now
  j="$j${jstarted%'}'},\"attempt\":$n,\"runDir\":\"$d\",\"wrapperPid\":$$,\"container\":\"$HOSTNAME\",\"at\":\"$now\"}"
  jwrite "$j"
fi
limits before
# Output capture: unbuffered (so a kill loses nothing already written), keeps the first $cap bytes,
# counts and drops the rest (still reading, so the command never blocks on a full pipe). Prints
# "<kept> <dropped>" at the end.
AGENT_CAPTURE='my ($cap, $out) = @ARGV; open(my $f, ">", $out) or die "$out: $!"; binmode STDIN;
my ($kept, $dropped, $buf) = (0, 0);
while (1) { my $n = sysread(STDIN, $buf, 65536); if (!defined $n) { next if $!{EINTR}; last } last if $n == 0;
  my $take = $cap - $kept; $take = $n if $n < $take; $take = 0 if $take < 0;
  syswrite($f, $buf, $take) if $take > 0; $kept += $take; $dropped += $n - $take; }
print "$kept $dropped";'
export AGENT_RUN_DIR=$d AGENT_CAP=$cap AGENT_CMD=$cmd AGENT_JP=$jp AGENT_J=$j AGENT_CAPTURE
# The session leader's pid is the process group id that kill() targets.
setsid -w bash -c '
  read -r -a st < /proc/$$/stat
  printf "%s %s\n" $$ "${st[21]}" > "$AGENT_RUN_DIR/pid.tmp" && mv -f "$AGENT_RUN_DIR/pid.tmp" "$AGENT_RUN_DIR/pid"
  if [ -n "$AGENT_JP" ]; then
    now=$EPOCHREALTIME
    TZ=UTC printf -v now "%(%Y-%m-%dT%H:%M:%S)T.%sZ" "${now%[.,]*}" "${now:${#now}-6:3}"
    printf "%s,{\"type\":\"process\",\"pid\":%s,\"pgid\":%s,\"startTime\":%s,\"at\":\"%s\"}]}" "$AGENT_J" $$ $$ "${st[21]}" "$now" > "$AGENT_JP.$$.tmp" && mv -f "$AGENT_JP.$$.tmp" "$AGENT_JP"
  fi
  printf "@@agent-pid %s %s\n" $$ "${AGENT_RUN_DIR##*/}"
  cmd=$AGENT_CMD cap=$AGENT_CAP d=$AGENT_RUN_DIR
  export AGENT_ATTEMPT=${d##*/}
  unset AGENT_CMD AGENT_CAP AGENT_JP AGENT_J AGENT_RUN_DIR
  capture=$AGENT_CAPTURE
  unset AGENT_CAPTURE
  setpriv --reuid=1000 --regid=1000 --clear-groups -- bash -c "$cmd" agent-tool "$@" </dev/null 2>&1 | { trap "" TERM INT HUP; exec perl -e "$capture" "$cap" "$d/out" > "$d/dropped"; }
  exit "${PIPESTATUS[0]}"
' agent-session "$@" &
s=$!
# The watchdog: kills the group when the time is up. Stopped early, it takes its sleep with it —
# every background job, even one forked a moment before the signal, before `$!` was read — and it
# holds none of the wrapper's output: a sleep left behind must never keep the caller waiting for
# the end of that output.
(
  trap 'kill $(jobs -p) 2>/dev/null; exit 0' TERM
  sleep "$t" & wait $!
  [ -e "$d/exit" ] && exit 0
  : > "$d/timedout"
  p=
  read -r p _ < "$d/pid" 2>/dev/null && kill -TERM -- "-$p" 2>/dev/null
  sleep 2 & wait $!
  [ -n "$p" ] && kill -KILL -- "-$p" 2>/dev/null
  exit 0
) </dev/null >/dev/null 2>&1 &
wd=$!
wait $s
code=$?
kill $wd 2>/dev/null
wait $wd 2>/dev/null
p=0 st=0
[ -r "$d/pid" ] && read -r p st < "$d/pid"
tm=false; [ -e "$d/timedout" ] && tm=true
cn=false; [ -e "$d/cancelled" ] && cn=true
# A killed group: let the capture finish writing what it read before the output is measured.
if [ "$p" != 0 ] && { [ $tm = true ] || [ $cn = true ]; }; then
  i=0
  while kill -0 -- "-$p" 2>/dev/null && [ $i -lt 30 ]; do sleep 0.1; i=$((i + 1)); done
fi
limits after
read -r pidb oomb <<< "$before"
read -r pida ooma <<< "$after"
# The pid limit refused forks: what the command left running holds the sandbox's pids, so end it
# (otherwise nothing, not even the next call, could start).
[ "$pida" -gt "$pidb" ] && [ "$p" != 0 ] && kill -KILL -- "-$p" 2>/dev/null
[ -e "$d/out" ] || : > "$d/out"
ob= dr=
[ -r "$d/dropped" ] && read -r ob dr < "$d/dropped"
# No count: the capture was killed with the group; measure what it wrote.
if [ -z "$dr" ]; then ob=$(stat -c %s "$d/out" 2>/dev/null || echo 0); dr=0; fi
free=-1 size=-1
read -r fa fb fs < <(stat -f -c '%a %b %S' /workspace 2>/dev/null) && free=$((fa * fs)) size=$((fb * fs))
out=$d/out
# The model reads long output back from the workspace: the copy is made as the agent (no output, no
# copy: nothing would point the model at it).
if [ -n "$link" ] && [ -s "$d/out" ] && setpriv --reuid=1000 --regid=1000 --clear-groups -- bash -c '{ [ -d "${1%/*}" ] || mkdir -p "${1%/*}"; } && cat > "$1"' agent-copy "$link" < "$d/out" 2>/dev/null; then out=$link; fi
stamp fin
printf -v res '{"exitCode":%d,"outputBytes":%d,"droppedBytes":%d,"timedOut":%s,"cancelled":%s,"pid":%d,"startTime":%s,"finishedAt":"%s","pidLimitHits":%d,"oomKills":%d,"workspaceFreeBytes":%d,"workspaceBytes":%d,"outputPath":"%s"}' "$code" "$ob" "$dr" $tm $cn "$p" "$st" "$fin" $((pida - pidb)) $((ooma - oomb)) "$free" "$size" "$out"
printf '%s' "$res" > "$d/exit.tmp" && mv -f "$d/exit.tmp" "$d/exit"
if [ -n "$jp" ]; then
  [ "$p" != 0 ] && j="$j,{\"type\":\"process\",\"pid\":$p,\"pgid\":$p,\"startTime\":$st}"
  j="$j,{\"type\":\"finished\",\"attempt\":$n,\"outputPath\":\"$out\",\"result\":$res}"
  jwrite "$j"
fi
printf '@@agent-exit %s\n' "$res"
[ -s "$d/out" ] && cat "$d/out"
exit 0
