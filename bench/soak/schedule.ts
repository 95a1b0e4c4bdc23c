/**
 * The soak's plan, all of it drawn from one seed (a pure module, tested): when each fault comes,
 * what it is and which target it picks, how long a killed process stays down, and the sequence of
 * work each load slot runs. The same seed and length give the same plan; what the plan meets (which
 * operation is in a tool call when a container dies) depends on the machine, the plan does not.
 */

/** Every fault the injector knows, in the order the report lists them. */
export const FAULT_KINDS = [
  'brain-kill',
  'hands-kill',
  'sandbox-kill',
  'history-kill',
  'model-429',
  'model-529',
  'model-500',
  'model-stall',
  'disk-full',
  'egress-proxy-kill',
] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

/** What each kind does, for the report. */
export const FAULT_DESCRIPTIONS: Record<FaultKind, string> = {
  'brain-kill': 'SIGKILL of a brain worker process (`agent worker brain`); restarted after its down time',
  'hands-kill': 'SIGKILL of a hands host process (`agent worker hands`); restarted after its down time',
  'sandbox-kill': 'SIGKILL of a running sandbox container (`docker kill`)',
  'history-kill': "SIGKILL of the cluster's history service; started again after its down time",
  'model-429': 'the next model request is answered 429 rate_limit_error with retry-after: 1',
  'model-529': 'the next model request is answered 529 overloaded_error',
  'model-500': 'the next model request is answered 500 api_error',
  'model-stall': "the next model answer stalls after message_start, longer than the brains' idle timeout",
  'disk-full': "a running operation's workspace is filled to its quota (a file written as the agent until ENOSPC)",
  'egress-proxy-kill': "SIGKILL of a hands host's egress proxy process (the worker restarts it)",
};

/** The kinds of work the load runs. */
export const UNIT_KINDS = ['op', 'approval', 'hook', 'abort', 'fail', 'egress', 'session', 'task'] as const;
export type UnitKind = (typeof UNIT_KINDS)[number];

/** The kinds a mixed slot draws from, with their weights. */
const MIXED_WEIGHTS: ReadonlyArray<[UnitKind, number]> = [
  ['op', 5],
  ['approval', 2],
  ['hook', 2],
  ['abort', 1],
  ['fail', 1],
  ['egress', 2],
];

export interface PlannedFault {
  /** Milliseconds from the start of the run. */
  atMs: number;
  kind: FaultKind;
  /** A number in [0, 1) that chooses the target among those available when the fault fires. */
  pick: number;
  /** How long a killed process or service stays down before it is started again. */
  downMs: number;
}

/** What one load slot runs: its role and, for a mixed slot, the kinds of its units in order. */
export interface SlotPlan {
  slot: number;
  /** `task`: coding tasks back to back; `session`: sessions; `mixed`: single operations of mixed kinds. */
  role: 'task' | 'session' | 'mixed';
  /** The kinds of this slot's units, in order (long enough for any run of the planned length). */
  kinds: UnitKind[];
  /** One number in [0, 1) per unit, for its own choices (approve or deny, when to abort). */
  choices: number[];
}

export interface SoakPlan {
  seed: string;
  durationMs: number;
  /** Load without faults first: the "before faults" latencies. */
  warmupMs: number;
  /** The mean gap between two faults. */
  meanGapMs: number;
  faults: PlannedFault[];
  slots: SlotPlan[];
}

export interface PlanOptions {
  seed: string;
  durationMs: number;
  /** At most this many units of work at once (at least 3: a task slot, a session slot, a mixed one). */
  concurrency: number;
}

/** A 32-bit hash of the seed (FNV-1a), the generator's state. */
function seedState(seed: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < seed.length; i++) hash = Math.imul(hash ^ seed.charCodeAt(i), 0x01000193) >>> 0;
  return hash;
}

