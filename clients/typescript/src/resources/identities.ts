/**
 * {@link Identities}: platform accounts linked to users.
 *
 * @module
 */

import type { Transport } from '../transport.js';
import type { IdentitiesPage, IdentityView, LinkChange, UserId } from '../types.js';
import { optionsObject, type CallOptions } from '../core/arguments.js';
import { listPage, paginate, type PageOptions } from '../core/pagination.js';
import { identityPath } from '../core/paths.js';
import { write, type WriteOptions, type WriteResult } from '../core/writes.js';

/** Platform accounts (`telegram` `12345`) linked to users. */
export class Identities {
  constructor(private readonly transport: Transport) {}

  /**
   * Link an account to a user. An account linked to another user is a
   * {@link ConflictError} unless `relink` moves it.
   */
  async link(
    platform: string,
    platformUser: string,
    user: UserId,
    maybeOptions: WriteOptions & { relink?: boolean | undefined } = {},
  ): Promise<WriteResult<LinkChange>> {
    const options = optionsObject(maybeOptions, 'identities.link');
    return write<LinkChange>(this.transport, {
      method: 'PUT',
      path: identityPath(platform, platformUser),
      body: options.relink === undefined ? { user } : { user, relink: options.relink },
      idempotencyKey: options.idempotencyKey,
      signal: options.signal,
    });
  }

  /** The user an account is linked to; {@link NotFoundError} when it is not linked. */
  async resolve(
    platform: string,
    platformUser: string,
    maybeOptions: CallOptions = {},
  ): Promise<IdentityView> {
    const options = optionsObject(maybeOptions, 'identities.resolve');
    const response = await this.transport.request<IdentityView>({
      method: 'GET',
      path: identityPath(platform, platformUser),
      signal: options.signal,
    });
    return response.body;
  }

  /** Remove an account's link (`previous` says to whom it was linked, null when it was not). */
  async unlink(
    platform: string,
    platformUser: string,
    maybeOptions: WriteOptions = {},
  ): Promise<WriteResult<LinkChange>> {
    const options = optionsObject(maybeOptions, 'identities.unlink');
    return write<LinkChange>(this.transport, {
      method: 'DELETE',
      path: identityPath(platform, platformUser),
      idempotencyKey: options.idempotencyKey,
      signal: options.signal,
    });
  }

  /** One page of links, sorted by platform then account. */
  async list(maybeOptions: PageOptions = {}): Promise<IdentitiesPage> {
    return listPage<IdentitiesPage>(
      this.transport,
      '/v1/identities',
      optionsObject(maybeOptions, 'identities.list'),
    );
  }

  /** Every link, page by page. */
  iterate(maybeOptions: PageOptions = {}): AsyncGenerator<IdentityView> {
    const options = optionsObject(maybeOptions, 'identities.iterate');
    return paginate((after) => this.list({ ...options, after }), options.after);
  }
}
