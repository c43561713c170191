/** Whether a host name or address is loopback (127.0.0.0/8, ::1, `localhost`): what `waymark ui` binds to without `--allow-remote`. */
export { isLoopback } from '../../inspector/host.js';
