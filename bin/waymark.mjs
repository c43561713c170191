#!/usr/bin/env node
// `waymark plane …` loads the plane; every other command is the client CLI
// (so a store-only user never loads hono or drizzle).
const argv = process.argv.slice(2);
const run = argv[0] === 'plane' ? import('../dist/plane/cli.js').then((m) => m.planeMain(argv.slice(1))) : import('../dist/client/cli/main.js').then((m) => m.main(argv));
run.then(
  (code) => process.exit(code),
  async (err) => {
    // a WaymarkError's stable code leads, so a script can match it without parsing the sentence; nothing in the
    // message (an id, a name) may act on the terminal
    const { terminalSafe } = await import('../dist/shared/terminal.js');
    console.error(terminalSafe(`waymark: ${typeof err?.code === 'string' && /^[A-Z][A-Z_]+$/.test(err.code) ? `${err.code}: ` : ''}${err?.message ?? err}`));
    process.exit(1);
  },
);
