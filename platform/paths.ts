/** Project-local folders: tools we install and data we persist. Both are git-ignored. */
import * as path from 'node:path';

export const PROJECT_ROOT = path.resolve(__dirname, '..');
export const TOOLS_DIR = process.env.AGENT_TOOLS_DIR ?? path.join(PROJECT_ROOT, '.tools');
export const DATA_DIR = process.env.AGENT_DATA_DIR ?? path.join(PROJECT_ROOT, '.data');
