// Fails when server/generated/api.d.ts is not what openapi-typescript makes
// from openapi.yaml today (run `npm run generate` to refresh it).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

const root = path.resolve(import.meta.dirname, '..');
const dir = mkdtempSync(path.join(tmpdir(), 'pressroom-types-'));
try {
  const fresh = path.join(dir, 'api.d.ts');
  execFileSync(process.execPath, [path.join(root, 'node_modules/openapi-typescript/bin/cli.js'), path.join(root, 'openapi.yaml'), '-o', fresh], { stdio: 'pipe' });
  const committed = readFileSync(path.join(root, 'server/generated/api.d.ts'), 'utf8');
  if (readFileSync(fresh, 'utf8') !== committed) {
    console.error('server/generated/api.d.ts is stale: run `npm run generate` and commit the result.');
    process.exit(1);
  }
  console.log('generated types match openapi.yaml');
} finally {
  rmSync(dir, { recursive: true, force: true });
}
