/**
 * A repository's Dockerfile as a recipe the harness builds itself. `docker build` cannot be used:
 * its RUN steps get the engine's network (none here, or the host's elsewhere), never the sandbox's
 * egress proxy, so `apt-get install` would fail or bypass the policy. The harness runs each RUN step
 * in its build container instead, where the registries are reachable through the proxy and nothing
 * else is.
 *
 * Supported: one `FROM` (`agent-sandbox` is the harness's default image; `ARG`s before it), `ARG`,
 * `ENV`, `RUN` (shell and exec form), `COPY` / `ADD` of files from the build context (with
 * `--chown` by number, `root` or `agent`; `.dockerignore` honoured), `WORKDIR`, `USER`, `SHELL`,
 * `LABEL`. Ignored, and reported: `CMD`, `ENTRYPOINT`, `EXPOSE`, `VOLUME`, `STOPSIGNAL`,
 * `HEALTHCHECK`, `MAINTAINER` (the harness starts its own process). Refused with an error naming
 * the line: several `FROM`s (multi-stage builds), `--platform`, `COPY --from`, `RUN --mount`
 * and other RUN flags, heredocs, `ADD` of URLs or archives, `ONBUILD`.
 */
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type * as tar from 'tar-stream';
import { EnvironmentError } from './errors';
import type { BuildStep, Recipe } from './recipe';

const IGNORED = new Set(['CMD', 'ENTRYPOINT', 'EXPOSE', 'VOLUME', 'STOPSIGNAL', 'HEALTHCHECK', 'MAINTAINER']);

export interface DockerfileInput {
  /** Repository-relative path, for messages. */
  file: string;
  text: string;
  /** The build context on the host. */
  contextDir: string;
  buildArgs: Record<string, string>;
}

export interface DockerfileRecipe {
  recipe: Recipe;
  /** What was ignored, in words (`Dockerfile line 9: CMD is ignored …`). */
  notes: string[];
}

interface Instruction {
  line: number;
  keyword: string;
  rest: string;
}

