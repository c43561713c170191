/// <reference lib="dom" />
/**
 * Accessibility checks of an inspector page in the browser. axe-core is not a
 * dependency of this project, so the rules of axe's that these pages could
 * break are written out, each named by its axe rule (impact in brackets):
 * meta-refresh [critical], html-has-lang [serious], page-has-heading-one and
 * heading-order [moderate], duplicate-id-aria [critical] (any duplicate id here),
 * label, select-name, button-name [critical], aria-valid-attr, aria-roles
 * [critical], aria-hidden-focus [serious], and that each section's label exists.
 */
import type { Page } from 'playwright-core';

/** The problems found on the page, as text (none: []). */
export const accessibilityProblems = (page: Page) =>
  page.evaluate(() => {
    const problems: string[] = [];
    // a timed reload or redirect takes the page away from a reader mid-sentence, mid-form
    for (const m of document.querySelectorAll('meta[http-equiv]'))
      if (m.getAttribute('http-equiv')!.toLowerCase() === 'refresh')
        problems.push(`meta refresh '${m.getAttribute('content')}' (axe meta-refresh, critical)`);
    if (!document.documentElement.lang) problems.push('html has no lang');
    const h1 = document.querySelectorAll('h1');
    if (h1.length !== 1) problems.push(`${h1.length} h1`);
    const headings = [...document.querySelectorAll('h1, h2, h3')].map((h) => Number(h.tagName[1]));
    headings.forEach(
      (level, i) => i > 0 && level > headings[i - 1] + 1 && problems.push(`heading level skips to h${level}`),
    );
    const ids = [...document.querySelectorAll('[id]')].map((e) => e.id);
    for (const id of new Set(ids)) if (ids.filter((x) => x === id).length > 1) problems.push(`id '${id}' used twice`);
    for (const el of document.querySelectorAll<HTMLInputElement | HTMLTextAreaElement | HTMLSelectElement>(
      'input:not([type=hidden]), textarea, select',
    )) {
      const named =
        (el.labels && [...el.labels].some((l) => l.textContent!.trim())) ||
        el.getAttribute('aria-label') ||
        el.getAttribute('aria-labelledby');
      if (!named) problems.push(`${el.tagName.toLowerCase()}[name=${el.name}] has no label`);
    }
    for (const b of document.querySelectorAll('button'))
      if (!(b.textContent!.trim() || b.getAttribute('aria-label'))) problems.push('a button has no name');
    for (const l of document.querySelectorAll('label[for]'))
      if (!document.getElementById(l.getAttribute('for')!))
        problems.push(`label for '${l.getAttribute('for')}' names nothing`);
    for (const s of document.querySelectorAll('section[aria-labelledby]'))
      if (!document.getElementById(s.getAttribute('aria-labelledby')!))
        problems.push(`section labelled by a missing '${s.getAttribute('aria-labelledby')}'`);
    for (const el of document.querySelectorAll(
      '[aria-hidden=true] a, [aria-hidden=true] button, [aria-hidden=true] input',
    ))
      problems.push(`focusable ${el.tagName} inside aria-hidden`);
    // the ARIA attributes and roles the inspector may use: any other is a typo a screen reader ignores
    const attrs = ['aria-label', 'aria-labelledby', 'aria-live', 'aria-hidden', 'aria-current', 'aria-describedby'];
    const roles = ['search', 'status', 'alert', 'navigation', 'region', 'note'];
    for (const el of document.querySelectorAll('*')) {
      for (const a of el.attributes)
        if (a.name.startsWith('aria-') && !attrs.includes(a.name)) problems.push(`unknown attribute ${a.name}`);
      const role = el.getAttribute('role');
      if (role !== null && !roles.includes(role)) problems.push(`role '${role}' not one of ${roles.join(', ')}`);
    }
    for (const el of document.querySelectorAll('[aria-live]'))
      if (!['polite', 'assertive', 'off'].includes(el.getAttribute('aria-live')!))
        problems.push(`aria-live '${el.getAttribute('aria-live')}'`);
    return problems;
  });
