/**
 * A real browser for tests: Playwright (`playwright-core`) driving Debian's Chromium
 * (`/usr/bin/chromium`, or `AGENT_CHROMIUM`), headless, with a fresh profile and no network
 * beyond loopback (the Web UI's news feed is blocked). Screenshots go to `.data/test-artifacts/`.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { chromium, type Page } from 'playwright-core';
import { DATA_DIR } from '../../platform/paths';
import { testChromium } from '../../platform/settings';

export const CHROMIUM = testChromium();
export const ARTIFACTS_DIR = path.join(DATA_DIR, 'test-artifacts');

export interface TestBrowser {
  page: Page;
  /** Saves a full-page screenshot as `<artifacts>/<folder>/<name>.png`; returns its path. */
  screenshot(name: string): Promise<string>;
  close(): Promise<void>;
}

export async function launchBrowser(folder: string): Promise<TestBrowser> {
  if (!fs.existsSync(CHROMIUM))
    throw new Error(`no Chromium at ${CHROMIUM}: install it (apt-get install -y chromium) or set AGENT_CHROMIUM`);
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-chromium-'));
  const outDir = path.join(ARTIFACTS_DIR, folder);
  fs.mkdirSync(outDir, { recursive: true });
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
    viewport: { width: 1600, height: 1000 },
  });
  const page = context.pages()[0] ?? (await context.newPage());
  // Only loopback: the UI's news feed (and anything else outside) is not fetched.
  await page.route(/^https?:\/\/(?!127\.0\.0\.1|localhost)/, (route) => route.abort());
  return {
    page,
    async screenshot(name) {
      const file = path.join(outDir, `${name}.png`);
      await page.screenshot({ path: file, fullPage: true });
      return file;
    },
    async close() {
      await context.close();
      fs.rmSync(profile, { recursive: true, force: true });
    },
  };
}