export function dockerfileRecipe(input: DockerfileInput): DockerfileRecipe {
  const instructions = parseInstructions(input);
  const notes: string[] = [];
  const args = new Map<string, string>();
  const env = new Map<string, string>();
  const steps: BuildStep[] = [];
  let base: string | undefined;
  let shell = ['/bin/sh', '-c'];
  let user = 'root';
  let workdir = '/';
  const fail = (ins: Instruction, why: string): never => {
    throw new EnvironmentError('invalid', `${input.file} line ${ins.line}: ${ins.keyword} ${why}`);
  };
  const vars = () => new Map([...args, ...env]);

  for (const ins of instructions) {
    const { keyword } = ins;
    if (keyword !== 'FROM' && keyword !== 'ARG' && base === undefined) fail(ins, 'comes before FROM');
    switch (keyword) {
      case 'ARG': {
        const match = /^([A-Za-z_][A-Za-z0-9_]*)(?:=(.*))?$/.exec(ins.rest);
        if (!match) fail(ins, `"${ins.rest}" is not NAME or NAME=default`);
        const [, name, value] = match!;
        const given = input.buildArgs[name!] ?? (value === undefined ? undefined : substitute(unquote(value), vars()));
        if (given !== undefined) args.set(name!, given);
        break;
      }
      case 'FROM': {
        if (base !== undefined) fail(ins, 'a second time: multi-stage builds are not supported');
        const words = ins.rest.split(/\s+/);
        if (words.some((w) => w.startsWith('--')))
          fail(ins, `${words.find((w) => w.startsWith('--'))} is not supported`);
        if (words.length === 3 && words[1]!.toUpperCase() === 'AS') words.length = 1;
        if (words.length !== 1) fail(ins, `"${ins.rest}" is not one image`);
        base = substitute(words[0]!, args);
        break;
      }
      case 'ENV': {
        // Only ARGs are known here; other names (the base image's `PATH`, earlier ENVs) stay for the builder.
        const set = parseEnv(ins.rest, new Map(args), () => fail(ins, `"${ins.rest}" is not NAME=value`));
        for (const [name, value] of Object.entries(set)) env.set(name, value);
        steps.push({ kind: 'env', title: `ENV ${Object.keys(set).join(' ')}`, set });
        break;
      }
      case 'RUN': {
        if (/^--/.test(ins.rest)) fail(ins, `${ins.rest.split(/\s/)[0]} is not supported`);
        if (/<<-?\s*['"]?[A-Za-z_]/.test(ins.rest.split('\n')[0]!)) fail(ins, 'with a heredoc is not supported');
        const exec = execForm(ins.rest);
        const argv = exec ?? [...shell, ins.rest];
        steps.push({
          kind: 'run',
          title: `RUN ${ins.rest.length > 80 ? `${ins.rest.slice(0, 77)}...` : ins.rest}`,
          argv,
          user,
          workdir,
          env: Object.fromEntries(args),
        });
        break;
      }
      case 'COPY':
      case 'ADD':
        steps.push(copyStep(input, ins, workdir, vars(), fail));
        break;
      case 'WORKDIR': {
        const dir = substitute(unquote(ins.rest), vars());
        workdir = path.posix.resolve(workdir, dir);
        steps.push({ kind: 'workdir', title: `WORKDIR ${workdir}`, path: workdir });
        break;
      }
      case 'USER':
        user = substitute(ins.rest.trim(), vars());
        steps.push({ kind: 'user', title: `USER ${user}`, user });
        break;
      case 'SHELL': {
        const exec = execForm(ins.rest);
        if (!exec?.length) fail(ins, 'must be a JSON array such as ["/bin/bash", "-c"]');
        shell = exec!;
        break;
      }
      case 'LABEL':
        break;
      default:
        if (IGNORED.has(keyword))
          notes.push(`${input.file} line ${ins.line}: ${keyword} is ignored (the harness starts its own process)`);
        else fail(ins, 'is not supported');
    }
  }
  if (base === undefined) throw new EnvironmentError('invalid', `${input.file}: has no FROM`);
  return { recipe: { base, steps }, notes };
}

function parseInstructions(input: DockerfileInput): Instruction[] {
  const lines = input.text.split(/\r?\n/);
  const out: Instruction[] = [];
  let directivesDone = false;
  for (let i = 0; i < lines.length; i++) {
    const raw = lines[i]!;
    const trimmed = raw.trim();
    if (!directivesDone && /^#\s*escape\s*=/i.test(trimmed) && !/=\s*\\\s*$/.test(trimmed))
      throw new EnvironmentError(
        'invalid',
        `${input.file} line ${i + 1}: an escape character other than \\ is not supported`,
      );
    if (trimmed === '' || trimmed.startsWith('#')) continue;
    directivesDone = true;
    const start = i;
    let text = raw.replace(/^\s+/, '');
    while (/\\\s*$/.test(text) && i + 1 < lines.length) {
      text = text.replace(/\\\s*$/, '');
      i++;
      // Comment lines inside a continued instruction are dropped.
      while (i + 1 < lines.length && lines[i]!.trim().startsWith('#')) i++;
      text += `\n${lines[i]!}`;
    }
    const match = /^([A-Za-z]+)(?:\s+([\s\S]*))?$/.exec(text.trim());
    if (!match)
      throw new EnvironmentError(
        'invalid',
        `${input.file} line ${start + 1}: cannot read "${text.trim().slice(0, 60)}"`,
      );
    out.push({ line: start + 1, keyword: match[1]!.toUpperCase(), rest: (match[2] ?? '').trim() });
  }
  return out;
}

function execForm(rest: string): string[] | undefined {
  if (!rest.startsWith('[')) return undefined;
  try {
    const parsed = JSON.parse(rest) as unknown;
    return Array.isArray(parsed) && parsed.every((w) => typeof w === 'string') ? (parsed as string[]) : undefined;
  } catch {
    return undefined;
  }
}

function parseEnv(rest: string, vars: Map<string, string>, bad: () => never): Record<string, string> {
  const set: Record<string, string> = {};
  const legacy = /^([A-Za-z_][A-Za-z0-9_]*)\s+([^=]*)$/.exec(rest);
  if (legacy && !rest.includes('=')) {
    set[legacy[1]!] = substitute(legacy[2]!.trim(), vars, true);
    return set;
  }
  const pairs = rest.match(/[A-Za-z_][A-Za-z0-9_]*=("(?:[^"\\]|\\.)*"|'[^']*'|(?:[^\s"'\\]|\\.)*)/g);
  if (!pairs || pairs.join('').replace(/\s/g, '').length !== rest.replace(/\s/g, '').length) bad();
  for (const pair of pairs!) {
    const at = pair.indexOf('=');
    set[pair.slice(0, at)] = substitute(unquote(pair.slice(at + 1)), vars, true);
  }
  return set;
}

function unquote(value: string): string {
  if (value.length >= 2 && value.startsWith('"') && value.endsWith('"'))
    return value.slice(1, -1).replace(/\\(.)/g, '$1');
  if (value.length >= 2 && value.startsWith("'") && value.endsWith("'")) return value.slice(1, -1);
  return value.replace(/\\(.)/g, '$1');
}

/** `$NAME`, `${NAME}`, `${NAME:-default}`, `${NAME:+alternative}`; unknown names become empty, as in Docker. */
export function substitute(text: string, vars: Map<string, string>, keepUnknown = false): string {
  return text.replace(
    /\$(?:\{([A-Za-z_][A-Za-z0-9_]*)(?::([-+])([^}]*))?\}|([A-Za-z_][A-Za-z0-9_]*))/g,
    (whole, braced, op, word, bare) => {
      const name = (braced ?? bare) as string;
      // ENV values may name the base image's variables (`$PATH`): the builder knows those.
      if (keepUnknown && !vars.has(name)) return op ? whole : `\${${name}}`;
      const value = vars.get(name);
      if (op === '-') return value ? value : (word as string);
      if (op === '+') return value ? (word as string) : '';
      return value ?? '';
    },
  );
}

function copyStep(
  input: DockerfileInput,
  ins: Instruction,
  workdir: string,
  vars: Map<string, string>,
  fail: (ins: Instruction, why: string) => never,
): BuildStep {
  if (execForm(ins.rest)) fail(ins, 'in JSON form is not supported');
  const words = ins.rest.split(/\s+/).map((w) => substitute(w, vars));
  let owner = { uid: 0, gid: 0 };
  while (words[0]?.startsWith('--')) {
    const flag = words.shift()!;
    const chown = /^--chown=(.+)$/.exec(flag);
    if (!chown) fail(ins, `${flag} is not supported`);
    owner = ownerOf(chown![1]!) ?? fail(ins, `${flag}: only numeric ids, root and agent are supported`);
  }
  if (words.length < 2) fail(ins, 'needs a source and a destination');
  const dest = words.pop()!;
  const sources = words;
  for (const source of sources) {
    if (/^[a-z]+:\/\//i.test(source)) fail(ins, `of a URL (${source}) is not supported: download it in a RUN step`);
    if (ins.keyword === 'ADD' && /\.(tar|tgz|tar\.(gz|bz2|xz))$/.test(source))
      fail(ins, `of an archive (${source}) is not supported: copy it and unpack it in a RUN step`);
  }
  const ignore = dockerignore(input.contextDir);
  const files = sources.flatMap((source) => contextFiles(input, ins, source, ignore, fail));
  const toDir = sources.length > 1 || dest.endsWith('/') || files.some((f) => f.fromDir) || files.length > 1;
  const target = path.posix.resolve(workdir, dest);
  const entries = files.map((f) => ({
    host: f.host,
    name: (toDir ? path.posix.join(target, f.relative) : target).replace(/^\/+/, ''),
  }));
  const digest = createHash('sha256');
  for (const entry of entries) {
    const stat = fs.statSync(entry.host);
    digest
      .update(`${entry.name}\0${stat.mode & 0o777}\0`)
      .update(fs.readFileSync(entry.host))
      .update('\0');
  }
  digest.update(`${owner.uid}:${owner.gid}`);
  return {
    kind: 'files',
    title: `${ins.keyword} ${ins.rest.length > 70 ? `${ins.rest.slice(0, 67)}...` : ins.rest}`,
    digest: digest.digest('hex'),
    pack: async (into: tar.Pack, progress: () => void) => {
      const dirs = new Set<string>();
      for (const entry of entries) {
        const parts = entry.name.split('/');
        for (let i = 1; i < parts.length; i++) {
          const dir = parts.slice(0, i).join('/');
          if (dirs.has(dir)) continue;
          dirs.add(dir);
          // Existing folders (usr, etc) keep their owner: only new ones below the target take the --chown.
          if (`/${dir}`.length > target.length || `/${dir}` === target)
            into.entry({ name: dir, type: 'directory', mode: 0o755, uid: owner.uid, gid: owner.gid });
        }
        const stat = fs.statSync(entry.host);
        const body = fs.readFileSync(entry.host);
        await new Promise<void>((resolve, reject) =>
          into.entry(
            { name: entry.name, mode: stat.mode & 0o777, size: body.length, uid: owner.uid, gid: owner.gid },
            body,
            (err) => (err ? reject(err) : resolve()),
          ),
        );
        progress();
      }
    },
  };
}

function ownerOf(spec: string): { uid: number; gid: number } | undefined {
  const ids = spec
    .split(':')
    .map((part) => (part === 'root' ? 0 : part === 'agent' ? 1000 : /^\d+$/.test(part) ? Number(part) : NaN));
  if (ids.some((id) => Number.isNaN(id))) return undefined;
  return { uid: ids[0]!, gid: ids[1] ?? ids[0]! };
}

interface ContextFile {
  host: string;
  /** Path below the source (a directory source) or the file's own name. */
  relative: string;
  fromDir: boolean;
}

function contextFiles(
  input: DockerfileInput,
  ins: Instruction,
  source: string,
  ignored: (relative: string) => boolean,
  fail: (ins: Instruction, why: string) => never,
): ContextFile[] {
  const root = fs.realpathSync(input.contextDir);
  const normalized = path.posix.normalize(source.replace(/^\/+/, ''));
  if (normalized.startsWith('..')) fail(ins, `source ${source} is outside the build context`);
  const matches = normalized.includes('*') || normalized.includes('?') ? globContext(root, normalized) : [normalized];
  const out: ContextFile[] = [];
  for (const match of matches) {
    const full = path.join(root, match);
    if (!fs.existsSync(full)) fail(ins, `source ${source} does not exist in the build context`);
    const real = fs.realpathSync(full);
    if (real !== root && !real.startsWith(root + path.sep)) fail(ins, `source ${source} leaves the build context`);
    if (fs.statSync(real).isDirectory()) {
      for (const rel of walkFiles(real, '')) {
        const fromRoot = path.posix.join(match === '.' ? '' : match, rel);
        if (!ignored(fromRoot)) out.push({ host: path.join(real, rel), relative: rel, fromDir: true });
      }
    } else if (!ignored(match)) {
      out.push({ host: real, relative: path.posix.basename(match), fromDir: false });
    }
  }
  return out;
}

function walkFiles(dir: string, rel: string): string[] {
  const out: string[] = [];
  for (const entry of fs.readdirSync(path.join(dir, rel), { withFileTypes: true })) {
    const child = rel ? `${rel}/${entry.name}` : entry.name;
    if (entry.isDirectory()) out.push(...walkFiles(dir, child));
    else if (entry.isFile()) out.push(child);
  }
  return out;
}

function globContext(root: string, pattern: string): string[] {
  const regex = globRegex(pattern);
  return walkFiles(root, '').filter((rel) => regex.test(rel));
}

/** A glob as Docker reads it (`*`, `?`, `**`), anchored. */
function globRegex(pattern: string): RegExp {
  let out = '';
  for (let i = 0; i < pattern.length; i++) {
    const ch = pattern[i]!;
    if (ch === '*' && pattern[i + 1] === '*') {
      out += '.*';
      i++;
    } else if (ch === '*') out += '[^/]*';
    else if (ch === '?') out += '[^/]';
    else out += ch.replace(/[.+^${}()|[\]\\]/g, '\\$&');
  }
  return new RegExp(`^${out}(/.*)?$`);
}

/** `.dockerignore` of the context: patterns (with `!` exceptions), the last match wins. */
function dockerignore(contextDir: string): (relative: string) => boolean {
  let text = '';
  try {
    text = fs.readFileSync(path.join(contextDir, '.dockerignore'), 'utf8');
  } catch {
    return () => false;
  }
  const rules = text
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line && !line.startsWith('#'))
    .map((line) => {
      const negate = line.startsWith('!');
      const pattern = path.posix.normalize((negate ? line.slice(1) : line).replace(/^\/+/, ''));
      return { negate, regex: globRegex(pattern) };
    });
  return (relative) => {
    let ignored = false;
    for (const rule of rules) if (rule.regex.test(relative)) ignored = !rule.negate;
    return ignored;
  };
}
