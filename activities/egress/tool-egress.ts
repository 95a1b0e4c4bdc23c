/**
 * The egress side of one tool call (used by `hands/run-tool.ts`): give the proxy the call's policy
 * before the command runs; after it, the requests it made (counted in the outcome), a note in the
 * result for every refusal so the model reads why, and a retryable failure when the proxy stopped
 * during the call.
 */
import type { EgressPolicy, EgressSummary } from '../../common/egress';
import { containerNameOf } from '../../common/sandbox-names';
import { proxyRestartedFailure, type EgressCall, type EgressHost } from './egress-host';

export function beginToolEgress(
  egress: EgressHost | undefined,
  sessionId: string,
  namePrefix: string,
  policy: EgressPolicy | undefined,
): Promise<EgressCall | undefined> {
  return egress ? egress.begin(containerNameOf(sessionId, namePrefix), policy) : Promise.resolve(undefined);
}

/**
 * The call's egress summary (undefined when it made no request) and the notes for its result, once
 * the proxy has reported the connections the command made (a tunnel's record is sent as it closes,
 * which can come after the command's exit reaches the worker).
 */
export async function finishToolEgress(
  call: EgressCall | undefined,
): Promise<{ summary?: EgressSummary; notes: string[] }> {
  await call?.settle();
  const summary = call?.finish();
  if (summary?.proxyRestarted) throw proxyRestartedFailure();
  if (!summary || summary.requests === 0) return { notes: [] };
  return { summary, notes: (summary.refusals ?? []).map((reason) => `[egress refused: ${reason}]`) };
}
