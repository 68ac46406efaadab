import { PermissionError } from './errors.js';
import type { Viewer } from './viewer.js';

/**
 * What a key may do (API.md §7): ADMIN keys everything in their workspace; IDENTITY keys
 * only list, mount and unmount stores and create sessions for their own identity.
 */
export function isAdmin(viewer: Viewer): boolean {
  return viewer.kind === 'admin';
}

export function assertAdmin(viewer: Viewer): void {
  if (!isAdmin(viewer)) {
    throw new PermissionError(
      `This is an IDENTITY key: it may only list, mount and unmount stores and create sessions for ${viewer.identityId}.`,
    );
  }
}
