// Folds openapi/parts/*.yaml into openapi.yaml (paths appended, components
// merged) and removes the parts. Run when an area's contract is settled.
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseDocument } from 'yaml';

const root = path.resolve(import.meta.dirname, '..');
const main = path.join(root, 'openapi.yaml');
const dir = path.join(root, 'openapi/parts');
const doc = parseDocument(readFileSync(main, 'utf8'));
const files = readdirSync(dir).filter((f) => f.endsWith('.yaml')).sort();
for (const f of files) {
  const part = parseDocument(readFileSync(path.join(dir, f), 'utf8'));
  const paths = part.get('paths') as any;
  for (const pair of paths?.items ?? []) {
    if (doc.hasIn(['paths', pair.key.value])) throw new Error(`${f}: ${pair.key.value} exists`);
    doc.setIn(['paths', pair.key.value], pair.value);
  }
  const components = part.get('components') as any;
  for (const section of components?.items ?? []) {
    for (const pair of section.value?.items ?? []) {
      if (doc.hasIn(['components', section.key.value, pair.key.value])) throw new Error(`${f}: components.${section.key.value}.${pair.key.value} exists`);
      doc.setIn(['components', section.key.value, pair.key.value], pair.value);
    }
  }
  const tags = part.get('tags') as any;
  for (const t of tags?.items ?? []) (doc.get('tags') as any).add(t);
  rmSync(path.join(dir, f));
  console.log(`folded ${f}`);
}
writeFileSync(main, doc.toString({ lineWidth: 0 }));
