// Recomputes the graphile-migrate hash chain of committed migrations after an
// edit made before the migration ever landed (never edit landed migrations).
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

const dir = path.resolve(import.meta.dirname, '../db/migrations/committed');
let previous = null;
for (const f of readdirSync(dir).filter((x) => x.endsWith('.sql')).sort()) {
  const file = path.join(dir, f);
  const text = readFileSync(file, 'utf8');
  const headerEnd = text.indexOf('\n\n');
  const header = text.slice(0, headerEnd).split('\n');
  const body = text.slice(headerEnd + 2);
  const hash = 'sha1:' + createHash('sha1').update(((previous || '') + '\n' + body.trim()).trim() + '\n').digest('hex');
  const next = header.map((l) => (l.startsWith('--! Hash:') ? `--! Hash: ${hash}` : l.startsWith('--! Previous:') ? `--! Previous: ${previous ?? '-'}` : l));
  writeFileSync(file, next.join('\n') + '\n\n' + body);
  console.log(f, hash);
  previous = hash;
}
