/** The README's ```js examples run as written against a real `memory serve`. */

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';

import { markdownConfig, startServer, type RunningServer } from './support/server.js';

// Compiled to .test-build/test/: the package is two levels up.
const PACKAGE_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const README = readFileSync(join(PACKAGE_DIR, 'README.md'), 'utf8');
const EXAMPLES = [...README.matchAll(/```js\n([\s\S]*?)```/g)].map((match) => match[1] ?? '');

describe('README examples', () => {
  let server: RunningServer;

  before(async () => {
    server = await startServer({ config: markdownConfig('[personalities.ada]\n') });
  });
  after(async () => {
    await server.stop();
  });

  test('there are examples to run', () => {
    assert.ok(EXAMPLES.length >= 4, `found ${EXAMPLES.length}`);
  });

  for (const [index, source] of EXAMPLES.entries()) {
    test(`example ${index + 1}: ${source.split('\n')[0]}`, () => {
      // Inside the package, so `import 'agent-memory'` resolves to this package's dist/.
      const file = join(PACKAGE_DIR, '.test-build', `readme-example-${index + 1}.mjs`);
      writeFileSync(file, source);
      const env: NodeJS.ProcessEnv = { ...process.env, MEMORY_URL: server.baseUrl };
      delete env['MEMORY_API_KEY'];
      const run = spawnSync(process.execPath, [file], { env, encoding: 'utf8', timeout: 60_000 });
      assert.equal(run.status, 0, `example ${index + 1} failed:\n${run.stdout}\n${run.stderr}`);
    });
  }
});
