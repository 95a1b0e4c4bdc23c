/**
 * The hooks as a Temporal activity (contract: `common/hooks.ts`), on the hands worker: `runHook` runs
 * one hook — a command in the session's sandbox (`sandbox-hook.ts`) or a host hook of the worker's
 * (`host-hook.ts`) — and returns what it decided, read once here at the activity boundary
 * (`interpretHookRun`).
 */
import { ApplicationFailure } from '@temporalio/common';
import {
  HOOK_EVENTS,
  hookSchema,
  type HookRunResult,
  type HooksActivities,
  type RunHookInput,
} from '../../common/hooks';
import { HANDS_FAILURE_TYPES } from '../../common/hands';
import { describeZodError } from '../../common/validation';
import type { Sandboxes } from '../hands/sandboxes';
import { runHostHook } from './host-hook';
import { runSandboxHook } from './sandbox-hook';
import type { HookHostSettings } from './settings';

export interface HooksActivitiesDeps {
  sandboxes: Sandboxes;
  settings: HookHostSettings;
  /** Where host hooks keep their run records (`<AGENT_DATA_DIR>/hooks` on a worker). */
  hostRunDir: string;
  /** PATH of host hooks (the worker's). */
  hostPath: string;
  /** How often a running hook heartbeats (default 1 s). */
  heartbeatIntervalMs?: number;
}

const HOOK_RUN_ID = /^hook-[A-Za-z0-9_.-]{1,123}$/;

export function createHooksActivities(deps: HooksActivitiesDeps): HooksActivities {
  const heartbeatEveryMs = deps.heartbeatIntervalMs ?? 1_000;
  return {
    runHook: async (raw: RunHookInput): Promise<HookRunResult> => {
      const input = checked(raw);
      if (input.hook.type === 'host') {
        return runHostHook(
          { hostHooks: deps.settings.hostHooks, runDir: deps.hostRunDir, path: deps.hostPath, heartbeatEveryMs },
          { ...input, hook: input.hook },
        );
      }
      return runSandboxHook({ sandboxes: deps.sandboxes, heartbeatEveryMs }, { ...input, hook: input.hook });
    },
  };
}

/** The workflow validated the input; the hands check it again before anything runs. */
function checked(raw: RunHookInput): RunHookInput {
  const refuse = (message: string) =>
    ApplicationFailure.create({ type: HANDS_FAILURE_TYPES.invalidInput, message, nonRetryable: true });
  if (typeof raw?.hookRunId !== 'string' || !HOOK_RUN_ID.test(raw.hookRunId))
    throw refuse(`invalid hookRunId ${JSON.stringify(raw?.hookRunId)}: "hook-" and letters, digits, '_', '.', '-'`);
  if (!HOOK_EVENTS.includes(raw.event)) throw refuse(`event: unknown hook event ${JSON.stringify(raw.event)}`);
  const hook = hookSchema.safeParse(raw.hook);
  if (!hook.success) throw refuse(`hook: ${describeZodError(hook.error, raw.hook)}`);
  if (typeof raw.input !== 'object' || raw.input === null) throw refuse('input: must be the event object');
  return { ...raw, hook: hook.data };
}
