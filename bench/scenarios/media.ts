// Scenario "media": the media library's two figures.
//
// 1. Upload throughput of the default (disk) driver: PUT requests of
//    BENCH_MEDIA_UPLOAD_MIB (8) MiB to signed upload URLs served by the API
//    server child, which streams them to DATA_DIR/media (signature check,
//    session lookup, size count, rename), beside a plain file copy of the
//    same size on the same disk, done by this process: a stream copy
//    (read + write through user space, like the upload) and fs.copyFile
//    (the kernel's copy). Figures in MB/s (10^6 bytes).
//
// 2. Media list latency (p50/p99) on a library of BENCH_MEDIA_ITEMS
//    (100,000) items inserted with generate_series as the owner: the default
//    page, a deep page through a cursor, each sort, search, label, folder,
//    usage and state filters, over HTTP; and api.list_media alone through
//    the driver (the database's share) for the default page and a sort.
import { randomUUID } from 'node:crypto';
import { createReadStream, createWriteStream, writeFileSync } from 'node:fs';
import { copyFile, mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import pg from 'pg';
import { jsonResult, openPool, sql } from '../../server/db/pool.ts';
import { setContext, type Principal } from '../../server/http/pipeline.ts';
import { mp4 } from '../../tests/api/media-fixtures.ts';
import { HttpClient, jsonRequest } from '../lib/http.ts';
import { loadOptions, measureSides, type LoadResult, type Op, type Side } from '../lib/load.ts';
import type { Row, ScenarioReport } from '../lib/report.ts';
import type { Scenario, ScenarioContext } from '../lib/scenario.ts';
import { cloneForBench, startServer } from '../lib/stack.ts';

function intEnv(name: string, def: number, min: number, max: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return def;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) throw new Error(`${name}=${raw}: expected an integer from ${min} to ${max}`);
  return n;
}

const SECRET = 'bench-signing-secret-0123456789abcdef';

/** A PUT of `body` to a signed URL; only a 200 is a success. */
function putOp(agent: http.Agent, url: string, headers: Record<string, string>, body: Buffer, timeoutMs: number): Op {
  const u = new URL(url);
  if (u.hostname !== '127.0.0.1') throw new Error(`the bench only targets 127.0.0.1, not ${u.hostname}`);
  const options: http.RequestOptions = {
    host: u.hostname, port: Number(u.port), path: u.pathname + u.search, method: 'PUT', agent,
    headers: { ...headers, 'content-length': String(body.length) },
  };
  return () =>
    new Promise<void>((resolve, reject) => {
      const req = http.request(options, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => (res.statusCode === 200 ? resolve() : reject(new Error(`PUT -> ${res.statusCode}: ${Buffer.concat(chunks).toString().slice(0, 300)}`))));
        res.on('error', reject);
      });
      req.setTimeout(timeoutMs, () => req.destroy(new Error(`PUT: no answer within ${timeoutMs} ms`)));
      req.on('error', reject);
      req.end(body);
    });
}

const mbps = (rps: number, bytes: number) => (rps * bytes) / 1e6;

