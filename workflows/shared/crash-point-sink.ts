/**
 * Workflow side of the crash test mode: marks effect boundaries through a sink (see
 * `common/crash-points.ts`). It does nothing outside that mode and is never called on replay.
 */
import { proxySinks } from '@temporalio/workflow';
import type { CrashPointSinks } from '../../common/crash-points';

export const { crashPoints } = proxySinks<CrashPointSinks>();
