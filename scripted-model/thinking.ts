/** Signatures of the scripted model's thinking blocks: given in replies, required back unchanged in requests. */
import { createHash } from 'node:crypto';

/** The signature the scripted model gives a thinking text; the validator requires it back unchanged. */
export function thinkingSignature(thinking: string): string {
  return `sig_${createHash('sha256').update(`scripted-model:${thinking}`).digest('base64url').slice(0, 32)}`;
}
