/**
 * What frames every inspector page, by where its pages read from: the plane
 * (the default: Runs, Pending approvals, Quarantine, Writers, Keys, and Log out) or a local store
 * under `waymark ui` (Runs, Pending approvals, Quarantine, Sync status; no login, so no Log out).
 * A page component reads it with `useContext(FRAME)`; the local UI wraps each
 * page in `<FRAME.Provider value={LOCAL_FRAME}>`, so one component renders both.
 */
import { createContext } from 'hono/jsx';
import type { Counted } from '../support/count.js';

export interface Frame {
  /** where the pages read from */
  kind: 'plane' | 'local';
  /** the links of the header's nav, in order */
  nav: { href: string; label: string }[];
  /** the Log out form's CSRF token (a session exists), or null: no Log out */
  logout: string | null;
  /** said after the brand, e.g. which store (null: nothing) */
  subtitle: string | null;
  /** who the decisions made here are recorded as, said in the header (null: the plane, where it is the key's name) */
  recordingAs: string | null;
  /** the request's path: the nav link to it is marked the current page (absent: none is) */
  path?: string;
  /** how many pauses the approvals inbox lists, said on its nav link (absent or null: not counted) */
  pendingApprovals?: Counted | null;
  /** writers' names by writer id (a plane: its key's name; a local store: "this store"), shown as "name (short id)" */
  writerNames?: ReadonlyMap<string, string>;
}

/** How many the nav's approvals count reads at most: past it the link says "99+". */
export const PENDING_COUNT_CAP = 99;

export const PLANE_FRAME: Frame = {
  kind: 'plane',
  nav: [
    { href: '/', label: 'Runs' },
    { href: '/approvals', label: 'Pending approvals' },
    { href: '/quarantine', label: 'Quarantine' },
    { href: '/writers', label: 'Writers' },
    { href: '/keys', label: 'Keys' },
  ],
  logout: null,
  subtitle: null,
  recordingAs: null,
};

/** The frame of `waymark ui` over the store `subtitle` names, recording decisions as `user`. */
export const localFrame = (subtitle: string, user: string | null = null): Frame => ({
  kind: 'local',
  nav: [
    { href: '/', label: 'Runs' },
    { href: '/approvals', label: 'Pending approvals' },
    { href: '/quarantine', label: 'Quarantine' },
    { href: '/sync', label: 'Sync status' },
  ],
  logout: null,
  subtitle,
  recordingAs: user,
});

/**
 * The plane's frame for a session with `scopes`: Keys only for an admin session (its page refuses anyone else);
 * Log out with `logoutToken`, the session's form token (null: no session, as under --dev).
 */
export const planeFrame = (scopes: readonly string[], logoutToken: string | null): Frame => ({
  ...PLANE_FRAME,
  nav: PLANE_FRAME.nav.filter((l) => l.href !== '/keys' || (logoutToken !== null && scopes.includes('admin'))),
  logout: logoutToken,
});

export const FRAME = createContext<Frame>(PLANE_FRAME);
