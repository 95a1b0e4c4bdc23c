/**
 * The sink through which workflow code marks effect boundaries (steering or abort accepted) for the
 * worker's crash test mode. Implemented by `activities/crash-points.ts`; called from workflows
 * through `proxySinks`, never on replay.
 */
import type { Sinks } from '@temporalio/workflow';

export interface CrashPointSinks extends Sinks {
  crashPoints: {
    reached(name: string): void;
  };
}
