/** Headless chromium (Debian's, via playwright-core) for the inspector tests. */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser } from 'playwright-core';

export const SHOTS = join(fileURLToPath(new URL('../..', import.meta.url)), 'test-output', 'ui-screenshots');

export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: process.env.WAYMARK_CHROMIUM ?? '/usr/bin/chromium',
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-dev-shm-usage',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
    ],
  });
}
