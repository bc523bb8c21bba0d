import type { createServer } from 'node:http';
import { createApp } from './app.ts';
import { createHttpServer } from './http/server.ts';
import { loadConfig } from './config.ts';
import { openDatabase } from './db/open.ts';
import { openPool } from './db/pool.ts';
import { settingsAtStart } from './db/settings.ts';
import { createAppDeps } from './deps.ts';
import { startWorker } from './jobs/worker.ts';
import { createLogger } from './log.ts';
import { sealSecretsInTheClear } from './platforms/rekey.ts';
import { instrumentPool, metricsServer } from './metrics.ts';

export async function main() {
  const config = loadConfig();
  const log = createLogger(config.LOG_LEVEL, { service: 'pressroom' });
  const db = await openDatabase(config, log);
  const pool = await openPool(db.appUrl, config.DB_POOL_SIZE);
  // app.settings (server/db/settings.ts): the API process writes them from its environment; a
  // worker-only process reads them, logs an error for each one its environment sets otherwise, and runs on them.
  await settingsAtStart(pool, config, log);
  // Webhook channel secrets stored before they were sealed are sealed now (server/platforms/rekey.ts).
  const sealed = await sealSecretsInTheClear(db.ownerUrl, config);
  if (sealed) log.info('sealed webhook channel secrets stored in the clear', { count: sealed });
  // Everything the API and the worker share, built once and passed explicitly.
  const deps = createAppDeps({ pool, config, log });
  const worker = config.RUN_WORKER ? await startWorker(deps, { ownerUrl: db.ownerUrl }) : null;
  // METRICS_PORT: /metrics on a port of its own (a worker-only process too).
  instrumentPool(pool);
  const metrics = await metricsServer(config);
  if (metrics) log.info('metrics listening', { url: `http://${config.HOST}:${config.METRICS_PORT}/metrics` });
  let server: ReturnType<typeof createServer> | null = null;
  if (config.RUN_API) {
    const app = createApp(deps, { isMigrated: () => true });
    server = createHttpServer(app);
    // Uploads of large videos may take longer than Node's default 300 s.
    server.requestTimeout = 0;
    await new Promise<void>((resolve, reject) => {
      server!.once('error', reject);
      server!.listen(config.PORT, config.HOST, resolve);
    });
    const addr = server.address();
    log.info('listening', { url: `http://${config.HOST}:${typeof addr === 'object' && addr ? addr.port : config.PORT}`, worker: Boolean(worker) });
  } else {
    log.info('worker running', { api: false });
  }

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info('shutting down: draining requests and jobs', { signal });
    const force = setTimeout(() => {
      log.error('shutdown timed out; exiting');
      process.exit(1);
    }, config.SHUTDOWN_TIMEOUT_MS + 5000);
    force.unref();
    try {
      if (server) {
        const closed = new Promise<void>((resolve) => server!.close(() => resolve()));
        // Kept-alive connections close as soon as they are idle: now, and each
        // one whose request in flight has been answered (keepAliveTimeout is 65 s).
        server.closeIdleConnections();
        const sweep = setInterval(() => server!.closeIdleConnections(), 50);
        await closed;
        clearInterval(sweep);
      }
      if (metrics) await new Promise<void>((resolve) => metrics.close(() => resolve()));
      if (worker) await worker.stop(config.SHUTDOWN_TIMEOUT_MS);
      await pool.end();
      if (db.embedded) await db.embedded.stop();
      log.info('stopped');
      process.exit(0);
    } catch (e) {
      log.error('shutdown failed', { err: e });
      process.exit(1);
    }
  };
  // `npm start` execs this process (package.json), so a signal to npm reaches
  // it; the embedded PostgreSQL runs in a process group of its own
  // (server/db/embedded.ts), so Ctrl-C reaches only this process, which stops
  // the database after draining. SIGHUP (the terminal closed) drains too,
  // rather than ending the process and orphaning the database.
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) process.on(signal, () => void shutdown(signal));
}

if (import.meta.main) {
  main().catch((e) => {
    // The config may be what failed: log at error level whatever LOG_LEVEL says, with the error's stack and causes.
    createLogger('error', { service: 'pressroom' }).error('failed to start', { err: e });
    process.exit(1);
  });
}
