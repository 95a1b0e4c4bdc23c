/**
 * The documentation holds together: the README stays a front door (at most 12 KB), every page in
 * docs/ is linked from it, and every relative link in the README, docs/, CONTRIBUTING.md and
 * CHANGELOG.md reaches an existing file and, when it names one, an existing heading (GitHub's anchor
 * rules). Plain file reads: no server, no Docker.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';

const ROOT = path.join(__dirname, '..', '..');
const DOCS = path.join(ROOT, 'docs');
const README_MAX_BYTES = 12 * 1024;

/**
 * Pages the README and docs/README.md link to that are written by other work: docs/configuration.md
 * (generated from the settings schemas by the settings work) and docs/environments.md (written by the
 * environment work). Remove a name here as soon as its page exists; the last test fails until then.
 */
const WRITTEN_ELSEWHERE = new Set<string>([]);

interface Link {
  /** The file the link is in, relative to the project root. */
  from: string;
  target: string;
  line: number;
}

const relative = (file: string): string => path.relative(ROOT, file).split(path.sep).join('/');

function docsPages(): string[] {
  return fs
    .readdirSync(DOCS)
    .filter((name) => name.endsWith('.md'))
    .map((name) => path.join(DOCS, name));
}

function checkedFiles(): string[] {
  return [
    path.join(ROOT, 'README.md'),
    path.join(ROOT, 'CONTRIBUTING.md'),
    path.join(ROOT, 'CHANGELOG.md'),
    ...docsPages(),
  ];
}

/** The lines of a markdown file outside fenced code blocks, with their 1-based numbers. */
function proseLines(text: string): { text: string; line: number }[] {
  const lines: { text: string; line: number }[] = [];
  let fence: string | undefined;
  text.split('\n').forEach((line, index) => {
    const marker = /^\s*(`{3,}|~{3,})/.exec(line)?.[1];
    if (marker && (fence === undefined || (marker[0] === fence[0] && marker.length >= fence.length))) {
      fence = fence === undefined ? marker : undefined;
      return;
    }
    if (fence === undefined) lines.push({ text: line, line: index + 1 });
  });
  return lines;
}

/** Inline links and images (`[text](target)`), outside code spans and fenced blocks. */
function linksOf(file: string): Link[] {
  const links: Link[] = [];
  for (const { text, line } of proseLines(fs.readFileSync(file, 'utf8'))) {
    const prose = text.replace(/`+[^`]*`+/g, '');
    for (const match of prose.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
      links.push({ from: relative(file), target: match[1]!, line });
    }
  }
  return links;
}

const isExternal = (target: string): boolean => /^[a-z][a-z0-9+.-]*:/i.test(target);

/** GitHub's anchor for a heading: lowercase, punctuation other than '-' and '_' dropped, spaces to '-'. */
function githubAnchor(heading: string): string {
  const text = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1') // a link in a heading counts by its text
    .replace(/<[^>]+>/g, '')
    .trim()
    .toLowerCase();
  return text.replace(/[^\p{L}\p{N}\p{M}\s_-]/gu, '').replace(/\s/g, '-');
}

/** Every anchor a page's headings give (a repeated heading gets `-1`, `-2`, … as on GitHub). */
function anchorsOf(file: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const { text } of proseLines(fs.readFileSync(file, 'utf8'))) {
    const heading = /^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$/.exec(text)?.[1];
    if (heading === undefined) continue;
    const base = githubAnchor(heading);
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    anchors.add(count === 0 ? base : `${base}-${count}`);
  }
  return anchors;
}

/** The file and anchor a relative link points to. */
function resolve(link: Link): { file: string; anchor?: string } {
  const [rawPath, anchor] = link.target.split('#', 2) as [string, string | undefined];
  const file =
    rawPath === '' ? path.join(ROOT, link.from) : path.join(ROOT, path.dirname(link.from), decodeURI(rawPath));
  return { file, anchor: anchor === undefined || anchor === '' ? undefined : decodeURIComponent(anchor) };
}

const where = (link: Link): string => `${link.from}:${link.line} → ${link.target}`;

describe('documentation', () => {
  const links = checkedFiles()
    .filter((file) => fs.existsSync(file))
    .flatMap(linksOf)
    .filter((link) => !isExternal(link.target));

  it(`keeps README.md at most ${README_MAX_BYTES} bytes`, () => {
    const bytes = fs.statSync(path.join(ROOT, 'README.md')).size;
    if (bytes > README_MAX_BYTES)
      throw new Error(`README.md is ${bytes} bytes, over ${README_MAX_BYTES}: move the detail into a page in docs/`);
  });

  it('finds the pages and links it checks', () => {
    expect(docsPages().length).toBeGreaterThanOrEqual(10);
    expect(links.length).toBeGreaterThan(50);
  });

  it('links every page in docs/ from README.md', () => {
    const linked = new Set(
      links.filter((link) => link.from === 'README.md').map((link) => relative(resolve(link).file)),
    );
    const unlinked = docsPages()
      .map(relative)
      .filter((page) => !linked.has(page));
    expect(unlinked).toEqual([]);
  });

  it('resolves every relative link to an existing file', () => {
    const broken = links
      .filter((link) => {
        const file = relative(resolve(link).file);
        return !fs.existsSync(path.join(ROOT, file)) && !WRITTEN_ELSEWHERE.has(file);
      })
      .map(where);
    expect(broken).toEqual([]);
  });

  it('resolves every #anchor to a heading of its page', () => {
    const anchors = new Map<string, Set<string>>();
    const broken = links
      .filter((link) => {
        const { file, anchor } = resolve(link);
        if (anchor === undefined || !fs.existsSync(file) || !file.endsWith('.md')) return false;
        if (!anchors.has(file)) anchors.set(file, anchorsOf(file));
        return !anchors.get(file)!.has(anchor);
      })
      .map(where);
    expect(broken).toEqual([]);
  });

  it('allows a missing page only while it is written elsewhere', () => {
    const written = [...WRITTEN_ELSEWHERE].filter((page) => fs.existsSync(path.join(ROOT, page)));
    if (written.length)
      throw new Error(`${written.join(', ')} now exist: remove them from WRITTEN_ELSEWHERE in test/docs/docs.test.ts`);
  });
});

describe('githubAnchor', () => {
  it.each([
    ['Security model', 'security-model'],
    ["The sandbox's way out: the egress proxy", 'the-sandboxs-way-out-the-egress-proxy'],
    ['`agent doctor`', 'agent-doctor'],
    ['Operations: stuck detection, the Web UI, `agent doctor`', 'operations-stuck-detection-the-web-ui-agent-doctor'],
    ['With the `temporal` CLI', 'with-the-temporal-cli'],
    ['snake_case and kebab-case', 'snake_case-and-kebab-case'],
  ])('%s → %s', (heading, anchor) => {
    expect(githubAnchor(heading)).toBe(anchor);
  });
});
