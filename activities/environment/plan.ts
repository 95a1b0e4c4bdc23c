/**
 * What a toolchain plan works from and makes: the base image's facts, the hands host's side of
 * fetching toolchains, and the plan itself (`toolchains.ts`, `package-managers.ts`).
 */
import type { ResolvedToolchain, ToolName } from '../../common/environment';
import type { BuildStep } from './recipe';

/** What the base image already has (`probeBase` in `builder.ts`). */
export interface BaseFacts {
  /** Exact versions of the toolchains found on its PATH. */
  python?: string;
  node?: string;
  go?: string;
  java?: string;
  rust?: string;
  /** Its Debian suite (`VERSION_CODENAME` of /etc/os-release: `bookworm`), when it is Debian. */
  debian?: string;
  /** Its `PATH`. */
  path: string;
  /** Its environment (`NAME=value`). */
  env: string[];
}

/** The host's side of fetching toolchains. */
export interface ToolchainHost {
  /** The host's environment (its npm and Go configuration: registry, proxy, GOPROXY…). */
  env: NodeJS.ProcessEnv;
  /** Where fetched toolchains are kept between builds. */
  cacheDir: string;
  /** The Debian security archive the host's apt uses (`http://deb.debian.org/debian-security`), for Rust on bookworm. */
  debianSecurity?: string;
  /** Whether a URL's host is one of the registries the egress proxy lets builds and sandboxes reach. */
  isRegistry?: (url: string) => Promise<boolean>;
}

export interface ToolchainPlan {
  toolchains: Partial<Record<ToolName, ResolvedToolchain>>;
  steps: BuildStep[];
  /** What cannot be had here but does not stop the environment, by name (reported before the first step). */
  notes: string[];
}
