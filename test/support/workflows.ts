/**
 * Entry of the test workflow bundle: every product workflow plus the test-only ones. The global setup
 * bundles this file once; tests pass the bundle to their workers.
 */
export {
  codingTask,
  forgeEvent,
  forgePoller,
  healthCheck,
  operation,
  pullRequestLoop,
  rewind,
  session,
} from '../../workflows';
export { callModelOnce } from './model-workflows';
export { handsRunToolOnce } from './hands-workflows';
export { compactStepsOnce } from './compact-step-workflows';
export { retriedActivityOnce, timedOutActivityOnce } from './failover-workflows';
export { zodInWorkflow } from './bundle-workflows';
