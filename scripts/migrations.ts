// Committed migrations are immutable. This module reads them, recomputes
// graphile-migrate's hash chain, and compares every file with the checksum
// list committed beside them (db/migrations/checksums.txt). It also commits
// the current migration (db/migrations/current/*.sql) as the next file.
//
//   node scripts/migrations.ts check            fails on any edit of a committed migration
//   node scripts/migrations.ts commit "message"  current/ -> committed/NNNNNN-message.sql
//
// See db/README.md ("Migrations").
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';

const ROOT = path.resolve(import.meta.dirname, '..');
const MIGRATIONS = path.join(ROOT, 'db/migrations');
const COMMITTED = path.join(MIGRATIONS, 'committed');
const CURRENT = path.join(MIGRATIONS, 'current');
export const CHECKSUMS = path.join(MIGRATIONS, 'checksums.txt');
const CHECKSUMS_REL = 'db/migrations/checksums.txt';

export interface Committed {
  file: string;
  previous: string | null;
  hash: string;
  computed: string;
}

/** graphile-migrate's hash of a committed migration's body, chained to the previous hash. */
export function migrationHash(previous: string | null, body: string): string {
  return 'sha1:' + createHash('sha1').update(((previous ?? '') + '\n' + body.trim()).trim() + '\n').digest('hex');
}

function parse(file: string, text: string): { previous: string | null; hash: string; body: string } {
  const end = text.indexOf('\n\n');
  if (end < 0) throw new Error(`${file}: no header`);
  const header = text.slice(0, end).split('\n');
  const value = (name: string) => header.find((l) => l.startsWith(`--! ${name}:`))?.slice(name.length + 5).trim();
  const previous = value('Previous');
  const hash = value('Hash');
  if (!previous || !hash) throw new Error(`${file}: the header needs --! Previous and --! Hash`);
  return { previous: previous === '-' ? null : previous, hash, body: text.slice(end + 2) };
}

export function readCommitted(): Committed[] {
  const files = readdirSync(COMMITTED).filter((f) => /^\d{6}(-[-_a-zA-Z0-9]*)?\.sql$/.test(f)).sort();
  let chain: string | null = null;
  return files.map((file) => {
    const { previous, hash, body } = parse(file, readFileSync(path.join(COMMITTED, file), 'utf8'));
    const computed = migrationHash(chain, body);
    const entry = { file, previous, hash, computed };
    chain = hash;
    return entry;
  });
}

function readChecksums(text: string): [string, string][] {
  return text
    .split('\n')
    .filter((l) => l.trim() && !l.startsWith('#'))
    .map((l) => {
      const [file, hash] = l.trim().split(/\s+/);
      return [file, hash];
    });
}

function checksumsAt(ref: string): string | null {
  try {
    return execFileSync('git', ['show', `${ref}:${CHECKSUMS_REL}`], { cwd: ROOT, stdio: ['ignore', 'pipe', 'ignore'] }).toString();
  } catch {
    return null;
  }
}

function gitRef(ref: string): boolean {
  try {
    execFileSync('git', ['rev-parse', '--verify', '--quiet', ref], { cwd: ROOT, stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** Every problem with the committed migrations; empty when they are intact. */
export function problems(): string[] {
  const out: string[] = [];
  const committed = readCommitted();
  let chain: string | null = null;
  for (const m of committed) {
    if (m.previous !== chain) out.push(`${m.file}: --! Previous is ${m.previous ?? '-'}, but the file before it hashes to ${chain ?? '-'}`);
    if (m.hash !== m.computed) out.push(`${m.file}: its body hashes to ${m.computed}, not to the ${m.hash} in its header (it was edited after it was committed)`);
    chain = m.hash;
  }
  if (!existsSync(CHECKSUMS)) return [...out, `${CHECKSUMS_REL} is missing`];
  const listed = readChecksums(readFileSync(CHECKSUMS, 'utf8'));
  committed.forEach((m, i) => {
    const entry = listed[i];
    if (!entry) out.push(`${m.file} is not in ${CHECKSUMS_REL} (commit migrations with \`npm run migration:commit\`)`);
    else if (entry[0] !== m.file || entry[1] !== m.computed)
      out.push(`${m.file} (${m.computed}) differs from line ${i + 1} of ${CHECKSUMS_REL} (${entry.join(' ')}): a committed migration changed`);
  });
  for (const entry of listed.slice(committed.length)) out.push(`${CHECKSUMS_REL} lists ${entry[0]}, which is not in db/migrations/committed/`);
  // The list itself only grows: what HEAD (and the main branch, when known)
  // recorded must be the start of it.
  for (const ref of ['HEAD', 'origin/main']) {
    if (!gitRef(ref)) continue;
    const before = checksumsAt(ref);
    if (before === null) continue;
    const old = readChecksums(before);
    old.forEach((entry, i) => {
      const now = listed[i];
      if (!now || now[0] !== entry[0] || now[1] !== entry[1])
        out.push(`${CHECKSUMS_REL} line ${i + 1} was ${entry.join(' ')} at ${ref}: committed migrations are immutable; put the fix in a new migration`);
    });
  }
  return out;
}

function check() {
  const found = problems();
  if (found.length) {
    console.error('Committed migrations changed:\n  ' + found.join('\n  '));
    process.exit(1);
  }
  console.log(`${readCommitted().length} committed migrations intact (hash chain and ${CHECKSUMS_REL})`);
}

function commit(message: string) {
  if (!/^[-_a-zA-Z0-9 ]+$/.test(message)) throw new Error('the message may hold letters, digits, spaces, - and _');
  const intact = problems();
  if (intact.length) throw new Error('fix the committed migrations first:\n  ' + intact.join('\n  '));
  const files = readdirSync(CURRENT).filter((f) => f.endsWith('.sql')).sort();
  const parts = files.map((f) => ({ f, text: readFileSync(path.join(CURRENT, f), 'utf8').trim() })).filter((p) => p.text && p.text !== '-- Enter migration here');
  if (!parts.length) throw new Error('db/migrations/current/ is empty');
  // The same layout graphile-migrate writes for a current/ directory.
  const body = parts.map((p) => `--! split: ${p.f}\n${p.text}\n`).join('\n');
  const committed = readCommitted();
  const previous = committed.at(-1)?.hash ?? null;
  const number = String(committed.length + 1).padStart(6, '0');
  const name = `${number}-${message.trim().toLowerCase().replace(/\s+/g, '-')}.sql`;
  const hash = migrationHash(previous, body);
  writeFileSync(path.join(COMMITTED, name), `--! Previous: ${previous ?? '-'}\n--! Hash: ${hash}\n--! Message: ${message.trim()}\n\n${body}`);
  writeFileSync(CHECKSUMS, readFileSync(CHECKSUMS, 'utf8').replace(/\n*$/, '\n') + `${name} ${hash}\n`);
  for (const p of files) rmSync(path.join(CURRENT, p));
  writeFileSync(path.join(CURRENT, '01-current.sql'), '-- Enter migration here\n');
  console.log(`committed ${name} (${hash}); db/migrations/current/ is empty again`);
}

if (import.meta.main) {
  const [cmd, ...rest] = process.argv.slice(2);
  if (cmd === 'check') check();
  else if (cmd === 'commit' && rest.length) commit(rest.join(' '));
  else {
    console.error('usage: node scripts/migrations.ts check | commit "message"');
    process.exit(2);
  }
}
