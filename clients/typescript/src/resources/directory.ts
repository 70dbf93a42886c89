/**
 * {@link Directory}: the personalities and users the service knows.
 *
 * @module
 */

import type { Transport } from '../transport.js';
import type { PersonalitiesPage, PersonalityView, UsersPage, UserView } from '../types.js';
import { optionsObject } from '../core/arguments.js';
import { listPage, paginate, type PageOptions } from '../core/pagination.js';

/** The personalities and users the service knows. */
export class Directory {
  constructor(private readonly transport: Transport) {}

  /** One page of personalities, sorted by id, with the default one. */
  async personalities(maybeOptions: PageOptions = {}): Promise<PersonalitiesPage> {
    return listPage<PersonalitiesPage>(
      this.transport,
      '/v1/personalities',
      optionsObject(maybeOptions, 'directory.personalities'),
    );
  }

  /** Every personality, page by page. */
  iteratePersonalities(maybeOptions: PageOptions = {}): AsyncGenerator<PersonalityView> {
    const options = optionsObject(maybeOptions, 'directory.iteratePersonalities');
    return paginate((after) => this.personalities({ ...options, after }), options.after);
  }

  /** One page of users, sorted by id, with the default one. */
  async users(maybeOptions: PageOptions = {}): Promise<UsersPage> {
    return listPage<UsersPage>(
      this.transport,
      '/v1/users',
      optionsObject(maybeOptions, 'directory.users'),
    );
  }

  /** Every user, page by page. */
  iterateUsers(maybeOptions: PageOptions = {}): AsyncGenerator<UserView> {
    const options = optionsObject(maybeOptions, 'directory.iterateUsers');
    return paginate((after) => this.users({ ...options, after }), options.after);
  }
}
