/**
 * A server started through npm (`npm start`, `npx waymark …`) runs under the
 * shell npm ran the script in. npm forwards SIGTERM to that shell only, and a
 * shell waiting for its child (dash, Debian's `sh`) dies without passing it
 * on: stopping npm by its pid (a process manager, `kill`) left the server
 * serving, reparented. So a server npm started watches its parent and stops as
 * on SIGTERM once it is gone, within about a second (the check's period; its
 * timer does not keep the process alive).
 *
 * - The parent is read when this module loads, before the server opens its
 *   database, so a launcher that goes during a slow start-up is seen too. An
 *   npm script that backgrounds the server (`waymark plane &`) therefore stops
 *   it as soon as its shell exits: start a background server with `node`.
 * - A server npm did not start (no `npm_lifecycle_event`) is left alone: one
 *   started with `&` from a terminal's shell that then exits keeps serving.
 * - On Windows a process is not reparented, so the check never fires; nor
 *   does it when npm is SIGKILLed (its shell then stays, waiting).
 *
 * Hand-written: a `process.ppid` comparison on a timer; the packages for
 * signals (signal-exit, tree-kill) handle the other direction.
 */
const launcher = process.ppid;

/**
 * Call `stop` once the process that started this one is gone, when npm started
 * it (`env.npm_lifecycle_event` set). Returns a function that ends the watch
 * (a no-op when nothing is watched).
 */
export function stopWhenLauncherExits(stop: () => void, env: NodeJS.ProcessEnv = process.env): () => void {
  if (!env.npm_lifecycle_event) return () => {};
  const timer = setInterval(() => {
    if (process.ppid === launcher) return;
    clearInterval(timer);
    stop();
  }, 1000);
  timer.unref();
  return () => clearInterval(timer);
}
