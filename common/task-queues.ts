/**
 * Task queue names. Brain work (workflows, model calls) and hands work (sandbox tools) run on
 * separate queues so a hands worker can be pinned to the Docker host that owns its containers.
 * Deterministic: imported by workflow code; the values are passed in workflow input or read by workers.
 */
export const DEFAULT_BRAIN_QUEUE = 'agent-brain';
export const DEFAULT_HANDS_QUEUE = 'agent-hands';
