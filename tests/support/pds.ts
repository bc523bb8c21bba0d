// The Bluesky reference PDS (the npm package @atproto/pds, what bsky.social's
// PDSes run) with a PLC directory (@did-plc/server on an in-memory database),
// both in this process on free ports of 127.0.0.1/localhost, for the Bluesky
// connector's tests (tests/api/connector-bluesky.test.ts). Its SQLite
// databases and blobs live in a temporary directory removed by stop(). No
// AppView is configured (app.bsky.* reads are proxied to an address that
// refuses), so like counts and profiles are not served: records are read back
// with com.atproto.repo.*.
//
// better-sqlite3 (the PDS's database driver) must be built for the Node that
// runs the tests: package.json approves its install script and .npmrc points
// node-gyp at the `node` package's Node 24 headers (docs/connectors-bluesky.md).
import { createHmac, randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Secp256k1Keypair } from '@atproto/crypto';
import { PDS, envToCfg, envToSecrets, type ServerEnvironment } from '@atproto/pds';
import { Database as PlcDatabase, PlcServer } from '@did-plc/server';

export interface PdsAccount {
  did: string;
  handle: string;
  /** The account's own password (what a user would never give Pressroom). */
  password: string;
  /** An app password made for the account (what a user pastes into Pressroom). */
  appPassword: string;
  appPasswordName: string;
  accessJwt: string;
  refreshJwt: string;
}

export interface TestPds {
  /** http://localhost:<port> */
  url: string;
  port: number;
  plcUrl: string;
  /** The PDS's service DID (the audience of its access tokens). */
  serviceDid: string;
  /** Creates an account (handle `<name>.test`) with an app password. */
  createAccount(name: string): Promise<PdsAccount>;
  /** An XRPC call to the PDS as a client would make it (the tests' own reads and set-up). */
  xrpc(method: 'GET' | 'POST', nsid: string, opts?: { token?: string; params?: Record<string, string>; json?: unknown; body?: Buffer; contentType?: string }): Promise<{ status: number; headers: Headers; json: any }>;
  /** How many sessions (refresh tokens) of `did` the PDS keeps. */
  sessionCount(did: string): Promise<number>;
  /** An access token for `did` signed with the PDS's own secret, expired `agoSeconds` ago (what a stored token looks like two hours later). */
  expiredAccessJwt(did: string, agoSeconds?: number): string;
  stop(): Promise<void>;
}

/** A port nobody listens on now (the PDS needs its port before it starts: its DID documents name it). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.unref();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

/**
 * rateLimits: the PDS's own limits (off by default). appViewUrl: where app.bsky.* reads are
 * proxied (default an address that refuses: the PDS answers 502 UpstreamFailure; null: no
 * AppView configured, the PDS answers 400 "No service configured").
 */