/** A small seeded generator (mulberry32): numbers in [0, 1), the same sequence for the same seed. */
export function seededRandom(seed: string): () => number {
  let state = seedState(seed);
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A permutation of `items` drawn from `random`. */
function shuffled<T>(items: readonly T[], random: () => number): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

/** The warm-up: 15 % of the run, at least 30 s and at most 5 min. */
export function warmupOf(durationMs: number): number {
  return Math.min(300_000, Math.max(30_000, Math.round(durationMs * 0.15)));
}

/**
 * The faults: kinds in shuffled rounds (each round has every kind once, so a run with at least as
 * many faults as kinds has every kind and no kind runs far ahead of another), at jittered gaps
 * (0.5–1.5 × the mean) over the fault phase. The mean gap is 20 s, shorter when the phase is short,
 * so that it holds about one and a half rounds at least.
 */
function planFaults(seed: string, durationMs: number, warmupMs: number): { meanGapMs: number; faults: PlannedFault[] } {
  const random = seededRandom(`${seed}/faults`);
  const phaseMs = durationMs - warmupMs;
  const meanGapMs = Math.max(2_000, Math.min(20_000, Math.floor(phaseMs / (FAULT_KINDS.length * 1.5))));
  const faults: PlannedFault[] = [];
  let bag: FaultKind[] = [];
  for (let at = warmupMs + meanGapMs * (0.5 + random()); at < durationMs; at += meanGapMs * (0.5 + random())) {
    if (bag.length === 0) bag = shuffled(FAULT_KINDS, random);
    const kind = bag.shift()!;
    const downMs =
      kind === 'history-kill' ? Math.round(1_000 + random() * 4_000) : Math.round(1_000 + random() * 9_000);
    faults.push({ atMs: Math.round(at), kind, pick: random(), downMs });
  }
  return { meanGapMs, faults };
}

/** Slot 0 runs coding tasks, slot 1 sessions, the others single operations of weighted kinds. */
function planSlots(seed: string, concurrency: number, durationMs: number): SlotPlan[] {
  // Enough units for the run: no unit takes less than about two seconds.
  const length = Math.max(50, Math.ceil(durationMs / 2_000));
  const total = MIXED_WEIGHTS.reduce((sum, [, weight]) => sum + weight, 0);
  return Array.from({ length: concurrency }, (_, slot) => {
    const random = seededRandom(`${seed}/slot-${slot}`);
    const role: SlotPlan['role'] = slot === 0 ? 'task' : slot === 1 ? 'session' : 'mixed';
    const kinds = Array.from({ length }, (): UnitKind => {
      if (role !== 'mixed') return role;
      let draw = random() * total;
      for (const [kind, weight] of MIXED_WEIGHTS) if ((draw -= weight) < 0) return kind;
      return 'op';
    });
    return { slot, role, kinds, choices: Array.from({ length }, () => random()) };
  });
}

export function planSoak(options: PlanOptions): SoakPlan {
  if (!(options.durationMs > 0)) throw new Error('the soak needs a positive duration');
  if (!Number.isInteger(options.concurrency) || options.concurrency < 3)
    throw new Error('the soak needs a concurrency of at least 3 (a task slot, a session slot and a mixed one)');
  const warmupMs = warmupOf(options.durationMs);
  if (warmupMs >= options.durationMs) throw new Error('the soak needs more than its warm-up (30 s at least)');
  const { meanGapMs, faults } = planFaults(options.seed, options.durationMs, warmupMs);
  return {
    seed: options.seed,
    durationMs: options.durationMs,
    warmupMs,
    meanGapMs,
    faults,
    slots: planSlots(options.seed, options.concurrency, options.durationMs),
  };
}

/** The fault schedule as lines, for the console and the report: `+95.3 s  hands-kill  pick 0.41  down 3.2 s`. */
export function describeFaults(plan: SoakPlan): string[] {
  return plan.faults.map((fault) => {
    const down = ['brain-kill', 'hands-kill', 'history-kill'].includes(fault.kind)
      ? `  down ${(fault.downMs / 1000).toFixed(1)} s`
      : '';
    return `+${(fault.atMs / 1000).toFixed(1).padStart(7)} s  ${fault.kind.padEnd(17)}  pick ${fault.pick.toFixed(2)}${down}`;
  });
}