async function run(ctx: ScenarioContext): Promise<ScenarioReport> {
  const { knobs, cleanup, log } = ctx;
  const startedAt = new Date().toISOString();
  const items = intEnv('BENCH_MEDIA_ITEMS', 100_000, 1_000, 5_000_000);
  const uploadMiB = intEnv('BENCH_MEDIA_UPLOAD_MIB', 8, 1, 512);
  const uploadLoops = intEnv('BENCH_MEDIA_UPLOAD_CONCURRENCY', Math.min(4, knobs.concurrency), 1, 64);
  const uploadBytes = uploadMiB * 1024 * 1024;

  const dataDir = await mkdtemp(path.join(process.env.BENCH_MEDIA_DIR || os.tmpdir(), 'pressroom-bench-media-'));
  cleanup.add(`remove ${dataDir}`, () => rm(dataDir, { recursive: true, force: true }));
  log(`media: cloning the template; DATA_DIR ${dataDir}`);
  const db = await cloneForBench(ctx.cluster, cleanup, 'media');
  const env = { DATA_DIR: dataDir, SIGNED_URL_SECRET: SECRET, UPLOAD_SESSION_TTL_SECONDS: '86400', LOG_LEVEL: 'silent' };
  const server = await startServer({ ownerUrl: db.ownerUrl, appUrl: db.appUrl, poolSize: knobs.poolSize, env }, cleanup);
  log(`media: server pid ${server.pid} on ${server.baseUrl}`);

  const signup = await jsonRequest(server.baseUrl, 'POST', '/v1/auth/signup', {
    expect: 201,
    body: { email: 'owner@bench-media.example.com', password: 'bench password 0123456789', organizationName: 'Bench Media', workspaceName: 'Library' },
  });
  const token: string = signup.data.session.token;
  const ws: string = signup.data.workspace.id;
  const org: string = signup.data.organization.id;
  const auth = { authorization: `Bearer ${token}` };
  const base = `/v1/workspaces/${ws}/media`;

  const loadOpts = (concurrency: number) => ({ ...loadOptions(knobs, { serverPid: server.pid, postgresPid: ctx.machine.postmasterPid }), concurrency });
  /** Sides compared with each other run interleaved (BENCH_SLICE_SECONDS). */
  const measure = (sides: Side[], concurrency: number) => measureSides(sides, loadOpts(concurrency));
  const rows: Row[] = [];

  // -------------------------------------------------------------------------
  // 1. Upload throughput
  // -------------------------------------------------------------------------
  // A real MP4 of exactly uploadBytes (ftyp, moov, then mdat): the upload's
  // verification reads the movie header, as it does for any client.
  const mp4Of = (mdatBytes: number) => mp4({ width: 1080, height: 1920, durationMs: 15_000, mdatBytes });
  const body = mp4Of(uploadBytes - mp4Of(0).length);
  const newSession = async (i: number) => {
    const s = await jsonRequest(server.baseUrl, 'POST', `${base}/upload`, {
      token, expect: 201, body: { filename: `bench-${i}.mp4`, contentType: 'video/mp4', size: uploadBytes },
    });
    return { url: s.data.uploadUrl as string, headers: s.data.headers as Record<string, string>, sessionId: s.data.sessionId as string };
  };
  const agent = new http.Agent({ keepAlive: true, maxSockets: uploadLoops });
  cleanup.add('destroy the upload agent', () => agent.destroy());
  // Checked before anything is timed: a PUT lands and completes into a video item of that size.
  const probe = await newSession(-1);
  await putOp(agent, probe.url, probe.headers, body, knobs.requestTimeoutMs)();
  const check = await jsonRequest(server.baseUrl, 'POST', `${base}/upload/${probe.sessionId}/complete`, { token, expect: 200 });
  if (check.data.fileSize !== uploadBytes || check.data.type !== 'video') throw new Error(`unexpected completion answer: ${JSON.stringify(check).slice(0, 300)}`);
  // One pending session per loop: a pending session's URL takes repeated PUTs (each replaces the last).
  const sessions = await Promise.all(Array.from({ length: uploadLoops }, (_, i) => newSession(i)));

  const src = path.join(dataDir, 'copy-source.bin');
  writeFileSync(src, body);
  const group = `upload ${uploadMiB} MiB`;
  const uploads = await measure([
    { name: 'http', makeOp: (i: number) => putOp(agent, sessions[i].url, sessions[i].headers, body, knobs.requestTimeoutMs),
      onStart: () => log(`media: ${group}: http PUT, ${uploadLoops} loops`) },
    { name: 'stream-copy',
      makeOp: (i: number) => () => pipeline(createReadStream(src, { highWaterMark: 1024 * 1024 }), createWriteStream(path.join(dataDir, `copy-stream-${i}.bin`))),
      onStart: () => log(`media: ${group}: stream copy, ${uploadLoops} loops`) },
    { name: 'copyFile', makeOp: (i: number) => () => copyFile(src, path.join(dataDir, `copy-file-${i}.bin`)),
      onStart: () => log(`media: ${group}: copyFile, ${uploadLoops} loops`) },
  ], uploadLoops);
  const upload = uploads.get('http')!;
  const streamCopy = uploads.get('stream-copy')!;
  const fileCopy = uploads.get('copyFile')!;
  rows.push({ group, side: 'http', what: 'PUT to the signed upload URL: signature, session lookup, stream to DATA_DIR/media, rename', result: upload });
  rows.push({ group, side: 'stream-copy', what: 'fs.createReadStream -> fs.createWriteStream, same disk, this process', result: streamCopy });
  rows.push({ group, side: 'copyFile', what: 'fs.copyFile (kernel copy), same disk, this process', result: fileCopy });

  // -------------------------------------------------------------------------
  // 2. Media list on a large library
  // -------------------------------------------------------------------------
  log(`media: inserting ${items} media items with generate_series`);
  const owner = new pg.Client({ connectionString: db.ownerUrl });
  await owner.connect();
  const endOwner = cleanup.add('close the owner client', () => owner.end());
  const seedStarted = performance.now();
  const folder = (await owner.query(`insert into app.media_folders (organization_id, workspace_id, name) values ($1, $2, 'Campaign') returning id`, [org, ws])).rows[0].id;
  await owner.query(`insert into app.media_labels (organization_id, workspace_id, name) select $1, $2, 'label-' || k from generate_series(0, 19) k`, [org, ws]);
  await owner.query(
    `insert into app.media_items (organization_id, workspace_id, folder_id, type, filename, content_type, file_size, width, height,
       duration_ms, checksum_sha256, storage_key, source, is_favorite, state, deleted_at, delete_after, created_at)
     select $1, $2::uuid, case when i % 10 = 0 then $3::uuid end, t.type, format('IMG_%s.%s', lpad(i::text, 7, '0'), t.ext), t.ct,
       (i::bigint * 7919) % 50000000 + 1, 1080, 1350, case when t.type = 'video' then 15000 end,
       encode(sha256(i::text::bytea), 'hex'), format('media/%s/%s', $2, gen_random_uuid()), 'client_upload', i % 17 = 0,
       case when i % 50 = 0 then 'deleted' else 'active' end,
       case when i % 50 = 0 then now() end, case when i % 50 = 0 then now() + interval '30 days' end,
       now() - make_interval(secs => i)
     from generate_series(1, $4::int) i
     cross join lateral (select (array['image', 'image', 'image', 'video', 'gif'])[1 + i % 5] as type) k
     cross join lateral (select k.type, case k.type when 'video' then 'mp4' when 'gif' then 'gif' else 'jpg' end as ext,
                                case k.type when 'video' then 'video/mp4' when 'gif' then 'image/gif' else 'image/jpeg' end as ct) t`,
    [org, ws, folder, items],
  );
  await owner.query(
    `insert into app.media_item_labels (media_id, label_id, workspace_id, organization_id)
     select m.id, l.id, $1, $2
     from (select id, row_number() over (order by created_at, id) as rn from app.media_items where workspace_id = $1) m
     join (select id, row_number() over (order by name) - 1 as k from app.media_labels where workspace_id = $1) l on l.k = m.rn % 20
     where m.rn % 3 = 0`,
    [ws, org],
  );
  await owner.query('analyze app.media_items, app.media_item_labels, app.media_labels, app.media_folders');
  const seedSeconds = (performance.now() - seedStarted) / 1000;
  const label = (await owner.query(`select id from app.media_labels where workspace_id = $1 order by name limit 1`, [ws])).rows[0].id;
  await endOwner();
  log(`media: seeded in ${seedSeconds.toFixed(1)} s`);

  // A deep page: the cursor after 40 pages of the default list.
  let deepCursor = '';
  for (let i = 0; i < 40; i++) {
    const page = await jsonRequest(server.baseUrl, 'GET', `${base}?limit=50${deepCursor ? `&cursor=${encodeURIComponent(deepCursor)}` : ''}`, { token });
    deepCursor = page.meta.nextCursor;
  }
  const queries: { group: string; q: string; expect: (b: any) => boolean }[] = [
    { group: 'list: default (50 newest)', q: '', expect: (b) => b.data.length === 50 && b.meta.hasMore },
    { group: 'list: page 41 via cursor', q: `?cursor=${encodeURIComponent(deepCursor)}`, expect: (b) => b.data.length === 50 },
    { group: 'list: sortBy=filename asc', q: '?sortBy=filename&order=asc', expect: (b) => b.data.length === 50 },
    { group: 'list: sortBy=fileSize desc', q: '?sortBy=fileSize', expect: (b) => b.data.length === 50 },
    { group: 'list: search (substring)', q: '?search=IMG_00421', expect: (b) => b.data.length > 0 },
    { group: 'list: labelIds (1 label)', q: `?labelIds=${label}`, expect: (b) => b.data.length === 50 },
    { group: 'list: folderId', q: `?folderId=${folder}`, expect: (b) => b.data.length === 50 },
    { group: 'list: type=video&isFavorite=true', q: '?type=video&isFavorite=true', expect: (b) => b.data.length > 0 },
    { group: 'list: isUnused=true', q: '?isUnused=true', expect: (b) => b.data.length === 50 },
    { group: 'list: state=all', q: '?state=all', expect: (b) => b.data.length === 50 },
  ];
  for (const x of queries) {
    const b = await jsonRequest(server.baseUrl, 'GET', `${base}${x.q}`, { token });
    if (!x.expect(b)) throw new Error(`${x.group}: unexpected answer ${JSON.stringify(b).slice(0, 300)}`);
  }
  const client = new HttpClient(server.baseUrl, knobs.concurrency, knobs.requestTimeoutMs);
  cleanup.add('close the HTTP client', () => client.close());
  const pool = await openPool(db.appUrl, knobs.poolSize);
  const endPool = cleanup.add('end the direct pool', () => pool.end());
  const principal: Principal = { actorKind: 'user', userId: signup.data.user.id, organizationId: org, orgRole: 'owner', plan: signup.data.organization.plan };
  // The SQL function alone, as the request role, beside two of the HTTP queries.
  const direct = (filters: Record<string, unknown>): Op => async () => {
    const r = await pool.transaction(async (tx) => {
      await setContext(tx, principal, ws, 'manager', randomUUID());
      return tx.oneFirst(sql.type(jsonResult)`select api.list_media(${sql.jsonb(filters as never)}, ${null}, ${50}) as result`);
    });
    if (!Array.isArray(r.items) || r.items.length !== 50) throw new Error(`api.list_media: ${r.items?.length} items`);
  };
  const sqlSides: Record<string, Record<string, unknown>> = {
    'list: default (50 newest)': { state: 'active', sortBy: 'createdAt', order: 'desc' },
    'list: sortBy=filename asc': { state: 'active', sortBy: 'filename', order: 'asc' },
  };
  for (const x of queries) {
    const sides: Side[] = [{ name: 'http', makeOp: () => client.getOp(`${base}${x.q}`, auth), onStart: () => log(`media: ${x.group}: http, ${knobs.concurrency} loops`) }];
    const filters = sqlSides[x.group];
    if (filters) sides.push({ name: 'sql', makeOp: () => direct(filters), onStart: () => log(`media: ${x.group}: sql, ${knobs.concurrency} loops`) });
    const results: Map<string, LoadResult> = await measure(sides, knobs.concurrency);
    rows.push({ group: x.group, side: 'http', what: `GET ${base}${x.q.slice(0, 60)}`, result: results.get('http')! });
    if (filters) {
      rows.push({ group: x.group, side: 'sql', what: 'transaction { setContext; select api.list_media(...) }, slonik pool, no HTTP, no gate, no audit', result: results.get('sql')! });
    }
  }
  await endPool();
  await server.release();
  await db.release();

  const up = mbps(upload.rps, uploadBytes);
  const sc = mbps(streamCopy.rps, uploadBytes);
  const fc = mbps(fileCopy.rps, uploadBytes);
  const pick = (g: string, side: string) => rows.find((r) => r.group === g && r.side === side)!.result;
  const ratio = (g: string, a: LoadResult, b: LoadResult, numerator: string, denominator: string) =>
    ({ group: g, numerator, denominator, rps: a.rps / b.rps, p50: a.latency.p50 / b.latency.p50, p99: a.latency.p99 / b.latency.p99 });
  const listP99 = queries.map((x) => `${x.group.replace('list: ', '')} ${pick(x.group, 'http').latency.p99.toFixed(1)}`).join(', ');
  return {
    scenario: 'media',
    description: media.description,
    startedAt,
    finishedAt: new Date().toISOString(),
    knobs,
    machine: ctx.machine,
    setup: {
      database: db.name,
      serverPid: server.pid,
      serverEnv: { ...env, SIGNED_URL_SECRET: '(set)', DB_POOL_SIZE: String(knobs.poolSize), RUN_WORKER: 'false' },
      dataDir,
      upload: { bytes: uploadBytes, loops: uploadLoops, mbPerSecond: { http: up, streamCopy: sc, copyFile: fc } },
      library: { items, binned: Math.floor(items / 50), labels: 20, labeled: Math.floor(items / 3), inFolder: Math.floor(items / 10), seedSeconds },
    },
    rows,
    ratios: [
      ratio(group, upload, streamCopy, 'http', 'stream-copy'),
      ...Object.keys(sqlSides).map((g) => ratio(g, pick(g, 'http'), pick(g, 'sql'), 'http', 'sql')),
    ],
    notes: [
      `upload throughput: HTTP PUT ${up.toFixed(0)} MB/s, stream copy ${sc.toFixed(0)} MB/s, copyFile ${fc.toFixed(0)} MB/s ` +
        `(${uploadMiB} MiB bodies, ${uploadLoops} concurrent; MB = 10^6 bytes; req/s x size).`,
      'upload http: the body leaves this process over loopback; the server child checks the signature and the session (one query), counts and writes the bytes, renames the file.',
      'stream-copy / copyFile: the same size copied on the same disk by this process, the plain-copy ceiling; both usually stay in the page cache.',
      `list p99 ms (HTTP, ${items} items, 50 per page): ${listP99}.`,
      `library: ${items} items in one workspace (2% binned, a third labeled, a tenth in a folder), seeded with generate_series in ${seedSeconds.toFixed(1)} s.`,
      'list sql: api.list_media alone through the driver as the request role: the database share of the HTTP figure.',
    ],
  };
}

export const media: Scenario = {
  name: 'media',
  description: 'disk upload MB/s vs a plain file copy; media list p50/p99 on a 100k-item library',
  run,
};
