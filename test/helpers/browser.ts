/** Headless chromium (Debian's, via playwright-core) for the inspector tests. */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const SHOTS = join(fileURLToPath(new URL('../..', import.meta.url)), 'test-output', 'ui-screenshots');

export { launchChromium } from '../../bench/lib/chromium.js';
