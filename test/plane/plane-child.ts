/** A plane in its own process: prints its URL, serves until killed. argv: databaseUrl */
import pino from 'pino';
import { loadConfig } from '../../plane/config.js';
import { startPlane } from '../../plane/server.js';

const plane = await startPlane(loadConfig({}, { databaseUrl: process.argv[2], host: '127.0.0.1', port: 0, dataDir: '.waymark-test' }), {
  logger: pino({ level: 'silent' }),
});
process.send?.({ type: 'ready', url: plane.url });
process.on('message', async (m: { type: string }) => {
  if (m.type === 'exit') {
    await plane.close();
    process.exit(0);
  }
});
