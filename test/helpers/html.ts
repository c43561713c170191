/** What a page of either UI says, read from its HTML without a browser: a form's token, a refusal. */

/** The CSRF token of the page's first form (empty when it has none). */
export const csrfIn = (html: string) => /name="csrf" value="([^"]+)"/.exec(html)?.[1] ?? '';

/** The text of an HTML fragment's entities as a browser reads them. */
export const htmlText = (html: string) =>
  html
    .replace(/&#39;/g, "'")
    .replace(/&quot;/g, '"')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&');

/**
 * A refusal page's code and message, or null when the page is not a refusal.
 * The code is read from its element only: a page also carries random tokens
 * (the form's CSRF token) that can look like a code.
 */
export const refusalOf = (html: string) => {
  const m = /<code data-testid="refusal-code">([^<]*)<\/code>: ([\s\S]*?)<\/p>/.exec(html);
  // a time in the message is a <time> element (shown in local time): its text is the message's
  return m ? { code: m[1], message: htmlText(m[2].replace(/<[^>]*>/g, '')) } : null;
};
