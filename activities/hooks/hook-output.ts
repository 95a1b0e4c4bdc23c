/**
 * How a hook command is run so that its stdout and stderr stay apart: a small bash script around
 * it (the same in the sandbox, under the run wrapper, and on the hands host) that gives it the event
 * on stdin, keeps its two streams in files and prints them back as one stream:
 *
 *   @@hook-stdout <n>\n<n bytes of stdout><stderr>
 *
 * each cut to `HOOK_OUTPUT_MAX_BYTES`; the script exits with the hook's exit code. A hook killed by
 * its timeout prints nothing (the run's timeout says so).
 */
import { HOOK_OUTPUT_MAX_BYTES } from '../../common/hooks';

/**
 * `$1`: the event JSON, or empty when it is in the file `$2` (a large event, staged; the script
 * removes it); `$3`: the hook's command. Its temporary directory is removed when it ends.
 */
export const HOOK_RUNNER = `d=$(mktemp -d "\${TMPDIR:-/tmp}/agent-hook.XXXXXX") || exit 125
trap 'rm -rf "$d"' EXIT
if [ -n "$2" ]; then cat "$2" > "$d/in" && rm -f "$2"; else printf '%s' "$1" > "$d/in"; fi
bash -c "$3" agent-hook < "$d/in" > "$d/out" 2> "$d/err"
c=$?
head -c ${HOOK_OUTPUT_MAX_BYTES} "$d/out" > "$d/out.cut"
printf '@@hook-stdout %s\\n' "$(stat -c %s "$d/out.cut")"
cat "$d/out.cut"
head -c ${HOOK_OUTPUT_MAX_BYTES} "$d/err"
exit $c
`;

/** The hook's stdout and stderr from the runner's output (both empty when it printed nothing). */
export function splitHookOutput(all: Buffer): { stdout: string; stderr: string } {
  const newline = all.indexOf(0x0a);
  const header = newline < 0 ? undefined : /^@@hook-stdout (\d+)$/.exec(all.subarray(0, newline).toString('latin1'));
  if (!header) return { stdout: '', stderr: all.toString('utf8') };
  const start = newline + 1;
  const end = start + Number(header[1]);
  return { stdout: all.subarray(start, end).toString('utf8'), stderr: all.subarray(end).toString('utf8') };
}

/** The first `max` characters of a hook's output, for the log. */
export function excerptOf(text: string, max = 2_000): string | undefined {
  const trimmed = text.trim();
  if (!trimmed) return undefined;
  return trimmed.length <= max ? trimmed : `${trimmed.slice(0, max)}…`;
}
