/**
 * Fails when modules import each other in a cycle. Part of `npm run lint`: a cycle means two modules
 * are one module in two files (neither can be read, tested or moved without the other), and in
 * workflow code it makes the order in which the bundle initialises modules matter.
 *
 * The graph is built with the TypeScript compiler's parser from the relative imports, re-exports and
 * dynamic imports of every `.ts` file under the folders given (default: every folder of the project's
 * TypeScript). Type-only imports count: a type cycle ties the modules together as much as a value one,
 * even though it leaves nothing at run time. Each cycle is printed as a path of files, every edge
 * marked `(type)` when it imports types only.
 *
 *   tsx scripts/import-cycles.ts [folder…]
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import ts from 'typescript';

const ROOT = path.resolve(__dirname, '..');
/** Every folder of the project's TypeScript (the layers of `eslint.config.js`). */
const DEFAULT_FOLDERS = [
  'activities',
  'bench',
  'cli',
  'client',
  'common',
  'platform',
  'sandbox-images',
  'scripted-model',
  'scripts',
  'test',
  'workers',
  'workflows',
];

export interface ImportEdge {
  to: string;
  typeOnly: boolean;
}

/** `root`-relative paths of the `.ts` files under `folder` (declaration files excluded). */
function sourceFiles(root: string, folder: string): string[] {
  const files: string[] = [];
  const walk = (dir: string): void => {
    for (const entry of fs.readdirSync(path.join(root, dir), { withFileTypes: true })) {
      const rel = path.posix.join(dir, entry.name);
      if (entry.isDirectory()) walk(rel);
      else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) files.push(rel);
    }
  };
  walk(folder);
  return files;
}

/** The file a relative specifier names (`./x` → `x.ts` or `x/index.ts`), or undefined when it is not a project `.ts` file. */
function resolveSpecifier(root: string, from: string, specifier: string): string | undefined {
  if (!specifier.startsWith('.')) return undefined;
  const base = path.posix.normalize(path.posix.join(path.posix.dirname(from), specifier));
  for (const candidate of [`${base}.ts`, path.posix.join(base, 'index.ts'), base]) {
    if (candidate.endsWith('.ts') && fs.existsSync(path.join(root, candidate))) return candidate;
  }
  return undefined;
}

/** Whether an import declaration brings in types only (`import type …`, or every named binding `type`). */
function importIsTypeOnly(node: ts.ImportDeclaration): boolean {
  const clause = node.importClause;
  if (!clause) return false; // `import './x'` runs the module
  if (clause.isTypeOnly) return true;
  if (clause.name) return false;
  const bindings = clause.namedBindings;
  return bindings !== undefined && ts.isNamedImports(bindings) && bindings.elements.length > 0
    ? bindings.elements.every((element) => element.isTypeOnly)
    : false;
}

