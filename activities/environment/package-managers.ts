/**
 * Package managers beyond npm and pip, at the version the repository asks for, from the registries:
 *  - pnpm and yarn from the npm registry (`pnpm`, `yarn` for yarn 1, `@yarnpkg/cli-dist` for yarn
 *    2+), fetched on the host with `npm pack` and unpacked under `/usr/local/lib/agent-pm` with their
 *    commands in `/usr/local/bin` (corepack is gone from current Node, and pnpm's own "switch to the
 *    packageManager version" needs the exact version present: it is);
 *  - uv, poetry, pdm and hatch from PyPI, each in a venv of its own under `/opt/agent-tools` (so its
 *    dependencies never meet the project's), the version picked on the host with its pip.
 * uv is given the image's Python (`UV_PYTHON`) and told never to download one: it would try, for a
 * `.python-version` naming a Python the image does not have, and nothing outside the registries is
 * reachable. Where each keeps its cache is set per workspace (`sandbox-spec.ts`).
 */
import type { NodeToolName, PythonToolName, ToolAsk } from './detect';
import { EnvironmentError } from './errors';
import { shellWord } from './recipe';
import { npmPack, pypiVersions, readPackageJson, repack } from './registry-clients';
import type { ToolchainHost, ToolchainPlan } from './plan';
import { newestMatching, pythonSpecifier } from './versions';

/** Where the Node package managers are unpacked (`<name>/<version>/`). */
const NODE_TOOLS_DIR = 'usr/local/lib/agent-pm';
/** Where each Python package manager has its venv. */
const PYTHON_TOOLS_DIR = '/opt/agent-tools';
/** The commands each Python package manager puts on PATH. */
const PYTHON_TOOL_COMMANDS: Record<PythonToolName, string[]> = {
  uv: ['uv', 'uvx'],
  poetry: ['poetry'],
  pdm: ['pdm'],
  hatch: ['hatch'],
};

/** The npm package of a Node package manager's version (`yarn@4` is `@yarnpkg/cli-dist@4`). */
function npmPackageOf(tool: ToolAsk<NodeToolName>): string {
  if (tool.name === 'pnpm') return 'pnpm';
  const major = tool.version ? Number(/^\D*(\d+)/.exec(tool.version)?.[1] ?? '1') : 1;
  return major >= 2 ? '@yarnpkg/cli-dist' : 'yarn';
}

export async function nodeToolsPlan(
  tools: Array<ToolAsk<NodeToolName>>,
  host: ToolchainHost,
  plan: ToolchainPlan,
): Promise<void> {
  for (const tool of tools) {
    const pkg = npmPackageOf(tool);
    const spec = `${pkg}@${tool.version ?? 'latest'}`;
    const packed = await npmPack(host, spec, tool.name);
    if (tool.kind === 'exact' && packed.version !== tool.version)
      throw new EnvironmentError(
        'invalid',
        `${tool.name}: ${tool.from} asks for ${tool.name}@${tool.version}, which the npm registry does not have (${pkg})`,
      );
    const manifest = await readPackageJson(packed.file);
    // pnpm ≥ 12 is a launcher whose native binary is an optional dependency per platform; without
    // it the launcher downloads one and insists on a registry signature (refused here): it is
    // placed where the launcher looks, `node_modules/` beside it.
    const native = Object.keys(manifest.optionalDependencies ?? {}).filter((name) => /[./-]linux-x64$/.test(name));
    const natives = await Promise.all(
      native.map(async (name) => ({
        name,
        packed: await npmPack(host, `${name}@${manifest.optionalDependencies![name]}`, tool.name),
      })),
    );
    const bins =
      typeof manifest.bin === 'string'
        ? { [tool.name]: manifest.bin }
        : (manifest.bin ?? { [tool.name]: `bin/${tool.name}` });
    const home = `${NODE_TOOLS_DIR}/${tool.name}/${packed.version}`;
    const targets = new Set(Object.values(bins).map((target) => target.replace(/^\.\//, '')));
    plan.toolchains[tool.name] = { version: packed.version, from: tool.from };
    plan.steps.push({
      kind: 'files',
      title: `${tool.name} ${packed.version} from the npm registry (${[pkg, ...native].join(', ')})`,
      digest: [packed.integrity, ...natives.map((n) => n.packed.integrity)].join(' '),
      pack: async (into, progress) => {
        await repack(
          packed.file,
          into,
          // Below the tarball's one top folder (`package/` by convention).
          (name) => (name.includes('/') ? `${home}/${name.slice(name.indexOf('/') + 1)}` : undefined),
          progress,
          (name) => targets.has(name.slice(home.length + 1)),
        );
        for (const { name, packed: nativePacked } of natives)
          await repack(
            nativePacked.file,
            into,
            (entry) =>
              entry.includes('/') ? `${home}/node_modules/${name}/${entry.slice(entry.indexOf('/') + 1)}` : undefined,
            progress,
            () => false,
          );
        for (const [command, target] of Object.entries(bins))
          into.entry({
            name: `usr/local/bin/${command}`,
            type: 'symlink',
            linkname: `../lib/agent-pm/${tool.name}/${packed.version}/${target.replace(/^\.\//, '')}`,
            mode: 0o777,
          });
      },
    });
  }
  if (tools.some((tool) => tool.name === 'pnpm')) pnpmSwitchOff(plan);
}

/**
 * pnpm is already the version the repository pins: its own switch to that version (on by default
 * from pnpm 10) is not needed, and would fetch platform binaries it then refuses unsigned.
 */
function pnpmSwitchOff(plan: ToolchainPlan): void {
  plan.steps.push({
    kind: 'env',
    title: 'pnpm does not switch versions itself (it is the one asked for)',
    set: { npm_config_manage_package_manager_versions: 'false', pnpm_config_manage_package_manager_versions: 'false' },
  });
}

export async function pythonToolsPlan(
  tools: Array<ToolAsk<PythonToolName>>,
  host: ToolchainHost,
  plan: ToolchainPlan,
): Promise<void> {
  for (const tool of tools) {
    const accepts = tool.version ? pythonSpecifier(tool.version) : () => true;
    if (!accepts)
      throw new EnvironmentError(
        'invalid',
        `${tool.name}: cannot read the version requirement "${tool.version}" (${tool.from})`,
      );
    // Final releases only (parseVersion reads no pre-release tags).
    const listed = await pypiVersions(host, tool.name);
    const version = newestMatching(listed, (v) => accepts(v));
    if (!version)
      throw new EnvironmentError(
        'invalid',
        `${tool.name}: no release on PyPI satisfies "${tool.version}" (${tool.from}); newest listed: ${newestMatching(listed, () => true) ?? 'none'}`,
      );
    const venv = `${PYTHON_TOOLS_DIR}/${tool.name}`;
    const links = PYTHON_TOOL_COMMANDS[tool.name].map((command) => `${venv}/bin/${command}`);
    plan.toolchains[tool.name] = { version, from: tool.from };
    plan.steps.push({
      kind: 'run',
      title: `${tool.name} ${version} from PyPI`,
      argv: [
        'sh',
        '-c',
        `set -e; python3 -m venv ${venv}; ${venv}/bin/pip install -q --no-cache-dir ${shellWord(`${tool.name}==${version}`)}; ` +
          `ln -sf ${links.join(' ')} /usr/local/bin/`,
      ],
    });
  }
  if (tools.some((tool) => tool.name === 'uv'))
    plan.steps.push({
      kind: 'env',
      title: "uv uses the image's Python and never downloads one",
      set: { UV_PYTHON: '/usr/bin/python3', UV_PYTHON_DOWNLOADS: 'never' },
    });
}
