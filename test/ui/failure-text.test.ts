/**
 * A failed run's reason is anyone's text (a tool's error message): the run
 * list and the run page show it as text, its control and reordering
 * characters as escapes, as the CLI prints it.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { localUiApp } from '../../client/ui/serve.js';
import { step } from '../helpers/rows.js';
import { scratchDir } from '../helpers/tmp.js';

const tmp = scratchDir('waymark-failure-text-');
let store: SqliteCheckpointer;
const MESSAGE = 'card <b>declined</b> \u202egnp.exe';

beforeAll(async () => {
  store = new SqliteCheckpointer({ path: tmp.file('runs.db'), writerId: 'laptop' });
  const first = await store.put(step('failed-1', 0));
  await store.put({
    ...step('failed-1', 1),
    prevId: first.id,
    nodeId: 'run_end',
    step: 'run_end',
    status: 'failed',
    nodeOutput: { error: { code: 'TOOL_FAILED', message: MESSAGE } },
  });
});
afterAll(async () => {
  await store.close();
  tmp.cleanup();
});

it('a failed run’s reason shows its markup as text and its reordering character as an escape, in the list and on its page', async () => {
  const app = localUiApp(store);
  for (const path of ['/', '/runs/failed-1']) {
    const html = await (await app.fetch(new Request(`http://127.0.0.1${path}`))).text();
    expect(html, path).toContain('TOOL_FAILED');
    expect(html, path).toContain('card &lt;b&gt;declined&lt;/b&gt; \\u202egnp.exe');
    expect(html, path).not.toContain('\u202e');
  }
});
