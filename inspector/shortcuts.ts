/**
 * The inspector's keyboard shortcuts (/ui/shortcuts.js, loaded by every page;
 * the footer lists them, layout.tsx): `/` focuses the run list's search, `j`
 * and `k` move the focus to the next and previous run of a list (links marked
 * `data-row-link`; Enter opens one), `g` then `r` or `a` goes to Runs or
 * Pending approvals (where the nav has it), `?` opens the list.
 *
 * They never get in the way: no key is taken while the focus is in a field
 * (input, textarea, select, editable text) or with Ctrl, Alt or Meta held,
 * and the list's button (shown by this script only) turns them all off for
 * this browser (WCAG 2.1.4, character key shortcuts). Without the script a
 * page works the same: every shortcut is a link or a field already there.
 */
export const SHORTCUTS_JS = `(() => {
  const OFF = 'waymark.shortcuts';
  const off = () => {
    try {
      return localStorage.getItem(OFF) === 'off';
    } catch {
      return false;
    }
  };
  const toggle = document.querySelector('[data-shortcuts-toggle]');
  const label = () => {
    if (toggle) toggle.textContent = off() ? 'Turn keyboard shortcuts on' : 'Turn keyboard shortcuts off';
  };
  if (toggle) {
    toggle.hidden = false;
    label();
    toggle.addEventListener('click', () => {
      try {
        if (off()) localStorage.removeItem(OFF);
        else localStorage.setItem(OFF, 'off');
      } catch {}
      label();
    });
  }
  const typing = (t) =>
    t instanceof Element && !!t.closest('input, textarea, select, [contenteditable]:not([contenteditable="false"])');
  const go = { r: '/', a: '/approvals' };
  let g = 0;
  document.addEventListener('keydown', (e) => {
    if (off() || e.defaultPrevented || e.ctrlKey || e.altKey || e.metaKey || e.isComposing || typing(e.target)) return;
    const k = e.key;
    if (g && Date.now() - g < 1500) {
      g = 0;
      const link = go[k] && document.querySelector('nav a[href="' + go[k] + '"]');
      if (link) {
        e.preventDefault();
        location.href = link.href;
      }
      return;
    }
    g = 0;
    if (k === 'g') g = Date.now();
    else if (k === '/') {
      const search = document.querySelector('[data-shortcut="search"]');
      if (!search) return;
      e.preventDefault();
      search.focus();
      search.select();
    } else if (k === 'j' || k === 'k') {
      const rows = [...document.querySelectorAll('[data-row-link]')];
      if (!rows.length) return;
      e.preventDefault();
      const at = rows.indexOf(document.activeElement);
      const next = at < 0 ? (k === 'j' ? 0 : rows.length - 1) : Math.min(rows.length - 1, Math.max(0, at + (k === 'j' ? 1 : -1)));
      rows[next].focus();
      rows[next].scrollIntoView({ block: 'nearest' });
    } else if (k === '?') {
      const help = document.getElementById('keyboard');
      if (!help) return;
      e.preventDefault();
      help.open = true;
      help.querySelector('summary').focus();
    }
  });
})();
`;
