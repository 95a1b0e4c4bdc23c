/**
 * A repository's own hooks (`.agent/hooks.json`), as the hands host's seed check read them from the
 * repository where the worker allows them (`AGENT_REPOSITORY_HOOKS`): checked again here like any
 * input and kept in the operation's state, after the input's own hooks (`hooks.ts`); a subagent keeps
 * only their tool hooks.
 */
import { parseHooks, toolHooksOf, type HooksInput } from '../../common/hooks';
import { OperationEnd, type OperationRun } from './state';

/** Keeps the hooks the seed check found; how the operation ends when they are not valid. */
export function acceptRepositoryHooks(op: OperationRun, found: HooksInput | undefined): OperationEnd | undefined {
  if (found === undefined) return undefined;
  const parsed = parseHooks(found);
  if (!parsed.ok) return new OperationEnd('failed', `the repository's hooks are not valid: ${parsed.error}`);
  // A subagent keeps the rules on tool calls only, as it does of its parent's hooks.
  const kept = op.settings.lineage ? toolHooksOf(parsed.value) : parsed.value;
  if (kept) op.recordRepositoryHooks(kept);
  return undefined;
}
