/**
 * An environment image's recipe: a base image and the steps that turn it into the environment,
 * each step described by data (so the recipe has a content hash) plus, for file steps, the code
 * that packs the files. The builder (`builder.ts`) runs a recipe in a build container.
 */
import { createHash } from 'node:crypto';
import type * as tar from 'tar-stream';

/** Bump when the way a recipe becomes an image changes (the hash then changes with it). */
export const RECIPE_VERSION = '2';

export type BuildStep =
  | {
      kind: 'run';
      /** What the step is, for progress and errors (`install python3-pip python3-venv`). */
      title: string;
      argv: string[];
      /** Default root. */
      user?: string;
      workdir?: string;
      /** Variables of this step only, on top of the recipe's environment so far. */
      env?: Record<string, string>;
    }
  | {
      kind: 'files';
      title: string;
      /** Identifies the files' content (a registry checksum, a digest of the context): part of the hash. */
      digest: string;
      /** Adds the files (paths relative to `/`) to an archive that is extracted at `/`. */
      pack(into: tar.Pack, progress: () => void): Promise<void>;
    }
  | {
      kind: 'env';
      title: string;
      /** Variables set from here on (values may use `${NAME}` of the environment so far). */
      set: Record<string, string>;
    }
  | { kind: 'workdir'; title: string; path: string }
  | { kind: 'user'; title: string; user: string };

export interface Recipe {
  /** The image reference the build starts from. */
  base: string;
  steps: BuildStep[];
}

/** The recipe's content hash, over the base image's id and every step's data. */
export function recipeHash(recipe: Recipe, baseImageId: string): string {
  const hash = createHash('sha256');
  hash.update(`recipe ${RECIPE_VERSION}\0base ${baseImageId}\0`);
  for (const step of recipe.steps) {
    const { pack: _pack, ...data } = step as BuildStep & { pack?: unknown };
    hash.update(JSON.stringify(data)).update('\0');
  }
  return hash.digest('hex');
}

/** Shell-quotes a word for `sh -c`. */
export function shellWord(word: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

/** `apt-get install` of Debian packages, quietly, cleaning up after itself. */
export function aptInstall(packages: string[]): BuildStep {
  return {
    kind: 'run',
    title: `apt-get install ${packages.join(' ')}`,
    argv: [
      'sh',
      '-c',
      'set -e; export DEBIAN_FRONTEND=noninteractive; apt-get update -qq; ' +
        `apt-get install -y -qq --no-install-recommends ${packages.map(shellWord).join(' ')}; ` +
        'rm -rf /var/lib/apt/lists/*',
    ],
  };
}
