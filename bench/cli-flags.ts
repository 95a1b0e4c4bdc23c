/** The command-line flags of the bench's commands (`npm run bench`, `npm run soak`). */

/**
 * Walks `--flag value` and `--flag=value` alike: each flag with a reader of its value (the inline one,
 * else the next argument, which the walk then skips).
 */
export function* cliFlags(
  argv: readonly string[],
): Generator<{ arg: string; flag: string; value: () => string | undefined }> {
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const eq = arg.indexOf('=');
    const [flag, inline] = eq >= 0 ? [arg.slice(0, eq), arg.slice(eq + 1)] : [arg, undefined];
    yield { arg, flag, value: () => inline ?? argv[++i] };
  }
}