export async function startPds(opts: { rateLimits?: boolean; appViewUrl?: string | null } = {}): Promise<TestPds> {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'pressroom-pds-'));
  const plc = PlcServer.create({ db: PlcDatabase.mock(), port: 0 });
  const plcPort = ((await plc.start()).address() as net.AddressInfo).port;
  const rotation = await Secp256k1Keypair.create({ exportable: true });
  const jwtSecret = randomBytes(16).toString('hex');
  const rotationHex = Buffer.from(await rotation.export()).toString('hex');
  const adminPassword = randomBytes(12).toString('hex');
  const envFor = (pdsPort: number): ServerEnvironment => ({
    hostname: 'localhost',
    port: pdsPort,
    devMode: true,
    jwtSecret,
    adminPassword,
    plcRotationKeyK256PrivateKeyHex: rotationHex,
    dataDirectory: dataDir,
    blobstoreDiskLocation: path.join(dataDir, 'blobs'),
    didPlcUrl: `http://localhost:${plcPort}`,
    inviteRequired: false,
    serviceHandleDomains: ['.test'],
    // Sessions carry the DID document, as bsky.social's do (the connector reads the account's PDS from it).
    enableDidDocWithSession: true,
    crawlers: [],
    // Off unless asked: the PDS's real limits (30 sign-ins per 5 minutes per identifier, ...) answer 429 with RateLimit-* headers.
    rateLimitsEnabled: opts.rateLimits ?? false,
    rateLimitBypassIps: [],
    trustedOAuthClients: [],
    handleBackupNameservers: [],
    ...(opts.appViewUrl === null ? {} : { bskyAppViewUrl: opts.appViewUrl ?? 'http://localhost:1', bskyAppViewDid: 'did:example:appview' }),
  });
  // The PDS must know its port before it listens (its DID documents name it): take a free one,
  // and another if something took it in between.
  let pds: PDS | null = null;
  let pdsPort = 0;
  for (let tries = 1; !pds; tries++) {
    pdsPort = await freePort();
    const env = envFor(pdsPort);
    const candidate = await PDS.create(envToCfg(env), envToSecrets(env));
    try {
      await candidate.start();
      pds = candidate;
    } catch (e) {
      await candidate.destroy().catch(() => {});
      if ((e as NodeJS.ErrnoException).code === 'EADDRINUSE' && tries < 5) continue;
      await plc.destroy().catch(() => {});
      await rm(dataDir, { recursive: true, force: true });
      throw e;
    }
  }
  const url = `http://localhost:${pdsPort}`;
  const serviceDid = pds.ctx.cfg.service.did;

  const xrpc: TestPds['xrpc'] = async (method, nsid, o = {}) => {
    const u = new URL(`/xrpc/${nsid}`, url);
    for (const [k, v] of Object.entries(o.params ?? {})) u.searchParams.set(k, v);
    const headers: Record<string, string> = {};
    if (o.token) headers.authorization = `Bearer ${o.token}`;
    let body: string | Uint8Array | undefined;
    if (o.json !== undefined) {
      headers['content-type'] = 'application/json';
      body = JSON.stringify(o.json);
    } else if (o.body) {
      headers['content-type'] = o.contentType ?? 'application/octet-stream';
      body = new Uint8Array(o.body);
    }
    const res = await fetch(u, { method, headers, body });
    const text = await res.text();
    let json: any = null;
    try {
      json = text ? JSON.parse(text) : null;
    } catch {
      json = text;
    }
    return { status: res.status, headers: res.headers, json };
  };

  let accounts = 0;
  return {
    url,
    port: pdsPort,
    plcUrl: `http://localhost:${plcPort}`,
    serviceDid,
    xrpc,
    async createAccount(name: string): Promise<PdsAccount> {
      accounts++;
      const handle = `${name}.test`;
      const password = `pw-${randomBytes(9).toString('hex')}`;
      const created = await xrpc('POST', 'com.atproto.server.createAccount', { json: { handle, email: `${name}-${accounts}@example.com`, password } });
      if (created.status !== 200) throw new Error(`createAccount ${handle}: HTTP ${created.status} ${JSON.stringify(created.json)}`);
      const { did, accessJwt, refreshJwt } = created.json as { did: string; accessJwt: string; refreshJwt: string };
      const appPasswordName = `pressroom-${accounts}`;
      const ap = await xrpc('POST', 'com.atproto.server.createAppPassword', { token: accessJwt, json: { name: appPasswordName } });
      if (ap.status !== 200) throw new Error(`createAppPassword: HTTP ${ap.status} ${JSON.stringify(ap.json)}`);
      return { did, handle, password, appPassword: ap.json.password as string, appPasswordName, accessJwt, refreshJwt };
    },
    async sessionCount(did: string): Promise<number> {
      const rows = await pds.ctx.accountManager.db.db.selectFrom('refresh_token').select('id').where('did', '=', did).execute();
      return rows.length;
    },
    expiredAccessJwt(did: string, agoSeconds = 60): string {
      const now = Math.floor(Date.now() / 1000);
      const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
      const head = b64({ typ: 'at+jwt', alg: 'HS256' });
      const payload = b64({ scope: 'com.atproto.appPass', aud: serviceDid, sub: did, iat: now - 7200 - agoSeconds, exp: now - agoSeconds });
      const sig = createHmac('sha256', Buffer.from(jwtSecret)).update(`${head}.${payload}`).digest('base64url');
      return `${head}.${payload}.${sig}`;
    },
    async stop() {
      // Both close their SQLite databases; a process that exits with them open can abort in a native hook.
      await pds.destroy().catch(() => {});
      await plc.destroy().catch(() => {});
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

// ---------------------------------------------------------------------------
// A proxy in front of the PDS that injects what the PDS cannot be made to do
// ---------------------------------------------------------------------------

export interface ProxiedCall {
  method: string;
  nsid: string;
  query: Record<string, string>;
  /** What the client got: the PDS's status, an injected one, or null when no answer was sent. */
  status: number | null;
  injected: boolean;
}

export type Fault =
  /** Answer this instead of forwarding. */
  | { kind: 'answer'; status: number; json: unknown; headers?: Record<string, string> }
  /** Forward (the PDS acts), then close the connection without answering: a timeout after commit. */
  | { kind: 'drop-answer' }
  /** Hold requests until `count` of them wait, then forward them all at once. */
  | { kind: 'barrier'; count: number };

export interface FaultProxy {
  url: string;
  calls: ProxiedCall[];
  /** The next `times` calls of `nsid` meet `fault`. */
  inject(nsid: string, fault: Fault, times?: number): void;
  /** Forgets the faults not met yet. */
  clear(): void;
  close(): Promise<void>;
}

export async function startFaultProxy(targetUrl: string): Promise<FaultProxy> {
  const target = new URL(targetUrl);
  const calls: ProxiedCall[] = [];
  let rules: { nsid: string; fault: Fault; left: number }[] = [];
  const barriers = new Map<string, (() => void)[]>();

  const forward = (req: http.IncomingMessage, body: Buffer) =>
    new Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer }>((resolve, reject) => {
      const headers = { ...req.headers, host: target.host };
      const r = http.request({ host: target.hostname, port: target.port, path: req.url, method: req.method, headers }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 502, headers: res.headers, body: Buffer.concat(chunks) }));
        res.on('error', reject);
      });
      r.on('error', reject);
      r.end(body);
    });

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const u = new URL(req.url ?? '/', 'http://proxy');
      const nsid = u.pathname.startsWith('/xrpc/') ? u.pathname.slice(6) : u.pathname;
      const call: ProxiedCall = { method: req.method ?? 'GET', nsid, query: Object.fromEntries(u.searchParams), status: null, injected: false };
      calls.push(call);
      const rule = rules.find((r) => r.nsid === nsid && r.left > 0);
      if (rule) rule.left--;
      const fault = rule?.fault;
      try {
        if (fault?.kind === 'answer') {
          call.status = fault.status;
          call.injected = true;
          res.writeHead(fault.status, { 'content-type': 'application/json', ...(fault.headers ?? {}) });
          res.end(JSON.stringify(fault.json));
          return;
        }
        if (fault?.kind === 'barrier') {
          await new Promise<void>((release) => {
            const waiting = barriers.get(nsid) ?? [];
            waiting.push(release);
            barriers.set(nsid, waiting);
            if (waiting.length >= fault.count) {
              barriers.delete(nsid);
              waiting.forEach((w) => w());
            }
          });
        }
        const a = await forward(req, Buffer.concat(chunks));
        if (fault?.kind === 'drop-answer') {
          call.injected = true;
          req.socket.destroy();
          return;
        }
        call.status = a.status;
        const headers = { ...a.headers };
        delete headers['transfer-encoding'];
        delete headers.connection;
        delete headers['keep-alive'];
        headers['content-length'] = String(a.body.length);
        res.writeHead(a.status, headers);
        res.end(a.body);
      } catch {
        req.socket.destroy();
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    calls,
    inject(nsid, fault, times = 1) {
      rules.push({ nsid, fault, left: times });
    },
    clear() {
      rules = [];
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

// ---------------------------------------------------------------------------
// A stand-in AppView behind the PDS
// ---------------------------------------------------------------------------
//
// The PDS proxies app.bsky.* reads to its AppView (with a service-auth JWT).
// This one answers the two the connector makes, in the lexicons' shapes:
//   app.bsky.feed.getPosts?uris=   -> {posts: [postView with likeCount, repostCount, replyCount, quoteCount]}
//   app.bsky.actor.getProfile?actor= -> profileViewDetailed with followersCount
// Counts are set by the test; a post it was not told about is absent (as the AppView answers for one it has not indexed).

export interface FakeAppView {
  url: string;
  posts: Map<string, { likeCount: number; repostCount: number; replyCount: number; quoteCount: number }>;
  profiles: Map<string, { handle: string; displayName?: string; followersCount: number }>;
  calls: { nsid: string; query: Record<string, string[]>; authorization: string | null }[];
  /** Stops answering: the port then refuses, as an AppView that is down. */
  close(): Promise<void>;
}

export async function startFakeAppView(): Promise<FakeAppView> {
  const posts: FakeAppView['posts'] = new Map();
  const profiles: FakeAppView['profiles'] = new Map();
  const calls: FakeAppView['calls'] = [];
  const server = http.createServer((req, res) => {
    const u = new URL(req.url ?? '/', 'http://appview');
    const nsid = u.pathname.replace(/^\/xrpc\//, '');
    const query: Record<string, string[]> = {};
    for (const [k, v] of u.searchParams) (query[k] ??= []).push(v);
    calls.push({ nsid, query, authorization: req.headers.authorization ?? null });
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' });
      res.end(JSON.stringify(body));
    };
    if (nsid === 'app.bsky.feed.getPosts') {
      const out = (query.uris ?? []).flatMap((uri) => {
        const p = posts.get(uri);
        if (!p) return [];
        const did = uri.split('/')[2];
        return [{ uri, cid: 'bafyreiaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa', author: { did, handle: profiles.get(did)?.handle ?? 'handle.invalid' }, record: {}, indexedAt: new Date().toISOString(), ...p }];
      });
      return send(200, { posts: out });
    }
    if (nsid === 'app.bsky.actor.getProfile') {
      const actor = u.searchParams.get('actor') ?? '';
      const p = profiles.get(actor);
      if (!p) return send(400, { error: 'InvalidRequest', message: 'Profile not found' });
      return send(200, { did: actor, handle: p.handle, displayName: p.displayName, followersCount: p.followersCount, followsCount: 0, postsCount: 0 });
    }
    send(501, { error: 'MethodNotImplemented', message: 'Method Not Implemented' });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    posts,
    profiles,
    calls,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
