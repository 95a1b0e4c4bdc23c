# Kills a process group: TERM, then KILL after a grace period.
# $1 pgid  $2 grace seconds  $3 run dir to mark `cancelled` first (may be empty)
p=$1 grace=$2 d=$3
if [ -n "$d" ] && [ -d "$d" ]; then : > "$d/cancelled"; fi
kill -TERM -- "-$p" 2>/dev/null || exit 0
i=0
while kill -0 -- "-$p" 2>/dev/null; do
  i=$((i + 1))
  if [ "$i" -gt $((grace * 10)) ]; then kill -KILL -- "-$p" 2>/dev/null; break; fi
  sleep 0.1
done
exit 0
