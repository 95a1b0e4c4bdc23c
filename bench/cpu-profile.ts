/**
 * Reads the V8 CPU profiles a worker process wrote (`node --cpu-prof`, one `.cpuprofile` per thread)
 * and sums where the busy time went: per module (an npm package, a project file, Node's internals,
 * V8's own categories) and per function. Self time only: a sample counts for the function that was
 * running, not for its callers.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { PROJECT_ROOT } from '../platform/paths';
import type { CpuProfileSummary } from './results';
import { round } from './stats';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}

interface CpuProfile {
  nodes: ProfileNode[];
  /** Microseconds on the monotonic clock of `process.hrtime()`. */
  startTime: number;
  samples?: number[];
  timeDeltas?: number[];
}

/** V8's pseudo-functions: not code, but what the thread was doing. */
const IDLE = '(idle)';

/**
 * `fromUs`: leave out the samples taken before this point of the monotonic clock (`process.hrtime`,
 * in microseconds) — the worker's start-up.
 */
export function summarizeCpuProfiles(
  files: readonly string[],
  options: { relativeTo: string; fromUs?: number; top?: number },
): CpuProfileSummary {
  const top = options.top ?? 15;
  const byModule = new Map<string, number>();
  const byFunction = new Map<string, { function: string; where: string; selfUs: number }>();
  let sampledUs = 0;
  let idleUs = 0;
  for (const file of files) {
    const profile = JSON.parse(fs.readFileSync(file, 'utf8')) as CpuProfile;
    const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
    const samples = profile.samples ?? [];
    const deltas = profile.timeDeltas ?? [];
    // timeDeltas[i] is the time before sample i; the time after it (deltas[i + 1]) is what it stands for.
    let at = profile.startTime;
    for (let i = 0; i < samples.length; i++) {
      at += deltas[i] ?? 0;
      if (options.fromUs !== undefined && at < options.fromUs) continue;
      const us = Math.max(0, deltas[i + 1] ?? 0);
      const frame = nodes.get(samples[i]!)?.callFrame;
      if (!frame) continue;
      sampledUs += us;
      if (frame.functionName === IDLE) {
        idleUs += us;
        continue;
      }
      const module = moduleOf(frame);
      byModule.set(module, (byModule.get(module) ?? 0) + us);
      const where = frame.url ? `${module}:${frame.lineNumber + 1}` : module;
      const key = `${frame.functionName}@${where}`;
      const entry = byFunction.get(key) ?? { function: frame.functionName || '(anonymous)', where, selfUs: 0 };
      entry.selfUs += us;
      byFunction.set(key, entry);
    }
  }
  const busyUs = Math.max(1, sampledUs - idleUs);
  return {
    files: files.map((file) => path.relative(options.relativeTo, file)),
    sampledMs: round(sampledUs / 1000),
    idleMs: round(idleUs / 1000),
    // Every module of at least 0.1 % (the report shows the first `top`; shares are summed over all).
    byModule: [...byModule]
      .sort((a, b) => b[1] - a[1])
      .filter(([, us], index) => index < top || us / busyUs >= 0.001)
      .map(([module, us]) => ({ module, selfMs: round(us / 1000), share: round(us / busyUs, 3) })),
    topFunctions: [...byFunction.values()]
      .sort((a, b) => b.selfUs - a.selfUs)
      .slice(0, top)
      .map((entry) => ({
        function: entry.function,
        where: entry.where,
        selfMs: round(entry.selfUs / 1000),
        share: round(entry.selfUs / busyUs, 3),
      })),
  };
}

/** The module a frame belongs to: `(garbage collector)`, `node:internal/streams`, `@temporalio/worker`, `workflows/operation/operation.ts`… */
export function moduleOf(frame: { functionName: string; url: string }): string {
  const { url } = frame;
  if (!url) return frame.functionName.startsWith('(') ? frame.functionName : '(native)';
  if (url.startsWith('node:'))
    return url
      .split('/')
      .slice(0, url.startsWith('node:internal/') ? 2 : 1)
      .join('/');
  const file = url.replace(/^file:\/\//, '');
  const inModules = /.*\/node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(file);
  if (inModules) return inModules[1]!;
  if (/workflow-bundle-[^/]*\.js$/.test(file)) return 'workflow bundle';
  if (file.startsWith(PROJECT_ROOT)) return path.relative(PROJECT_ROOT, file);
  return file;
}
