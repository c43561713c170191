/**
 * The pages `npm run screenshots` (tools/screenshots.ts) takes, and the rule that keeps the set whole: every GET
 * page route of either UI is covered by a shot (`uncoveredRoutes`). test/package/screenshots.test.ts checks that
 * rule against both UIs' route tables and that docs/img and the guide hold each shot's four pictures.
 */

export const WIDTHS = [1280, 390] as const;
export const SCHEMES = ['light', 'dark'] as const;

export type Ui = 'plane' | 'local';
export interface Shot {
  ui: Ui;
  /** The route (as the UI's app names it) this shot covers. */
  route: string;
  path: string;
  /** The file's name part and the guide's words. */
  name: string;
  title: string;
  /** Signed in (the plane): false for the login page. */
  session?: boolean;
  /** How much of the page to take, in px from the top (or from the path's #anchor); default the whole, up to the tool's cap (2,400 px). */
  height?: number;
}

export const UI_NAME: Record<Ui, string> = { plane: "the plane's inspector", local: '`waymark ui`' };

/** Every page this tool captures; each page route of either UI must be among `route`s (checked below). */
export const SHOTS: Shot[] = [
  { ui: 'plane', route: '/login', path: '/login', name: 'login', title: 'Login', session: false },
  { ui: 'plane', route: '/', path: '/', name: 'run-list', title: 'Run list' },
  { ui: 'plane', route: '/', path: '/?attention=1', name: 'run-list-attention', title: 'Run list: needs attention' },
  { ui: 'plane', route: '/', path: '/?status=bogus', name: 'refused', title: 'A refused filter (400)' },
  { ui: 'plane', route: '/runs/:id', path: '/runs/refund-7731', name: 'run-paused', title: 'A paused run' },
  {
    ui: 'plane',
    route: '/runs/:id',
    path: '/runs/refund-7731#pause-h',
    name: 'approve-form',
    title: 'A pause and its approve form',
    height: 760,
  },
  { ui: 'plane', route: '/runs/:id', path: '/runs/refund-1042', name: 'run-completed', title: 'A completed run' },
  { ui: 'plane', route: '/runs/:id', path: '/runs/summarise-88', name: 'run-failed', title: 'A failed run' },
  { ui: 'plane', route: '/runs/:id', path: '/runs/refund-2210', name: 'run-cancelled', title: 'A cancelled run' },
  { ui: 'plane', route: '/runs/:id', path: '/runs/nightly-report', name: 'run-stale', title: 'A stale run' },
  { ui: 'plane', route: '/runs/:id', path: '/runs/refund-thread-42', name: 'run-thread', title: 'A LangGraph thread' },
  { ui: 'plane', route: '/runs/:id', path: '/runs/long-run', name: 'run-long', title: 'A 500-row run' },
  {
    ui: 'plane',
    route: '/runs/:id/rows/:seq',
    path: '/runs/refund-1042/rows/0',
    name: 'row-model',
    title: "A model call's detail",
  },
  {
    ui: 'plane',
    route: '/runs/:id/rows/:seq',
    path: '/runs/refund-1042/rows/1',
    name: 'row-tool',
    title: "A tool call's detail",
  },
  {
    ui: 'plane',
    route: '/runs/:id',
    path: '/runs/refund-1042?a=0&b=3#diff-h',
    name: 'run-diff',
    title: 'A diff of two rows',
    height: 900,
  },
  { ui: 'plane', route: '/runs/:id', path: '/runs/no-such-run', name: 'not-found', title: 'No such run (404)' },
  {
    ui: 'plane',
    route: '/runs/:id/state',
    path: '/runs/refund-7731/state',
    name: 'state',
    title: "A row's whole state",
  },
  { ui: 'plane', route: '/approvals', path: '/approvals', name: 'approvals', title: 'Pending approvals' },
  { ui: 'plane', route: '/quarantine', path: '/quarantine', name: 'quarantine', title: 'Quarantine' },
  { ui: 'plane', route: '/writers', path: '/writers', name: 'writers', title: 'Writers' },
  { ui: 'plane', route: '/keys', path: '/keys', name: 'keys', title: 'Keys' },
  {
    ui: 'plane',
    route: '/keys/:id/revoke',
    path: '/keys/{reader}/revoke',
    name: 'key-revoke',
    title: 'Revoking a key',
  },
  {
    ui: 'plane',
    route: '/keys/:id/new/:token',
    path: '/keys/{reader}/new/shown-already',
    name: 'key-new-shown',
    title: "A new key's page, once its secret was shown",
  },
  { ui: 'local', route: '/', path: '/', name: 'run-list', title: 'Run list' },
  { ui: 'local', route: '/runs/:id', path: '/runs/refund-7731', name: 'run-paused', title: 'A paused run' },
  { ui: 'local', route: '/runs/:id', path: '/runs/nightly-report', name: 'run-stale', title: 'A stale run' },
  { ui: 'local', route: '/runs/:id', path: '/runs/long-run', name: 'run-long', title: 'A 500-row run' },
  {
    ui: 'local',
    route: '/runs/:id/rows/:seq',
    path: '/runs/refund-1042/rows/1',
    name: 'row-tool',
    title: "A tool call's detail",
  },
  {
    ui: 'local',
    route: '/runs/:id/state',
    path: '/runs/refund-7731/state',
    name: 'state',
    title: "A row's whole state",
  },
  { ui: 'local', route: '/approvals', path: '/approvals', name: 'approvals', title: 'Pending approvals' },
  { ui: 'local', route: '/quarantine', path: '/quarantine', name: 'quarantine', title: 'Quarantine' },
  { ui: 'local', route: '/sync', path: '/sync', name: 'sync', title: 'Sync status' },
  { ui: 'local', route: '*', path: '/nothing-here', name: 'not-found', title: 'Nothing here (404)' },
];

/** The GET page routes of a Hono app (its static assets apart). */
export const pageRoutes = (routes: { method: string; path: string }[]) =>
  new Set(
    routes
      .filter((r) => r.method === 'GET' && !r.path.startsWith('/ui/') && r.path !== '/favicon.ico')
      .map((r) => r.path),
  );

export const file = (s: Shot, width: number, scheme: string) => `${s.ui}-${s.name}-${width}-${scheme}.webp`;

/** The page routes of either UI that no shot covers, as `plane /path` or `local /path`. */
export function uncoveredRoutes(
  plane: { method: string; path: string }[],
  local: { method: string; path: string }[],
): string[] {
  const covered = (u: Ui) => new Set(SHOTS.filter((s) => s.ui === u).map((s) => s.route));
  return [
    ...[...pageRoutes(plane)].filter((r) => !covered('plane').has(r)).map((r) => `plane ${r}`),
    ...[...pageRoutes(local)].filter((r) => !covered('local').has(r)).map((r) => `local ${r}`),
  ];
}
