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
 * Call `stop` once, on the first of: SIGINT, SIGTERM, or (when npm started
 * this process) its launcher gone. Later requests are ignored, so a
 * supervisor's SIGTERM after a Ctrl-C lets the stop finish (a plane closes its
 * database and removes its data-dir lock). Returns a function that stops
 * listening.
 */
export function onStopRequest(stop: () => void, env: NodeJS.ProcessEnv = process.env): () => void {
  let asked = false;
  const request = () => {
    if (asked) return;
    asked = true;
    unwatch();
    stop();
  };
  const unwatch = watchLauncher(request, env);
  process.on('SIGINT', request);
  process.on('SIGTERM', request);
  return () => {
    process.off('SIGINT', request);
    process.off('SIGTERM', request);
    unwatch();
  };
}

/** Call `gone` once the process that started this one is gone, when npm started it; returns a function that ends the watch. */
function watchLauncher(gone: () => void, env: NodeJS.ProcessEnv): () => void {
  if (!env.npm_lifecycle_event) return () => {};
  const timer = setInterval(() => {
    if (process.ppid === launcher) return;
    clearInterval(timer);
    gone();
  }, 1000);
  timer.unref();
  return () => clearInterval(timer);
}
