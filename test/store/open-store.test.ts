import { afterAll, describe, expect, it } from 'vitest';
import { openStore } from '../../client/index.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { hasCode } from '../../shared/errors.js';
import { scratchDir } from '../helpers/tmp.js';

const tmp = scratchDir('waymark-open-store-');
afterAll(() => tmp.cleanup());

describe('openStore(spec)', () => {
  it('refuses an empty spec and an unknown scheme with INVALID_OPTIONS instead of opening a throwaway database', async () => {
    for (const spec of ['', '   ', 'mysql://127.0.0.1/db', 'nonsense://x']) {
      const e = await openStore(spec).catch((x) => x);
      expect(hasCode(e, 'INVALID_OPTIONS'), `${JSON.stringify(spec)}: ${e}`).toBe(true);
    }
  });

  it('opens a SQLite store from a path, sqlite:<path> and :memory:, and refuses a missing file with mustExist', async () => {
    for (const spec of [tmp.file('a.db'), `sqlite:${tmp.file('b.db')}`, ':memory:']) {
      const s = await openStore(spec);
      expect(s).toBeInstanceOf(SqliteCheckpointer);
      await s.close();
    }
    const e = await openStore(tmp.file('missing.db'), { mustExist: true }).catch((x) => x);
    expect(hasCode(e, 'STORE_NOT_FOUND')).toBe(true);
  });
});
