/**
 * The soak's results: the shape of `soak-latest.json` (rendered as `soak-latest.md`). Units:
 * milliseconds (`…Ms`, from the run's start unless named `…At`, epoch ms), tokens.
 */
import type { TokenUsage } from '../../common/model-types';
import type { SandboxLeaks } from '../../platform/sandbox-leaks';
import type { LeftContainer } from './collect';
import type { InjectedFault } from './faults';
import type { RestartRecord } from './fleet';
import type { FaultKind, PlannedFault, UnitKind } from './schedule';

export const SOAK_SCHEMA_VERSION = 1;

export interface Counts {
  submitted: number;
  /** The harness said it took the work (a workflow started, a prompt accepted). */
  accepted: number;
  completed: number;
  failed: number;
  aborted: number;
  /** Accepted, and no end could be read by the end of the drain: must be 0. */
  lost: number;
}

export interface Outcome {
  unit: string;
  kind: UnitKind;
  state: string;
  reason: string;
  /** How a unit of its kind ends when nothing goes wrong. */
  expected: string;
}

export interface LatencySample {
  count: number;
  p50Ms: number;
  p95Ms: number;
}

export interface LedgerUnit {
  unit: string;
  served: TokenUsage;
  recorded: TokenUsage;
  /** Requests of the unit whose answer a SIGKILL of the brain process making them may have taken with it. */
  cutByKill: number;
}

export interface SoakResults {
  schemaVersion: number;
  run: {
    seed: string;
    runId: string;
    minutes: number;
    concurrency: number;
    startedAt: string;
    endedAt: string;
    /** Setup before the load (cluster, engines, processes), load, fault phase end, drain. */
    setupMs: number;
    warmupMs: number;
    loadEndMs: number;
    faultPhaseEndMs: number;
    drainedAtMs: number;
    temporal: string;
    machine: { cpus: number; memoryGb: number; loadAverage: { start: number; end: number } };
    settings: Record<string, string>;
  };
  work: Counts & {
    byKind: Partial<Record<UnitKind, Counts>>;
    /** Operations (a session unit has four; a coding task's own operations are inside the task). */
    operations: Counts;
    /** Every unit that did not complete, with its reason. */
    notCompleted: Outcome[];
    /** Units that ended otherwise than their kind does when nothing goes wrong. */
    unexpected: Outcome[];
    /** Units the driver could not follow to their end, with why. */
    lostUnits: Array<{ unit: string; kind: UnitKind; error: string }>;
  };
  effects: {
    /** Lines in the workspaces' effect logs: `never` tool calls, `never` hooks, the coding task's commit commands. */
    neverEffects: number;
    hookEffects: number;
    commitEffects: number;
    /** Requests the egress units made to the stand-in server. */
    egressRequests: number;
    /** Any effect made more than once: must be none. */
    duplicates: Array<{ unit: string; log: string; line: string; count: number }>;
    /** A denied call or a turn past the budget whose command ran anyway: must be none. */
    forbiddenRan: Array<{ unit: string; call: string }>;
    workspacesRead: number;
    /** Workspaces of the run's units found on the engines: each must be read, else the counts above say nothing. */
    workspacesFound: number;
  };
  ledger: {
    requests: number;
    /** What the model server reported (its own count of usage sent to clients). */
    served: TokenUsage;
    /** What the harness recorded (every unit's operations, lanes and tasks). */
    recorded: TokenUsage;
    /** Usage of answers a brain SIGKILL took with it, which the harness could not record (accounted, by request). */
    lostWithKilledBrains: TokenUsage;
    cutByKillRequests: number;
    /**
     * Usage of answers whose completion the Temporal server refused (the attempt had timed out
     * while the history service was down; the brains' logs name each): paid, in no history.
     */
    refusedByServer: TokenUsage;
    /** Model-call completions the brains' logs say the server refused. */
    refusedModelCompletions: number;
    /**
     * Usage of answers to attempts the server gave up on, which were retried: the unit sent the
     * same request again, and its histories show at least as many retried model-call attempts.
     */
    paidForRetriedAttempts: TokenUsage;
    unitsExact: number;
    unitsExplainedByKills: LedgerUnit[];
    unitsExplainedByRefusals: LedgerUnit[];
    unitsExplainedByRetries: LedgerUnit[];
    /** Units whose recorded usage is not the server's minus what a kill cut off: must be none. */
    mismatches: LedgerUnit[];
    unattributedRequests: number;
    exact: boolean;
  };
  leaks: {
    /** Containers still there after their work ended (the harness removes them). */
    containersLeftAfterEnd: LeftContainer[];
    /** Anything of the run on either engine after every sandbox was removed as `agent sandbox rm` does. */
    afterRemoval: SandboxLeaks;
    /** Workflows of the run still running after the drain. */
    workflowsRunning: string[];
    /** Processes the harness started that outlived their worker (egress proxies of killed hosts). */
    orphanProcesses: string[];
    /** Dependency cache volumes (kept by design, one per repository and host), removed by the soak. */
    cacheVolumesRemoved: string[];
    total: number;
  };
  faults: {
    planned: PlannedFault[];
    byKind: Record<FaultKind, { planned: number; injected: number; noTarget: number }>;
    fired: InjectedFault[];
    /** Model faults the server answered with, by kind. */
    modelServed: Partial<Record<FaultKind, number>>;
  };
  latency: {
    /** Plain operations (`op` units), submission to result: started and ended before the first fault. */
    beforeFaults: LatencySample;
    /** Plain operations submitted during the fault phase. */
    duringFaults: LatencySample;
  };
  restarts: RestartRecord[];
  problems: string[];
  verdict: {
    noneLost: boolean;
    noDuplicateEffects: boolean;
    ledgerExact: boolean;
    noLeaks: boolean;
    everyFaultKind: boolean;
    noUnexpectedExit: boolean;
    passed: boolean;
  };
}
