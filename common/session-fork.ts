/**
 * A session made by a rewind (`common/rewind.ts`): its workspace was restored from a checkpoint of
 * another session's operation before the session started, and one of its lanes continues that
 * operation's conversation as it was at the checkpoint's turn. Given as the session input's `fork`;
 * the session applies it on its first run (`workflows/session/fork.ts`).
 *
 * Deterministic (imported by workflow code): zod only.
 */
import { z } from 'zod';
import { handsHostSchema } from './hands-route';
import { laneContinuationSchema, laneNameSchema } from './lanes';
import { TEXT_INPUT_MAX_BYTES } from './operation';
import { utf8Bytes } from './validation';

export const sessionForkSchema = z.strictObject({
  /** The operation, turn and checkpoint the session was rewound from. */
  from: z.strictObject({
    sessionId: z.string().min(1),
    operationId: z.string().min(1),
    turn: z.int().min(0),
    commit: z.string().regex(/^[0-9a-f]{40}$/, 'must be a commit id (40 hex digits)'),
  }),
  /** The lane that continues the conversation (or, without `context`, starts afresh). */
  lane: laneNameSchema,
  /** The conversation up to the turn: where the lane's first operation continues (absent: a fresh context). */
  context: laneContinuationSchema.optional(),
  /** The hands host holding the restored workspace: every operation of the session goes there. */
  handsHost: handsHostSchema,
  /** The lane's first prompt, started as the session starts, with its operation id. */
  prompt: z
    .strictObject({
      prompt: z
        .string()
        .trim()
        .min(1, 'must be a non-empty string')
        .refine((text) => utf8Bytes(text) <= TEXT_INPUT_MAX_BYTES, `must be at most ${TEXT_INPUT_MAX_BYTES} bytes`),
      operationId: z.string().min(1).max(128),
    })
    .optional(),
});
export type SessionFork = z.output<typeof sessionForkSchema>;
export type SessionForkInput = z.input<typeof sessionForkSchema>;

/** Where a lane of a rewound session comes from (`agent session show`). */
export interface RewoundFrom {
  sessionId: string;
  operationId: string;
  turn: number;
}
