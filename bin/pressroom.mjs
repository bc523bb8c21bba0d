#!/usr/bin/env node
// `pressroom` (npx pressroom ...): starts the TypeScript CLI
// (server/cli/pressroom.ts) with a Node that strips types (24 or newer): this
// Node when it is new enough, otherwise the one the `node` npm package
// installs under node_modules. Arguments, stdio, signals and the exit code
// pass through.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const script = path.join(root, 'server', 'cli', 'pressroom.ts');
const MIN_MAJOR = 24;

function findNode() {
  if (Number(process.versions.node.split('.')[0]) >= MIN_MAJOR) return process.execPath;
  const candidates = [path.join(root, 'node_modules', 'node', 'bin', 'node')];
  try {
    // The `node` package may be hoisted elsewhere.
    const pkg = createRequire(path.join(root, 'package.json')).resolve('node/package.json');
    candidates.push(path.join(path.dirname(pkg), 'bin', 'node'));
  } catch {
    // not installed
  }
  return candidates.find((c) => existsSync(c)) ?? null;
}

const node = findNode();
if (!node) {
  const message =
    `pressroom needs Node ${MIN_MAJOR} or newer (this is ${process.version}) and found no node_modules/node/bin/node; ` +
    'run `npm install` in the Pressroom directory or use Node 24.';
  process.stdout.write(JSON.stringify({ error: { code: 'NODE_TOO_OLD', message } }, null, 2) + '\n');
  process.exit(1);
}

const child = spawn(node, [script, ...process.argv.slice(2)], { stdio: 'inherit' });

// A terminal's Ctrl-C reaches both processes; a signal sent to this one only
// (a supervisor's SIGTERM) is passed on. Either way the child decides.
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(signal, () => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
  });
}

child.on('error', (e) => {
  process.stdout.write(JSON.stringify({ error: { code: 'CLI_START_FAILED', message: `Cannot start ${node}: ${e.message}` } }, null, 2) + '\n');
  process.exit(1);
});

child.on('exit', (code, signal) => {
  if (signal) {
    // Die the same way, so the caller sees the signal.
    process.removeAllListeners(signal);
    process.kill(process.pid, signal);
    return;
  }
  process.exit(code ?? 1);
});
