/**
 * How a session's sandbox is named on the Docker host: one rule for session ids and one spelling of
 * every container, volume and label name. Used by the hands, the CLI, the workflows and the tests.
 *
 * Deterministic: pure functions (imported by workflow code).
 */

/** Session ids: 1-63 letters, digits, '.', '_' or '-', starting with a letter or digit (Docker names allow this). */
export const SESSION_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$/;
export const SESSION_ID_RULE = "1-63 letters, digits, '.', '_' or '-', starting with a letter or digit";
const SESSION_ID_MAX = 63;

/**
 * What every container and volume name starts with. A hands worker may use another
 * (`AGENT_SANDBOX_PREFIX`), e.g. when two hands hosts share one Docker engine in a test.
 */
export const DEFAULT_NAME_PREFIX = 'agent-';
export const NAME_PREFIX_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,31}$/;
export const NAME_PREFIX_RULE = "1-32 letters, digits, '.', '_' or '-', starting with a letter or digit";

export const CONTAINER_PREFIX = `${DEFAULT_NAME_PREFIX}sbx-`;
export const VOLUME_PREFIX = `${DEFAULT_NAME_PREFIX}ws-`;
export const JOURNAL_VOLUME_PREFIX = `${DEFAULT_NAME_PREFIX}jr-`;

/** The session's sandbox container. */
export const containerNameOf = (sessionId: string, prefix = DEFAULT_NAME_PREFIX): string => `${prefix}sbx-${sessionId}`;
/** The session's workspace volume (mounted at /workspace; outlives every container). */
export const volumeNameOf = (sessionId: string, prefix = DEFAULT_NAME_PREFIX): string => `${prefix}ws-${sessionId}`;

/**
 * The session's journal volume: the records that decide a retried tool call's replay, written only by
 * the harness (mounted outside /workspace; the agent's commands cannot change or delete them).
 */
export const journalVolumeNameOf = (sessionId: string, prefix = DEFAULT_NAME_PREFIX): string =>
  `${prefix}jr-${sessionId}`;

/**
 * A repository's dependency cache volume on a hands host (pip, npm, Go and Maven caches), shared by
 * every workspace of that repository there: `key` is a digest of the repository's identity.
 */
export const cacheVolumeNameOf = (key: string, prefix = DEFAULT_NAME_PREFIX): string => `${prefix}cache-${key}`;

/** Docker labels on every container and volume the harness makes. */
export const SANDBOX_LABELS = {
  /** `1` on everything the harness made: what `agent sandbox ls|gc` and the leak check look for. */
  harness: 'agent.harness',
  /** The session id (the label keeps its first name so older sandboxes stay listed). */
  sandbox: 'agent.sandbox',
  operation: 'agent.operation',
  /** What a volume holds: `workspace` or `journal` (volumes made before the label have none: a workspace). */
  role: 'agent.role',
  /** On a workspace volume with a disk quota: the host path of its file-system image. */
  quotaImage: 'agent.quota-image',
  /**
   * Set (to a reason) on a sandbox someone means to keep, e.g. a test that leaves one behind on
   * purpose: the leak check of `.ci/run` lists it instead of failing.
   */
  keep: 'agent.keep',
  /** On a workspace volume: the environment image its containers run (absent: the hands worker's default image). */
  environment: 'agent.environment.image',
  /** On a workspace volume: its repository's dependency cache volume; on a cache volume: the repository it caches. */
  cache: 'agent.cache',
  /** On a workspace volume: where its environment came from (`input`, `devcontainer`, `detected`, `default`). */
  environmentSource: 'agent.environment.source',
  /** On a workspace volume: its environment's content hash. */
  environmentHash: 'agent.environment.hash',
} as const;

export function isSessionId(value: string): boolean {
  return SESSION_ID_PATTERN.test(value);
}

/** A session id derived from any workflow id (which may hold characters Docker names do not allow). */
export function sessionIdFor(workflowId: string): string {
  const cleaned = workflowId.replace(/[^A-Za-z0-9_.-]/g, '-').replace(/^[^A-Za-z0-9]+/, '');
  return (cleaned || 'operation').slice(0, SESSION_ID_MAX);
}
