/** Project-local folders: tools we install and data we persist. Both are git-ignored. */
import * as path from 'node:path';
import { platformPaths } from './settings';

export const PROJECT_ROOT = path.resolve(__dirname, '..');
const folders = platformPaths(PROJECT_ROOT);
/** `AGENT_TOOLS_DIR`, or `.tools` in the checkout. */
export const TOOLS_DIR = folders.toolsDir;
/** `AGENT_DATA_DIR`, or `.data` in the checkout. */
export const DATA_DIR = folders.dataDir;
