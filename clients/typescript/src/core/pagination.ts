/**
 * The cursor-paged listings (`limit`, `after`): one page, and every item page by page.
 *
 * @module
 */

import type { Transport } from '../transport.js';
import type { CallOptions } from './arguments.js';

/** Options of a cursor page (`limit`, `after`). */
export interface PageOptions extends CallOptions {
  limit?: number | undefined;
  /** The previous page's `next_after`. */
  after?: string | undefined;
}

/** One page of a cursor-paged listing at `path`. */
export async function listPage<T>(
  transport: Transport,
  path: string,
  options: PageOptions,
): Promise<T> {
  const response = await transport.request<T>({
    method: 'GET',
    path,
    query: { limit: options.limit, after: options.after },
    signal: options.signal,
  });
  return response.body;
}

/** Every item of a listing from `start` on, a page at a time until one has no `next_after`. */
export async function* paginate<T>(
  fetchPage: (after: string | undefined) => Promise<{ items: T[]; next_after?: string | null }>,
  start: string | undefined,
): AsyncGenerator<T> {
  let after = start;
  for (;;) {
    const page = await fetchPage(after);
    yield* page.items;
    if (page.next_after === undefined || page.next_after === null) return;
    after = page.next_after;
  }
}
