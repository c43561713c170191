/** @jsxImportSource hono/jsx */
/** The inspector's 404 page: what was not found, and the way back. */
import type { FC } from 'hono/jsx';
import { Layout } from './layout.js';

export const NotFoundPage: FC<{ what: string }> = ({ what }) => (
  <Layout title="Not found">
    <h1>Not found</h1>
    <p>{what}</p>
    <p>
      <a href="/">Back to the runs</a>
    </p>
  </Layout>
);
