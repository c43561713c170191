/** @jsxImportSource hono/jsx */
/**
 * The inspector's refusal pages: a bad request (the stable code and every problem, and the way back) and an
 * action a form asked for that was refused (the code, why, that nothing changed, and where to go from here).
 */
import type { Child, FC } from 'hono/jsx';
import { ErrorCode } from '../shared/errors.js';
import { Layout, Time } from './layout.js';

export const RefusedPage: FC<{ code: string; problems: string[] }> = ({ code, problems }) => (
  <Layout title="Bad request">
    <h1>Bad request</h1>
    <p>
      <code data-testid="code">{code}</code>
    </p>
    <ul>
      {problems.map((p) => (
        <li>{p}</li>
      ))}
    </ul>
    <p>
      <a href="/">Back to the runs</a>
    </p>
  </Layout>
);

const ISO_TIME = /(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?Z)/;

/** Text whose ISO times are shown as the cards show times (local time, UTC on hover). */
export const WithTimes: FC<{ text: string }> = ({ text }) => (
  <>{text.split(ISO_TIME).map((part, i) => (i % 2 === 1 ? <Time iso={part} /> : part))}</>
);

/** A form's action that was refused: the stable code and why, what stands instead (`children`), that nothing changed, and the links on. */
export const ActionRefusedPage: FC<{
  title: string;
  code: string;
  message: string;
  links: { href: string; text: string }[];
  /** Whether the frame's nav is shown (false: a post with no session, such as the login form's). */
  nav?: boolean;
  children?: Child;
}> = (p) => (
  <Layout title={p.title} nav={p.nav}>
    <h1>{p.title}</h1>
    <p class="error" role="alert" data-testid="refusal">
      <code data-testid="refusal-code">{p.code}</code>: <WithTimes text={p.message} />
    </p>
    {p.children}
    <p>Nothing was changed.</p>
    <p>
      {p.links.map((l, i) => (
        <>
          {i > 0 && ' · '}
          <a href={l.href}>{l.text}</a>
        </>
      ))}
    </p>
  </Layout>
);

/** A cursor the page did not issue (BAD_CURSOR): the run list, a run's rows, the quarantine, the approvals. */
export const BadCursorPage: FC = () => (
  <RefusedPage
    code={ErrorCode.BAD_CURSOR}
    problems={['cursor: not one this page issued (follow the page\u2019s own links)']}
  />
);
