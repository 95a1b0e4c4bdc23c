/**
 * The workflow types this project registers. Worker bundles are built from this file. Each type
 * declares its Worker Versioning behaviour here (`common/versioning.ts`; it applies on versioned
 * workers only).
 */
import { codingTask } from './coding-task/coding-task';
import { forgeEvent } from './forge/event';
import { forgePoller } from './forge/poller';
import { operation } from './operation/operation';
import { pullRequestLoop } from './pull-request/loop';
import { rewind } from './rewind/rewind';
import { session } from './session/session';
import { healthCheck } from './shared/health';
import { declareVersioning } from './shared/versioning';

declareVersioning('codingTask', codingTask);
declareVersioning('healthCheck', healthCheck);
declareVersioning('operation', operation);
declareVersioning('session', session);
declareVersioning('rewind', rewind);
declareVersioning('pullRequestLoop', pullRequestLoop);
declareVersioning('forgeEvent', forgeEvent);
declareVersioning('forgePoller', forgePoller);

export { codingTask, healthCheck, operation, session, rewind, pullRequestLoop, forgeEvent, forgePoller };
