/** Headless Chromium (Debian's, via playwright-core), as the browser tests and the page bench launch it. */
import { chromium, type Browser } from 'playwright-core';

/** Launch it; `extraArgs` adds flags for one caller's needs. */
export function launchChromium(extraArgs: readonly string[] = []): Promise<Browser> {
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
      ...extraArgs,
    ],
  });
}
