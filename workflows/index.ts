/** The workflow types this project registers. Worker bundles are built from this file. */
export { codingTask } from './coding-task/coding-task';
export { healthCheck } from './shared/health';
export { operation } from './operation/operation';
export { session } from './session/session';
export { rewind } from './rewind/rewind';
export { pullRequestLoop } from './pull-request/loop';
export { forgeEvent } from './forge/event';
export { forgePoller } from './forge/poller';
