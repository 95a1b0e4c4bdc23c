/**
 * Where a workspace's environment comes from, first found wins: the input's `environment`, the
 * repository's devcontainer.json, detection from the repository's files, the default image. The
 * result is a recipe (what to build on which base) or none (the default image as it is), with the
 * toolchains it brings and the commands every fresh workspace runs.
 *
 * The base of a detected environment (or an input's that names no image) is the default image
 * unless its Debian cannot give what is asked (Python 3.13, a JDK above 17): then its twin on the
 * Debian suite that can (`debian-twin.ts`), made when first needed. A repository the default image
 * serves never changes base, so its environment's hash stays what it was.
 */
import type {
  EnvironmentInput,
  EnvironmentSource,
  EnvironmentSpec,
  PreparedEnvironment,
} from '../../common/environment';
import { DEFAULT_IMAGE_ALIAS } from '../../common/environment';
import { DEBIAN_SUITES, jdkFor, pythonCanHold, suiteNamed, type DebianSuite, type SuiteName } from './debian-suites';
import { detectRequirements, type Requirements } from './detect';
import { readDevcontainer } from './devcontainer';
import { dockerfileRecipe } from './dockerfile';
import { EnvironmentError } from './errors';
import { type BuildStep, type Recipe } from './recipe';
import type { RepoFiles } from './repo-files';
import type { BaseFacts, ToolchainHost } from './plan';
import { planToolchains, requirementsOf } from './toolchains';
import { pythonSpecifier } from './versions';

export interface ResolvedEnvironment {
  source: EnvironmentSource;
  files: string[];
  /** Absent: the default image as it is (nothing to build). */
  recipe?: Recipe;
  toolchains: PreparedEnvironment['toolchains'];
  update: string[];
  unsupported: string[];
  /** What each file asked for (detection). */
  asks?: PreparedEnvironment['asks'];
  /** What cannot be had, by name. */
  notes: string[];
}

export interface ResolveContext {
  files?: RepoFiles;
  input?: EnvironmentInput;
  /** The hands worker's sandbox image (what `agent-sandbox` means). */
  defaultImage: string;
  /** What a base image already has (`builder.ts`). */
  probe(image: string): Promise<BaseFacts>;
  host: ToolchainHost;
  /** The default image's twin on another Debian suite, made when first needed; absent: no twin can be made. */
  twin?(suite: SuiteName): Promise<string>;
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
  const base = await chooseBase(wanted, ctx);
  const chains = await planToolchains(wanted, base.facts, ctx.host);
  const onDefault = base.image === ctx.defaultImage;
  return {
    source: 'detected',
    files: wanted.files,
    ...(chains.steps.length || !onDefault
      ? { recipe: { base: base.image, steps: [...chains.steps, harnessStep()] } }
      : {}),
    toolchains: chains.toolchains,
    update: [],
    unsupported: [],
    ...(wanted.asks ? { asks: wanted.asks } : {}),
    notes: chains.notes,
  };
}

function defaultEnvironment(source: EnvironmentSource): ResolvedEnvironment {
  return { source, files: [], toolchains: {}, update: [], unsupported: [], notes: [] };
}

/**
 * The default image, unless its Debian cannot give what `wanted` asks for and a twin on another
 * suite can: then that twin (made now if it does not exist). Neither: an error naming what was asked
 * and everything tried. A default image that is not Debian, or no twin maker, keeps the default
 * image (the plans then check it as before).
 */
async function chooseBase(wanted: Requirements, ctx: ResolveContext): Promise<{ image: string; facts: BaseFacts }> {
  const facts = await ctx.probe(ctx.defaultImage);
  const own = suiteNamed(facts.debian);
  if (!own || !ctx.twin || !unmetOn(wanted, own, facts.python).length) return { image: ctx.defaultImage, facts };
  const tried: Array<{ suite: DebianSuite; python?: string; image: string }> = [
    { suite: own, ...(facts.python ? { python: facts.python } : {}), image: 'the default image' },
  ];
  for (const suite of DEBIAN_SUITES) {
    if (suite.name === own.name) continue;
    if (!unmetOn(wanted, suite).length) {
      const image = await ctx.twin(suite.name);
      const twinFacts = await ctx.probe(image);
      if (!unmetOn(wanted, suite, twinFacts.python).length) return { image, facts: twinFacts };
      tried.push({ suite, ...(twinFacts.python ? { python: twinFacts.python } : {}), image: `its twin ${image}` });
    } else tried.push({ suite, image: `its twin agent-sandbox-${suite.name}` });
  }
  throw new EnvironmentError('invalid', cannotHave(unmetOn(wanted, own, facts.python)[0]!, wanted, tried));
}

type Unmet = 'python' | 'java';

/** What `suite` cannot give of `wanted` (its Python known exactly when `python` is given). */
function unmetOn(wanted: Requirements, suite: DebianSuite, python?: string): Unmet[] {
  const unmet: Unmet[] = [];
  const accepts = wanted.python?.specifier ? pythonSpecifier(wanted.python.specifier) : undefined;
  // An unreadable specifier is the Python plan's error, whatever the base.
  if (accepts && !pythonCanHold(suite, accepts, python)) unmet.push('python');
  if (wanted.java && !jdkFor(suite, wanted.java.release)) unmet.push('java');
  return unmet;
}

function cannotHave(
  what: Unmet,
  wanted: Requirements,
  tried: Array<{ suite: DebianSuite; python?: string; image: string }>,
): string {
  const where = (t: (typeof tried)[number], version: string) => `Debian ${t.suite.name}'s ${version} (${t.image})`;
  if (what === 'python')
    return (
      `python: ${wanted.python!.from} asks for "${wanted.python!.specifier}", but no Python that can be had here satisfies it: ` +
      `tried ${tried.map((t) => where(t, t.python ?? t.suite.python)).join(' and ')}; ` +
      'give an environment image with that Python (environment.image or a devcontainer.json)'
    );
  return (
    `java: ${wanted.java!.from} asks for Java ${wanted.java!.release}, but no JDK that can be had here is that new: ` +
    `tried ${tried.map((t) => where(t, t.suite.jdks.map((jdk) => `openjdk-${jdk}`).join(', '))).join(' and ')}; ` +
    'give an environment image with that JDK (environment.image or a devcontainer.json)'
  );
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
  // No image named: the default image, or its twin when only that has the toolchains asked for.
  const base =
    spec.image === undefined && spec.dockerfile === undefined
      ? await chooseBase(wanted, ctx)
      : { image: recipe.base, facts: await ctx.probe(recipe.base) };
  recipe.base = base.image;
  const chains = await planToolchains(wanted, base.facts, ctx.host);
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
    notes: chains.notes,
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
