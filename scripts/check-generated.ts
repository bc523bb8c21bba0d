// Fails when a committed, generated file is not what its source makes today
// (see openapi/README.md):
// - the split tree under openapi/ follows its layout: each path item in the
//   file named from its path, every file under openapi/paths and
//   openapi/components referenced from openapi/openapi.yaml under its own name;
// - openapi.yaml is what `redocly bundle openapi/openapi.yaml` writes;
// - server/generated/api.d.ts is what openapi-typescript makes from openapi.yaml.
// `npm run bundle` refreshes both generated files.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parse } from 'yaml';

const root = path.resolve(import.meta.dirname, '..');
const problems: string[] = [];

// Layout of the split tree.
const source = parse(readFileSync(path.join(root, 'openapi/openapi.yaml'), 'utf8'));
const referenced = new Set<string>();
for (const [p, item] of Object.entries<any>(source.paths ?? {})) {
  const want = `paths/${p.replace(/^\//, '').replace(/\//g, '_')}.yaml`;
  if (item?.$ref !== want || Object.keys(item).length !== 1) problems.push(`openapi/openapi.yaml: path ${p} must be { $ref: '${want}' }`);
  referenced.add(item?.$ref);
}
for (const [section, entries] of Object.entries<any>(source.components ?? {})) {
  if (section === 'securitySchemes') continue;
  for (const [name, value] of Object.entries<any>(entries ?? {})) {
    const want = `components/${section}/${name}.yaml`;
    if (value?.$ref !== want || Object.keys(value).length !== 1) problems.push(`openapi/openapi.yaml: components.${section}.${name} must be { $ref: ${want} }`);
    referenced.add(value?.$ref);
  }
}
const onDisk = (dir: string): string[] =>
  readdirSync(path.join(root, 'openapi', dir), { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => path.relative(path.join(root, 'openapi'), path.join(e.parentPath, e.name)).split(path.sep).join('/'));
for (const file of [...onDisk('paths'), ...onDisk('components')]) {
  if (!referenced.has(file)) problems.push(`openapi/${file} is not referenced from openapi/openapi.yaml under its own name`);
}

const dir = mkdtempSync(path.join(tmpdir(), 'pressroom-generated-'));
try {
  const bundled = path.join(dir, 'openapi.yaml');
  execFileSync(process.execPath, [path.join(root, 'node_modules/@redocly/cli/bin/cli.js'), 'bundle', 'openapi/openapi.yaml', '-o', bundled], { cwd: root, stdio: 'pipe' });
  if (readFileSync(bundled, 'utf8') !== readFileSync(path.join(root, 'openapi.yaml'), 'utf8')) {
    problems.push('openapi.yaml is stale or was edited by hand: edit openapi/, run `npm run bundle` and commit the result.');
  }
  const types = path.join(dir, 'api.d.ts');
  execFileSync(process.execPath, [path.join(root, 'node_modules/openapi-typescript/bin/cli.js'), path.join(root, 'openapi.yaml'), '-o', types], { stdio: 'pipe' });
  if (readFileSync(types, 'utf8') !== readFileSync(path.join(root, 'server/generated/api.d.ts'), 'utf8')) {
    problems.push('server/generated/api.d.ts is stale: run `npm run bundle` (or `npm run generate`) and commit the result.');
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}

if (problems.length) {
  for (const p of problems) console.error(p);
  process.exit(1);
}
console.log('openapi.yaml matches openapi/, and generated types match openapi.yaml');
