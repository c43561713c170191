/**
 * The live pages' script (/ui/live.js), loaded only by a page opened with
 * `?live=1`: every 5 s it fetches the same page again and swaps in the regions
 * the server marked `data-live="name"` whose content changed, in place. No
 * reload, so a half-typed comment, the focus, the scroll and a selection stay.
 *
 * What it never touches: a form (forms stand outside the regions, and a region
 * that holds one is skipped), a region that holds the focus or the reader's
 * text selection (left for a later round). When the page's forms themselves
 * changed (a pause opened or was answered, the run ended), it says so and asks
 * for a reload instead. Each round that changed something is said in the
 * page's polite status (`data-live-status`); a replaced region gets the
 * `waymark:updated` event, on which /ui/local-time.js rewrites its times.
 *
 * A timed fetch, not a feed: the change feed's long poll (GET /v1/changes)
 * takes an API key, not the pages' session, and a local store has none. A
 * hidden tab does not fetch; it catches up when shown. Without JavaScript a
 * live page works as any other and says that it does not update.
 */
const LIVE_EVERY_MS = 5000;

export const LIVE_JS = `(() => {
  const status = document.querySelector('[data-live-status]');
  if (!status || !window.fetch || !window.DOMParser) return;
  const EVERY = ${LIVE_EVERY_MS};
  // a region's content as the server wrote it: times as their datetime (local-time.js rewrites their text), no open state
  const plain = (el) => {
    const c = el.cloneNode(true);
    for (const t of c.querySelectorAll('time[datetime]')) {
      t.textContent = t.getAttribute('datetime');
      t.removeAttribute('title');
    }
    for (const d of c.querySelectorAll('details')) d.removeAttribute('open');
    return c.innerHTML;
  };
  // what the page's forms post: where, how, and their hidden fields (a pause's id, the token)
  const forms = (doc) =>
    [...doc.querySelectorAll('form')]
      .map((f) =>
        [f.getAttribute('action'), f.getAttribute('method') || 'get']
          .concat([...f.querySelectorAll('input[type=hidden]')].map((i) => i.name + '=' + i.getAttribute('value')))
          .join(' '),
      )
      .join('\\n');
  const selected = (el) => {
    const s = window.getSelection();
    return !!s && !s.isCollapsed && s.rangeCount > 0 && s.getRangeAt(0).intersectsNode(el);
  };
  const inUse = (el) => el.contains(document.activeElement) || !!el.querySelector('form') || selected(el);
  const say = (text) => {
    status.textContent = text;
  };
  const clock = () => new Date().toLocaleTimeString();
  const loaded = forms(document);
  let formsSaid = loaded;
  let timer = null;
  let running = false;
  let stopped = false;

  const apply = (doc) => {
    const fresh = new Map([...doc.querySelectorAll('[data-live]')].map((el) => [el.getAttribute('data-live'), el]));
    const changed = [];
    for (const el of document.querySelectorAll('[data-live]')) {
      const name = el.getAttribute('data-live');
      const next = fresh.get(name);
      if (!next || plain(el) === plain(next) || inUse(el) || next.querySelector('form')) continue;
      const open = [...el.querySelectorAll('details')].map((d) => d.open);
      const now = document.importNode(next, true);
      const details = now.querySelectorAll('details');
      if (details.length === open.length) details.forEach((d, i) => (d.open = open[i]));
      el.replaceWith(now);
      now.dispatchEvent(new CustomEvent('waymark:updated', { bubbles: true }));
      changed.push(name);
    }
    const f = forms(doc);
    if (f !== loaded && f !== formsSaid) {
      formsSaid = f;
      say(
        'Updated ' + clock() + (changed.length ? ' (' + changed.join(', ') + ')' : '') +
          '. The forms of this page changed (a pause opened or was answered, or the run ended): reload the page to use them.',
      );
    } else if (changed.length) say('Updated ' + clock() + ': ' + changed.join(', ') + '.');
  };

  const round = async () => {
    timer = null;
    if (stopped || running || document.hidden) return;
    running = true;
    try {
      const res = await fetch(location.href, { credentials: 'same-origin', cache: 'no-store', headers: { accept: 'text/html' } });
      if (res.redirected) {
        stopped = true;
        say('Live updates stopped: the session ended. Reload the page to sign in again.');
      } else if (res.status >= 400 && res.status < 500) {
        stopped = true;
        say('Live updates stopped: the page answered ' + res.status + '. Reload the page to see why.');
      } else if (!res.ok) say('The server answered ' + res.status + ' at ' + clock() + ': trying again.');
      else apply(new DOMParser().parseFromString(await res.text(), 'text/html'));
    } catch {
      say('The server could not be reached at ' + clock() + ': trying again.');
    } finally {
      running = false;
    }
    if (!stopped) timer = setTimeout(round, EVERY);
  };
  document.addEventListener('visibilitychange', () => {
    if (!document.hidden && timer === null && !running) round();
  });
  timer = setTimeout(round, EVERY);
})();
`;
