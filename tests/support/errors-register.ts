// The error codes db/ERRORS.md lists: every `UPPER_CASE` code in backticks.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const ERRORS_MD = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../db/ERRORS.md');

export function registeredCodes(file = ERRORS_MD): Set<string> {
  const text = readFileSync(file, 'utf8');
  return new Set([...text.matchAll(/`([A-Z][A-Z0-9_]+)`/g)].map((m) => m[1]));
}
