/**
 * zod's configuration inside the workflow bundle, set before any schema is built (the first module
 * `common/preloaded.ts` imports). Schemas there are built once per worker and shared, frozen, by
 * every workflow, so nothing may change a schema once it is built:
 * - The memoizer: the one zod installs by default resolves cycles in the values a container parses,
 *   and on a schema's first parse rewrites that schema's parse function. Workflow inputs, updates and
 *   activity results are decoded JSON, which has no cycles: this one keeps no state.
 * - The English messages, which zod otherwise sets on the first schema it builds.
 */
import { z } from 'zod';

z.config({
  memoizer: {
    attach() {},
    guard() {},
    alloc: (_inst, _payload, empty) => empty,
  },
});
z.string();
