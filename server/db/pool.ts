import { createPool, createTypeParserPreset, sql, type DatabasePool } from 'slonik';
import { z } from 'zod';

export { sql };

// Timestamps stay ISO strings, as the JSON the SQL functions build.
const typeParsers = [
  ...createTypeParserPreset().filter((p) => !['timestamp', 'timestamptz', 'date'].includes(p.name)),
];

export async function openPool(url: string, maximumPoolSize: number): Promise<DatabasePool> {
  return createPool(url, {
    maximumPoolSize,
    typeParsers,
    // A request's transaction runs its own statements only; retrying a
    // serialization failure would re-run them, which every handler allows.
    transactionRetryLimit: 3,
    queryRetryLimit: 0,
    statementTimeout: 30_000,
    idleTimeout: 10_000,
    connectionTimeout: 10_000,
    // Every setting a request makes is transaction-local (SET LOCAL in
    // app.set_request_context, set_config(..., true) for the role),
    // so nothing outlives a transaction and the default DISCARD ALL on release
    // would only throw away PostgreSQL's cached plans (it halved throughput).
    resetConnection: async () => {},
  });
}

export const jsonResult = z.object({ result: z.any() });
export const anyRow = z.record(z.string(), z.unknown());
