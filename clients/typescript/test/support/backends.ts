/** The backends the provider suites run on, one server configuration each. */

import { spawnSync } from 'node:child_process';

import { serviceUrl, uniqueName } from './server.js';

/** A backend the service can keep the documents in. */
export interface Backend {
  name: string;
  /** memory.toml, or undefined when the backend's server is not configured (skip). */
  config: () => string | undefined;
  cleanup: () => void;
}

/**
 * Markdown, PostgreSQL and Redis, each as a memory.toml whose default provider is "db"
 * (PostgreSQL and Redis from MEMORY_TEST_POSTGRES_URL / MEMORY_TEST_REDIS_URL, under a schema
 * and key prefix of this run's own).
 */
export function backends(): Backend[] {
  const postgres = serviceUrl('MEMORY_TEST_POSTGRES_URL');
  const redis = serviceUrl('MEMORY_TEST_REDIS_URL');
  const schema = uniqueName('am_ts');
  const prefix = uniqueName('am-ts');
  return [
    {
      name: 'markdown',
      config: () =>
        `default_provider = "db"\n[providers.db]\nkind = "markdown"\nroot = "{{dir}}/root"\n`,
      cleanup: () => undefined,
    },
    {
      name: 'postgres',
      config: () =>
        postgres === undefined
          ? undefined
          : `default_provider = "db"\n[providers.db]\nkind = "postgres"\nurl = ${JSON.stringify(postgres)}\nschema = "${schema}"\n`,
      // Best effort: the schema is this run's alone, so a leftover harms no other run.
      cleanup: () => {
        if (postgres !== undefined) {
          spawnSync('psql', [postgres, '-qc', `DROP SCHEMA IF EXISTS "${schema}" CASCADE`], {
            stdio: 'ignore',
          });
        }
      },
    },
    {
      name: 'redis',
      config: () =>
        redis === undefined
          ? undefined
          : `default_provider = "db"\n[providers.db]\nkind = "redis"\nurl = ${JSON.stringify(redis)}\nprefix = "${prefix}"\n`,
      cleanup: () => {
        if (redis !== undefined) {
          spawnSync(
            'sh',
            [
              '-c',
              'redis-cli -u "$1" --scan --pattern "$2:*" | xargs -r redis-cli -u "$1" DEL',
              'sh',
              redis,
              prefix,
            ],
            { stdio: 'ignore' },
          );
        }
      },
    },
  ];
}
