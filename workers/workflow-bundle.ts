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
