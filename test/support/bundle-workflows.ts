/**
 * A test-only workflow that looks at zod from inside the workflow sandbox: whether the module is the
 * one the reusable V8 context preloaded and froze for every workflow (`workflowPreloadModules`), and
 * whether a schema built and used in the workflow still validates with zod's default messages.
 */
import { z } from 'zod';

export interface ZodInWorkflow {
  frozen: boolean;
  message: string | undefined;
}

export async function zodInWorkflow(): Promise<ZodInWorkflow> {
  const parsed = z.strictObject({ name: z.string().min(1) }).safeParse({ name: 3 });
  return { frozen: Object.isFrozen(z), message: parsed.error?.issues[0]?.message };
}
