/** @jsxImportSource hono/jsx */
/** The inspector's 400 page: the stable code and every problem of the request, and the way back. */
import type { FC } from 'hono/jsx';
import { ErrorCode } from '../shared/errors.js';
import { Layout } from './layout.js';

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

/** A cursor the page did not issue (BAD_CURSOR): the run list, a run's rows, the quarantine, the approvals. */
export const BadCursorPage: FC = () => (
  <RefusedPage
    code={ErrorCode.BAD_CURSOR}
    problems={['cursor: not one this page issued (follow the page\u2019s own links)']}
  />
);
