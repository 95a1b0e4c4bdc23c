/** A command line the `agent` command cannot accept; its message is the one line printed. */
export class UsageError extends Error {
  override name = 'UsageError';
}
