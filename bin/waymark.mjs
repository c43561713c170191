#!/usr/bin/env node
import { main } from '../dist/client/cli/main.js';

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err) => {
    console.error(`waymark: ${err?.message ?? err}`);
    process.exit(1);
  },
);
