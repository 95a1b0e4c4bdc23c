/**
 * The Debian suites an environment can stand on, and what their packages give. Bookworm is the
 * default image's; trixie is its twin, made on the hands host when a repository needs what only
 * trixie has (`debian-twin.ts`). What each suite gives is a fact of the suite, stable for its life
 * (a Debian release keeps its Python and JDK lines); exact versions are read from the built image.
 * Checked against deb.debian.org on 2026-12-03.
 *
 * | suite | python3 | JDKs (openjdk-N-jdk-headless) | Rust (rustc-web, cargo-web) |
 * |---|---|---|---|
 * | bookworm (12) | 3.11 | 17 | 1.96 from bookworm-security (bookworm itself: 1.85) |
 * | trixie (13) | 3.13 | 21, 25 | 1.96 |
 *
 * Not here: 3.12 (no suite has it), 3.14 (forky and sid only: moving targets, not a base).
 */
import { parseVersion, type Version } from './versions';

export type SuiteName = 'bookworm' | 'trixie';

export interface DebianSuite {
  name: SuiteName;
  /** Its python3's `major.minor`. */
  python: string;
  /** Its JDK majors, oldest first. */
  jdks: string[];
  /** rustc-web's version, and the suite that has it (a security suite needs its apt source added). */
  rust: { version: string; suite: string };
}

export const DEBIAN_SUITES: readonly DebianSuite[] = [
  { name: 'bookworm', python: '3.11', jdks: ['17'], rust: { version: '1.96', suite: 'bookworm-security' } },
  { name: 'trixie', python: '3.13', jdks: ['21', '25'], rust: { version: '1.96', suite: 'trixie' } },
];

export function suiteNamed(name: string | undefined): DebianSuite | undefined {
  return DEBIAN_SUITES.find((suite) => suite.name === name);
}

/** The suite's JDK for an asked Java release: the oldest at least as new (none asked: the oldest). */
export function jdkFor(suite: DebianSuite, release: string | undefined): string | undefined {
  if (release === undefined) return suite.jdks[0];
  const asked = Number(release);
  if (!Number.isInteger(asked)) return undefined;
  return suite.jdks.find((jdk) => Number(jdk) >= asked);
}

/**
 * Whether a Python version predicate can hold for the suite's Python: the exact version when it is
 * known (a built image's), else any patch release of the suite's line (checked again once built).
 */
export function pythonCanHold(suite: DebianSuite, accepts: (v: Version) => boolean, exact?: string): boolean {
  const known = exact ? parseVersion(exact) : undefined;
  if (known) return accepts(known);
  const [major, minor] = suite.python.split('.').map(Number) as [number, number];
  return accepts([major, minor, 0]) || accepts([major, minor, 99]);
}
