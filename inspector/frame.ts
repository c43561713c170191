/**
 * What frames every inspector page, by where its pages read from: the plane
 * (the default: Runs, Pending approvals, Quarantine, Writers, Keys, and Log out) or a local store
 * under `waymark ui` (Runs, Pending approvals, Quarantine, Sync status; no login, so no Log out).
 * A page component reads it with `useContext(FRAME)`; the local UI wraps each
 * page in `<FRAME.Provider value={LOCAL_FRAME}>`, so one component renders both.
 */
import { createContext } from 'hono/jsx';

export interface Frame {
  /** where the pages read from */
  kind: 'plane' | 'local';
  /** the links of the header's nav, in order */
  nav: { href: string; label: string }[];
  /** a Log out button (a session exists) */
  logout: boolean;
  /** said after the brand, e.g. which store (null: nothing) */
  subtitle: string | null;
}

export const PLANE_FRAME: Frame = {
  kind: 'plane',
  nav: [
    { href: '/', label: 'Runs' },
    { href: '/approvals', label: 'Pending approvals' },
    { href: '/quarantine', label: 'Quarantine' },
    { href: '/writers', label: 'Writers' },
    { href: '/keys', label: 'Keys' },
  ],
  logout: true,
  subtitle: null,
};

/** The frame of `waymark ui` over the store `subtitle` names. */
export const localFrame = (subtitle: string): Frame => ({
  kind: 'local',
  nav: [
    { href: '/', label: 'Runs' },
    { href: '/approvals', label: 'Pending approvals' },
    { href: '/quarantine', label: 'Quarantine' },
    { href: '/sync', label: 'Sync status' },
  ],
  logout: false,
  subtitle,
});

export const FRAME = createContext<Frame>(PLANE_FRAME);
