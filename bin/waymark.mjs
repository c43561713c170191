#!/usr/bin/env node
// `waymark plane …` loads the plane; every other command is the client CLI
// (so a store-only user never loads hono or drizzle). The plane's packages are
// optional peers: checked first, a missing one is MISSING_PEER with the command
// that installs them, not Node's ERR_MODULE_NOT_FOUND.
const argv = process.argv.slice(2);
const run =
  argv[0] === 'plane'
    ? import('../dist/support/peer.js')
        .then((p) => p.requirePeers('waymark plane', p.PLANE_PEERS))
        .then(() => import('../dist/plane/cli.js'))
        .then((m) => m.planeMain(argv.slice(1)))
    : import('../dist/client/cli/main.js').then((m) => m.main(argv));
run.then(
  (code) => process.exit(code),
  async (err) => {
    // a WaymarkError's stable code leads, so a script can match it without parsing the sentence; nothing in the
    // message (an id, a name) may act on the terminal
    // (an install without dist/ fails both imports: the original error is still the one printed)
    const terminalSafe = await import('../dist/support/terminal.js').then(
      (m) => m.terminalSafe,
      // the same set as support/terminal.ts (line breaks and tabs kept, as terminalSafe keeps them)
      () => (s) =>
        s.replace(
          /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g,
          (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
        ),
    );
    console.error(
      terminalSafe(
        `waymark: ${typeof err?.code === 'string' && /^[A-Z][A-Z_]+$/.test(err.code) ? `${err.code}: ` : ''}${err?.message ?? err}`,
      ),
    );
    process.exit(1);
  },
);
