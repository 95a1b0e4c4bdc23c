/**
 * What every bundle of the workflow code includes besides the workflows: the interceptors of the
 * workflow side of tracing (`workflows/shared/trace-interceptors.ts`). Workers, tests, the benchmark
 * and the recorded histories all bundle with it, so the code they run and replay is the same.
 * Resolved when a bundle is made, not when this module loads (a worker given a prebuilt bundle never
 * resolves workflow sources).
 */
export function workflowInterceptorModules(): string[] {
  return [require.resolve('../workflows/shared/trace-interceptors')];
}

/**
 * Modules the reusable V8 context evaluates once, before any workflow, and shares among all of them
 * (the SDK's `preloadModules`; it deep-freezes them). Every other module is evaluated again for each
 * workflow the worker starts or replays, and each cached workflow keeps its own copy: for zod, which
 * every workflow input's schema is built with, that was a large part of a worker's memory and of the
 * CPU of starting a workflow. Only modules with no per-workflow state belong here.
 */
export function workflowPreloadModules(): string[] {
  return [require.resolve('../common/preloaded')];
}
