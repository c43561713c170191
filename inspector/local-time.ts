/**
 * The inspector's local-times script: rewrites each <time data-local> from the
 * UTC text the server rendered into the reader's local time (absolute: date,
 * time and offset; relative: "5m ago", local time on hover). Without it the
 * page shows UTC. A region a live page swapped in (live.ts) is rewritten on
 * its `waymark:updated` event.
 */
export const LOCAL_TIME_JS = `(() => {
  const p = (n) => String(n).padStart(2, '0');
  const local = (d) => {
    const off = -d.getTimezoneOffset();
    const sign = off >= 0 ? '+' : '-';
    return d.getFullYear() + '-' + p(d.getMonth() + 1) + '-' + p(d.getDate()) + ' ' + p(d.getHours()) + ':' + p(d.getMinutes()) + ':' + p(d.getSeconds()) + ' ' + sign + p(Math.floor(Math.abs(off) / 60)) + ':' + p(Math.abs(off) % 60);
  };
  const rewrite = (root) => {
    for (const t of root.querySelectorAll('time[data-local]')) {
      const d = new Date(t.getAttribute('datetime'));
      if (Number.isNaN(d.getTime())) continue;
      if (t.dataset.local === 'absolute') {
        if (!t.title) t.title = t.textContent;
        t.textContent = local(d);
      }
      else t.title = local(d) + ' (' + t.title + ')';
    }
  };
  rewrite(document);
  document.addEventListener('waymark:updated', (e) => rewrite(e.target));
})();
`;
