/**
 * What the reusable V8 context evaluates once and shares among all workflows (`workflowPreloadModules`
 * in `workers/workflow-bundle.ts`), where the SDK deep-freezes it. zod is named through this module
 * because its package declares no side effects: a bare `require('zod')` in the bundle's preload is
 * dropped. The schema built here makes zod set its defaults (the English messages, the memoizer of
 * containers) in its global config now: zod sets them on the first schema it builds, which after
 * the freeze would throw.
 */
import { z } from 'zod';

export const preloaded: readonly unknown[] = [z, z.object({ preloaded: z.array(z.string()) })];
