/**
 * The Chromium the Web UI test drives (`AGENT_CHROMIUM`, default Debian's `/usr/bin/chromium`):
 * installed from Debian's `chromium` package when missing and this process is root on Debian (as the
 * Docker engine is), otherwise an error naming what to install. Browser downloads are not used.
 */
import * as fs from 'node:fs';
import { canInstallDebianPackages, installDebianPackages } from './debian-packages';
import { testChromium } from './settings';
import { PlatformError } from './temporal-cli';

const DEBIAN_CHROMIUM = '/usr/bin/chromium';

export function ensureChromium(log: (line: string) => void = () => undefined): string {
  const chromium = testChromium();
  if (fs.existsSync(chromium)) return chromium;
  if (chromium !== DEBIAN_CHROMIUM)
    throw new PlatformError(`AGENT_CHROMIUM=${chromium} does not exist: point it at a Chromium binary`);
  if (!canInstallDebianPackages())
    throw new PlatformError(
      'the Web UI test drives a real Chromium: install it (Debian/Ubuntu: `sudo apt-get install chromium`) ' +
        'or set AGENT_CHROMIUM to a Chromium binary; as root on Debian it is installed for you',
    );
  installDebianPackages(['chromium'], log);
  if (!fs.existsSync(chromium)) throw new PlatformError(`the chromium package did not install ${chromium}`);
  return chromium;
}
