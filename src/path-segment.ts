/**
 * Ids end up as URL path segments (`/v1/threads/{id}`, `/v1/admin/tenants/{tenant}`).
 * `.` and `..` are dot-segments that every URL parser removes, so an id made only
 * of dots could be created but never addressed again: no id may be all dots.
 */
export const isDotSegment = (id: string): boolean => /^\.+$/.test(id);

export const DOT_SEGMENT_MESSAGE = "an id made only of dots ('.', '..') cannot be addressed by URL";
