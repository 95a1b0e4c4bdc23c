/** The workflow types this project registers. Worker bundles are built from this file. */
export { codingTask } from './coding-task';
export { healthCheck } from './health';
export { operation } from './operation';
export { session } from './session';
