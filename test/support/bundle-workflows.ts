/**
 * A test-only workflow that looks at the shared modules from inside the workflow sandbox: whether zod
 * and the schemas of `common/` are the ones the reusable V8 context preloaded and froze for every
 * workflow (`workflowPreloadModules`), and whether schemas, shared or built in the workflow, still
 * validate: with a pattern (which zod tests after setting its `lastIndex`), a discriminated union
 * and zod's default messages.
 */
import { z } from 'zod';
import { laneNameSchema } from '../../common/lanes';
import { operationInputSchema } from '../../common/operation';
import { toolCallCheckpointSchema } from '../../common/checkpoints';

export interface ZodInWorkflow {
  frozen: { zod: boolean; operationInput: boolean; laneName: boolean };
  message: string | undefined;
  laneName: { valid: boolean; invalid: string | undefined };
  operationInput: { valid: boolean; invalid: string | undefined };
  checkpoint: boolean;
}

export async function zodInWorkflow(): Promise<ZodInWorkflow> {
  const parsed = z.strictObject({ name: z.string().min(1) }).safeParse({ name: 3 });
  const badLane = laneNameSchema.safeParse('-no');
  const badInput = operationInputSchema.safeParse({ goal: 'g', budget: { maxTurns: -1 } });
  return {
    frozen: {
      zod: Object.isFrozen(z),
      operationInput: Object.isFrozen(operationInputSchema),
      laneName: Object.isFrozen(laneNameSchema),
    },
    message: parsed.error?.issues[0]?.message,
    laneName: {
      valid: laneNameSchema.safeParse('main').success && laneNameSchema.safeParse('lane-2').success,
      invalid: badLane.error?.issues[0]?.message,
    },
    operationInput: {
      valid: operationInputSchema.safeParse({ goal: 'fix the build', sessionId: 'task-1', budget: { maxTurns: 3 } })
        .success,
      invalid: badInput.error?.issues[0]?.path.join('.'),
    },
    checkpoint: toolCallCheckpointSchema.safeParse({ turn: 1, exclude: ['node_modules/'] }).success,
  };
}