/** The relative imports, re-exports and dynamic imports of one file. */
export function importsOf(file: string, text: string): Array<{ specifier: string; typeOnly: boolean }> {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.ES2022, false, ts.ScriptKind.TS);
  const found: Array<{ specifier: string; typeOnly: boolean }> = [];
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
      found.push({ specifier: node.moduleSpecifier.text, typeOnly: importIsTypeOnly(node) });
    } else if (ts.isExportDeclaration(node) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
      const named = node.exportClause && ts.isNamedExports(node.exportClause) ? node.exportClause.elements : undefined;
      const typeOnly = node.isTypeOnly || (named !== undefined && named.length > 0 && named.every((e) => e.isTypeOnly));
      found.push({ specifier: node.moduleSpecifier.text, typeOnly });
    } else if (
      ts.isImportEqualsDeclaration(node) &&
      ts.isExternalModuleReference(node.moduleReference) &&
      ts.isStringLiteral(node.moduleReference.expression)
    ) {
      found.push({ specifier: node.moduleReference.expression.text, typeOnly: node.isTypeOnly });
    } else if (
      ts.isCallExpression(node) &&
      node.expression.kind === ts.SyntaxKind.ImportKeyword &&
      node.arguments.length === 1 &&
      ts.isStringLiteral(node.arguments[0])
    ) {
      found.push({ specifier: node.arguments[0].text, typeOnly: false });
    } else if (
      ts.isImportTypeNode(node) &&
      ts.isLiteralTypeNode(node.argument) &&
      ts.isStringLiteral(node.argument.literal)
    ) {
      found.push({ specifier: node.argument.literal.text, typeOnly: true });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/** The import graph of the files under `folders` of `root`: edges to files outside them are left out. */
export function importGraph(folders: string[], root = ROOT): Map<string, ImportEdge[]> {
  const files = folders.flatMap((folder) => sourceFiles(root, folder));
  const inGraph = new Set(files);
  const graph = new Map<string, ImportEdge[]>();
  for (const file of files) {
    const edges = new Map<string, ImportEdge>();
    for (const { specifier, typeOnly } of importsOf(file, fs.readFileSync(path.join(root, file), 'utf8'))) {
      const to = resolveSpecifier(root, file, specifier);
      if (!to || !inGraph.has(to)) continue;
      // Two imports of one module: the edge is type-only only if both are.
      const known = edges.get(to);
      edges.set(to, { to, typeOnly: (known?.typeOnly ?? true) && typeOnly });
    }
    graph.set(file, [...edges.values()]);
  }
  return graph;
}

export interface ImportCycle {
  /** Every file of the tangle: each reaches every other through imports. */
  files: string[];
  /** One closed path through it (the shortest through its first file), edge by edge. */
  path: Array<{ from: string } & ImportEdge>;
}

/** The tangles of the graph (strongly connected components with a cycle, found with Tarjan's algorithm). */
export function findCycles(graph: Map<string, ImportEdge[]>): ImportCycle[] {
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const components: string[][] = [];
  const strongConnect = (node: string): void => {
    index.set(node, counter);
    low.set(node, counter);
    counter += 1;
    stack.push(node);
    onStack.add(node);
    for (const { to } of graph.get(node) ?? []) {
      if (!index.has(to)) {
        strongConnect(to);
        low.set(node, Math.min(low.get(node)!, low.get(to)!));
      } else if (onStack.has(to)) {
        low.set(node, Math.min(low.get(node)!, index.get(to)!));
      }
    }
    if (low.get(node) !== index.get(node)) return;
    const component: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      component.push(member);
    } while (member !== node);
    const selfLoop = (graph.get(node) ?? []).some((edge) => edge.to === node);
    if (component.length > 1 || selfLoop) components.push(component.sort());
  };
  for (const node of [...graph.keys()].sort()) if (!index.has(node)) strongConnect(node);
  return components.map((files) => ({ files, path: shortestCycle(graph, files) }));
}

/** The shortest cycle through the component's first file (breadth-first inside the component). */
function shortestCycle(graph: Map<string, ImportEdge[]>, component: string[]): Array<{ from: string } & ImportEdge> {
  const members = new Set(component);
  const start = component[0];
  const cameFrom = new Map<string, { from: string } & ImportEdge>();
  const queue = [start];
  while (queue.length > 0) {
    const node = queue.shift()!;
    for (const edge of graph.get(node) ?? []) {
      if (!members.has(edge.to)) continue;
      if (edge.to === start) {
        const path = [{ from: node, ...edge }];
        for (let at = node; at !== start; at = cameFrom.get(at)!.from) path.unshift(cameFrom.get(at)!);
        return path;
      }
      if (!cameFrom.has(edge.to)) {
        cameFrom.set(edge.to, { from: node, ...edge });
        queue.push(edge.to);
      }
    }
  }
  throw new Error(`no cycle through ${start}`);
}

function main(): void {
  const folders = process.argv.slice(2).length > 0 ? process.argv.slice(2) : DEFAULT_FOLDERS;
  const cycles = findCycles(importGraph(folders));
  if (cycles.length === 0) return;
  for (const { files, path: cycle } of cycles) {
    const steps = cycle.map((edge) => `${edge.from} → ${edge.typeOnly ? '(type) ' : ''}`).join('');
    console.error(`import cycle: ${steps}${cycle[0].from}`);
    if (files.length > cycle.length)
      console.error(`  tied up with it: ${files.filter((f) => !cycle.some((e) => e.from === f)).join(', ')}`);
  }
  console.error(
    `${cycles.length} import cycle${cycles.length === 1 ? '' : 's'} in ${folders.join(', ')} (scripts/import-cycles.ts): ` +
      'move what both sides need into a module of its own, or pass it in',
  );
  process.exitCode = 1;
}

if (require.main === module) main();
