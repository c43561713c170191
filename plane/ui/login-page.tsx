/** @jsxImportSource hono/jsx */
/** The inspector's login page: a read or approve key, exchanged for a session cookie. */
import type { FC } from 'hono/jsx';
import { Layout } from '../../inspector/layout.js';

export const LoginPage: FC<{ error?: string; next: string; csrf: string }> = ({ error, next, csrf }) => (
  <Layout title="Log in" nav={false}>
    <div class="login">
      <h1>Log in to the inspector</h1>
      <p class="muted">
        Paste an API key with the <code>read</code> scope. It is exchanged for a session cookie and not kept in the
        page.
      </p>
      <p class="muted">
        A key with the <code>approve</code> scope logs in too: it sees the same pages (runs, their rows and state, the
        pauses and their context) and can approve or decline a paused run.
      </p>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      <form method="post" action="/login">
        <input type="hidden" name="next" value={next} />
        <input type="hidden" name="csrf" value={csrf} />
        <label>
          API key
          <input type="password" name="key" autocomplete="off" required autofocus />
        </label>
        <button type="submit">Log in</button>
      </form>
    </div>
  </Layout>
);
