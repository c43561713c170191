/**
 * A server started through npm (`npm start`, `npx waymark …`) runs under the
 * shell npm ran the script in. npm forwards SIGINT and SIGTERM to that shell
 * only, and a shell waiting for its child (dash, Debian's `sh`) dies without
 * passing them on: stopping npm by its pid (a process manager, `kill`) left the
 * server serving, reparented. So a server npm started watches its parent and
 * stops as on SIGTERM once it is gone (checked once a second; the timer does
 * not keep the process alive). A server started otherwise is left alone: one
 * started with `&` from a shell that then exits keeps serving.
 *
 * Hand-written: it is a `process.ppid` comparison on a timer; the packages
 * that do this (tree-kill, signal-exit) solve the other direction.
 */
export function stopWhenLauncherExits(stop: () => void, env: NodeJS.ProcessEnv = process.env): () => void {
  if (!env.npm_lifecycle_event) return () => {};
  const parent = process.ppid;
  const timer = setInterval(() => {
    if (process.ppid === parent) return;
    clearInterval(timer);
    stop();
  }, 1000);
  timer.unref();
  return () => clearInterval(timer);
}
