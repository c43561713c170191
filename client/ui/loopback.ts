/** Whether a host name or address is loopback (127.0.0.0/8, ::1, `localhost`): what `waymark ui` binds to without `--allow-remote`. */
export function isLoopback(host: string): boolean {
  const h = host.replace(/^\[(.*)\]$/, '$1').toLowerCase();
  return h === 'localhost' || h === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h);
}
