/**
 * A sink through which workflow code marks effect boundaries for the worker's crash test mode
 * (`workers/crash-points.ts`). It does nothing outside that mode and is never called on replay.
 */
import { proxySinks, type Sinks } from '@temporalio/workflow';

export interface CrashPointSinks extends Sinks {
  crashPoints: {
    reached(name: string): void;
  };
}

export const { crashPoints } = proxySinks<CrashPointSinks>();
