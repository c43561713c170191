/**
 * Optional peer dependencies (`postgres`, `better-sqlite3`): a subpath that
 * needs one checks for it before loading the code that imports it, so a
 * missing peer says what to install instead of Node's ERR_MODULE_NOT_FOUND.
 */
import { ErrorCode, WaymarkError } from '../shared/errors.js';

export async function requirePeer(name: string, subpath: string, version: string): Promise<void> {
  try {
    await import(name);
  } catch (e) {
    const err = e as { code?: string; message?: string };
    if (err.code === 'ERR_MODULE_NOT_FOUND' && String(err.message).includes(`'${name}'`)) {
      throw new WaymarkError(
        ErrorCode.MISSING_PEER,
        `${subpath} needs the '${name}' package, an optional peer dependency of waymark that is not installed: install it with 'npm install ${name}@${version}'`,
        { cause: e, details: { peer: name, version } },
      );
    }
    throw e;
  }
}
