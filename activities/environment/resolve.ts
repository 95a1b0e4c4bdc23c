/**
 * Where a workspace's environment comes from, first found wins: the input's `environment`, the
 * repository's devcontainer.json, detection from the repository's files, the default image. The
 * result is a recipe (what to build on which base) or none (the default image as it is), with the
 * toolchains it brings and the commands every fresh workspace runs.
 */
import type {
  EnvironmentInput,
  EnvironmentSource,
  EnvironmentSpec,
  PreparedEnvironment,
} from '../../common/environment';
import { DEFAULT_IMAGE_ALIAS } from '../../common/environment';
import { detectRequirements, type Requirements } from './detect';
import { readDevcontainer } from './devcontainer';
import { dockerfileRecipe } from './dockerfile';
import { EnvironmentError } from './errors';
import { type BuildStep, type Recipe } from './recipe';
import type { RepoFiles } from './repo-files';
import { planToolchains, requirementsOf, type BaseFacts, type ToolchainHost } from './toolchains';

export interface ResolvedEnvironment {
  source: EnvironmentSource;
  files: string[];
  /** Absent: the default image as it is (nothing to build). */
  recipe?: Recipe;
  toolchains: PreparedEnvironment['toolchains'];
  update: string[];
  unsupported: string[];
}

export interface ResolveContext {
  files?: RepoFiles;
  input?: EnvironmentInput;
  /** The hands worker's sandbox image (what `agent-sandbox` means). */
  defaultImage: string;
  /** What a base image already has (`builder.ts`). */
  probe(image: string): Promise<BaseFacts>;
  host: ToolchainHost;
}

export async function resolveEnvironment(ctx: ResolveContext): Promise<ResolvedEnvironment> {
  const { input, files } = ctx;
  if (input === 'default') return defaultEnvironment('input');
  if (input) return fromSpec(ctx, input);
  const devcontainer = files ? readDevcontainer(files) : undefined;
  if (devcontainer) {
    const spec: EnvironmentSpec = {
      ...(devcontainer.image ? { image: devcontainer.image } : {}),
      ...(devcontainer.dockerfile !== undefined
        ? { dockerfile: devcontainer.dockerfile, context: devcontainer.context ?? '' }
        : {}),
      buildArgs: devcontainer.buildArgs,
      env: devcontainer.env,
      update: devcontainer.update,
    };
    const resolved = await fromSpec(ctx, spec, 'devcontainer');
    return {
      ...resolved,
      files: [devcontainer.file, ...resolved.files],
      unsupported: [...devcontainer.unsupported, ...resolved.unsupported],
    };
  }
  const wanted = files ? detectRequirements(files) : undefined;
  if (!wanted || !wanted.files.length) return defaultEnvironment('default');
  const base = ctx.defaultImage;
  const chains = await planToolchains(wanted, await ctx.probe(base), ctx.host);
  return {
    source: 'detected',
    files: wanted.files,
    ...(chains.steps.length ? { recipe: { base, steps: [...chains.steps, harnessStep()] } } : {}),
    toolchains: chains.toolchains,
    update: [],
    unsupported: [],
  };
}

function defaultEnvironment(source: EnvironmentSource): ResolvedEnvironment {
  return { source, files: [], toolchains: {}, update: [], unsupported: [] };
}

async function fromSpec(
  ctx: ResolveContext,
  spec: EnvironmentSpec,
  source: EnvironmentSource = 'input',
): Promise<ResolvedEnvironment> {
  const files: string[] = [];
  const notes: string[] = [];
  let recipe: Recipe;
  if (spec.dockerfile !== undefined) {
    if (!ctx.files)
      throw new EnvironmentError(
        'invalid',
        `dockerfile: ${spec.dockerfile} needs a repository to read it from (give repo)`,
      );
    const text = ctx.files.read(spec.dockerfile);
    if (text === undefined)
      throw new EnvironmentError('invalid', `dockerfile: ${spec.dockerfile} does not exist in the repository`);
    const contextRelative = spec.context ?? spec.dockerfile.split('/').slice(0, -1).join('/');
    const built = dockerfileRecipe({
      file: spec.dockerfile,
      text,
      contextDir: contextRelative ? `${ctx.files.root}/${contextRelative}` : ctx.files.root,
      buildArgs: spec.buildArgs ?? {},
    });
    files.push(spec.dockerfile);
    notes.push(...built.notes);
    recipe = { base: aliasOf(built.recipe.base, ctx.defaultImage), steps: built.recipe.steps };
  } else {
    recipe = { base: spec.image ? aliasOf(spec.image, ctx.defaultImage) : ctx.defaultImage, steps: [] };
  }
  const wanted: Requirements = spec.toolchains ? requirementsOf(spec.toolchains) : { files: [] };
  const chains = await planToolchains(wanted, await ctx.probe(recipe.base), ctx.host);
  recipe.steps.push(...chains.steps);
  for (const [index, command] of (spec.setup ?? []).entries())
    recipe.steps.push({
      kind: 'run',
      title: `setup ${index + 1}: ${command.slice(0, 80)}`,
      argv: ['sh', '-c', command],
    });
  if (spec.env && Object.keys(spec.env).length)
    recipe.steps.push({
      kind: 'env',
      title: `env ${Object.keys(spec.env).join(' ')}`,
      set: containerEnvRefs(spec.env),
    });
  const nothingToBuild = recipe.base === ctx.defaultImage && recipe.steps.length === 0;
  return {
    source,
    files,
    ...(nothingToBuild ? {} : { recipe: { ...recipe, steps: [...recipe.steps, harnessStep()] } }),
    toolchains: chains.toolchains,
    update: spec.update ?? [],
    unsupported: notes,
  };
}

/** `agent-sandbox` (any tag) is the hands worker's default image. */
function aliasOf(image: string, defaultImage: string): string {
  return image === DEFAULT_IMAGE_ALIAS || image.startsWith(`${DEFAULT_IMAGE_ALIAS}:`) ? defaultImage : image;
}

/** devcontainer's `${containerEnv:NAME}` is the environment so far: `${NAME}` in an env step. */
function containerEnvRefs(env: Record<string, string>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(env).map(([name, value]) => [
      name,
      value.replace(/\$\{containerEnv:([A-Za-z_][A-Za-z0-9_]*)\}/g, '${$1}'),
    ]),
  );
}

/**
 * What every environment image needs for the harness, whatever its base: the agent's home, the
 * workspace and the dependency cache's mount point, owned by uid 1000.
 */
function harnessStep(): BuildStep {
  return {
    kind: 'run',
    title: 'the agent user, /workspace and the dependency cache folder',
    argv: [
      'sh',
      '-c',
      'set -e; mkdir -p /workspace /home/agent /var/cache/agent; chown 1000:1000 /workspace /home/agent /var/cache/agent',
    ],
  };
}
