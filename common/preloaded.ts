/**
 * What the reusable V8 context evaluates once and shares among all workflows (`workflowPreloadModules`
 * in `workers/workflow-bundle.ts`), where the SDK deep-freezes it: zod and every module of `common/`
 * the workflows use. Without it each workflow the worker starts or replays evaluates them again and
 * each cached workflow keeps its copy: about 1,300 zod schemas, 1.5 MiB and 25 ms of CPU per
 * workflow. These modules keep no state of their own (no module-level variable; a test checks that
 * the list matches the bundle).
 *
 * zod is set up first (`zod-defaults.ts`), then the modules build their schemas, and then
 * `readyToFreeze` builds the parts of every schema zod builds lazily (its methods and internals,
 * made on first use), which a frozen schema could no longer take, and gives zod a fresh copy of
 * each pattern it tests with.
 */
import './zod-defaults';
import { z } from 'zod';
import * as approvals from './approvals';
import * as budget from './budget';
import * as checkpointRecord from './checkpoint-record';
import * as checkpoints from './checkpoints';
import * as codingTask from './coding-task';
import * as context from './context';
import * as egress from './egress';
import * as environment from './environment';
import * as featureList from './feature-list';
import * as forge from './forge';
import * as handsRoute from './hands-route';
import * as hands from './hands';
import * as health from './health';
import * as hooks from './hooks';
import * as lanes from './lanes';
import * as live from './live';
import * as mcp from './mcp';
import * as modelStep from './model-step';
import * as modelTypes from './model-types';
import * as models from './models';
import * as operation from './operation';
import * as pricing from './pricing';
import * as prompts from './prompts';
import * as pullRequestBody from './pull-request-body';
import * as pullRequest from './pull-request';
import * as repo from './repo';
import * as rewind from './rewind';
import * as sandboxNames from './sandbox-names';
import * as searchAttributes from './search-attributes';
import * as sessionFork from './session-fork';
import * as session from './session';
import * as stuck from './stuck';
import * as taskPrompts from './task-prompts';
import * as taskQueues from './task-queues';
import * as taskReport from './task-report';
import * as tokenLedger from './token-ledger';
import * as tools from './tools';
import * as trace from './trace';
import * as validation from './validation';
import * as versioning from './versioning';

export const preloaded: readonly unknown[] = [
  z,
  approvals,
  budget,
  checkpointRecord,
  checkpoints,
  codingTask,
  context,
  egress,
  environment,
  featureList,
  forge,
  handsRoute,
  hands,
  health,
  hooks,
  lanes,
  live,
  mcp,
  modelStep,
  modelTypes,
  models,
  operation,
  pricing,
  prompts,
  pullRequestBody,
  pullRequest,
  repo,
  rewind,
  sandboxNames,
  searchAttributes,
  sessionFork,
  session,
  stuck,
  taskPrompts,
  taskQueues,
  taskReport,
  tokenLedger,
  tools,
  trace,
  validation,
  versioning,
];

readyToFreeze(preloaded, (value) => value instanceof z.ZodType);

/**
 * Reads, on every schema reachable from `roots` the way the SDK's freeze walks them (own properties,
 * getters included), each property zod defines lazily on its prototypes, so it becomes the schema's
 * own before the freeze.
 */
function readyToFreeze(roots: readonly unknown[], isSchema: (value: object) => boolean): void {
  const seen = new WeakSet<object>();
  const pending: unknown[] = [...roots];
  while (pending.length > 0) {
    const value = pending.pop();
    if (value === null || (typeof value !== 'object' && typeof value !== 'function')) continue;
    if (seen.has(value)) continue;
    seen.add(value);
    if (typeof value !== 'object') continue;
    const object = value as Record<PropertyKey, unknown>;
    if (isSchema(object)) {
      readLazyProperties(object);
      const internals = object._zod;
      if (typeof internals === 'object' && internals !== null)
        readLazyProperties(internals as Record<PropertyKey, unknown>);
    }
    for (const key of Reflect.ownKeys(object)) {
      copyRegExpOnRead(object, key);
      try {
        pending.push(object[key]);
      } catch {
        // a getter that throws is left as it is, as the freeze leaves it
      }
    }
  }
}

/**
 * zod sets a pattern's `lastIndex` before each test, which a frozen RegExp refuses: a RegExp held
 * in a property is read as a fresh copy (the same source and flags) each time instead.
 */
function copyRegExpOnRead(object: Record<PropertyKey, unknown>, key: PropertyKey): void {
  const descriptor = Object.getOwnPropertyDescriptor(object, key);
  const pattern: unknown = descriptor?.value;
  if (!(pattern instanceof RegExp) || !descriptor?.configurable || !Object.isExtensible(object)) return;
  Object.defineProperty(object, key, {
    get: () => new RegExp(pattern),
    enumerable: descriptor.enumerable ?? false,
    configurable: false,
  });
}

function readLazyProperties(object: Record<PropertyKey, unknown>): void {
  for (
    let proto = Object.getPrototypeOf(object) as object | null;
    proto && proto !== Object.prototype;
    proto = Object.getPrototypeOf(proto) as object | null
  ) {
    for (const key of Reflect.ownKeys(proto)) {
      if (Object.prototype.hasOwnProperty.call(object, key) || !Object.getOwnPropertyDescriptor(proto, key)?.get)
        continue;
      try {
        void object[key];
      } catch {
        // a getter that needs more than the schema itself (none in zod's own)
      }
    }
  }
}
