/**
 * The benchmark from tests: its context on the test's Temporal (the dev server, or the cluster in the
 * cluster stage), and a suite of scenarios at the smallest profile.
 */
import Docker from 'dockerode';
import { connectBench, type BenchContext } from '../../bench/context';
import type { ScenarioName } from '../../bench/results';
import { runSuite, type SuiteOutcome } from '../../bench/suite';
import { testPlatform } from './env';

export function connectTestBench(): Promise<BenchContext> {
  const platform = testPlatform();
  return connectBench(
    {
      address: platform.temporalAddress,
      namespace: platform.namespace,
      workflowBundlePath: platform.workflowBundlePath,
      docker: new Docker(),
      image: platform.sandboxImage,
    },
    () => undefined,
  );
}

/** `scenarios` at the smoke profile; `temporalDescription` says which Temporal, for the report. */
export function runSmokeSuite(
  ctx: BenchContext,
  scenarios: readonly ScenarioName[],
  temporalDescription: string,
): Promise<SuiteOutcome> {
  return runSuite(ctx, {
    profile: 'smoke',
    scenarios,
    temporalDescription,
    dynamicConfig: {},
    temporalCli: testPlatform().temporalCli,
  });
}
