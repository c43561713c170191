/**
 * A real Postgres database per test file. When no server answers, Postgres
 * suites skip and say so; under CI=true a missing server is a failure.
 */
import postgres from 'postgres';

export const PG_ADMIN_URL = process.env.WAYMARK_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

let probe: Promise<string | null> | null = null;

/** null when reachable, else the reason. */
export function pgUnavailable(): Promise<string | null> {
  probe ??= (async () => {
    const sql = postgres(PG_ADMIN_URL, { max: 1, connect_timeout: 3, onnotice: () => {} });
    try {
      await sql`SELECT 1`;
      return null;
    } catch (e) {
      return (e as Error).message;
    } finally {
      await sql.end({ timeout: 1 }).catch(() => {});
    }
  })();
  return probe;
}

/** Resolve whether Postgres suites run; logs a clear SKIPPED line, throws under CI. */
export async function pgReady(suite: string): Promise<boolean> {
  const why = await pgUnavailable();
  if (why === null) return true;
  if (process.env.CI === 'true') {
    throw new Error(`Postgres is required under CI=true but ${PG_ADMIN_URL} is unreachable: ${why}`);
  }
  console.warn(`[waymark] SKIPPED Postgres suite "${suite}": no server at ${PG_ADMIN_URL} (${why})`);
  return false;
}

export interface TestDatabase {
  url: string;
  name: string;
  drop(): Promise<void>;
}

/**
 * Create a fresh database; `drop()` removes it (terminating leftover sessions).
 * `locale: 'en-US'` orders its text as that locale does (ICU), not by bytes as
 * this server's default `C.UTF-8` does: what a stock `en_US.UTF-8` server does
 * to queries that page by a text column.
 */
export async function createTestDatabase(prefix = 'waymark_test', o: { locale?: 'en-US' } = {}): Promise<TestDatabase> {
  const name = `${prefix}_${process.pid}_${Date.now().toString(36)}_${Math.floor(Math.random() * 1e6)}`;
  const admin = postgres(PG_ADMIN_URL, { max: 1, onnotice: () => {} });
  try {
    await admin.unsafe(
      `CREATE DATABASE "${name}"${o.locale ? ` LOCALE_PROVIDER icu ICU_LOCALE '${o.locale}' LOCALE 'C.UTF-8' TEMPLATE template0` : ''}`,
    );
  } finally {
    await admin.end({ timeout: 2 });
  }
  const url = new URL(PG_ADMIN_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    name,
    async drop() {
      const a = postgres(PG_ADMIN_URL, { max: 1, onnotice: () => {} });
      try {
        await a.unsafe(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      } finally {
        await a.end({ timeout: 2 });
      }
    },
  };
}
