// server/storage/inspect.ts on real files (tests/fixtures/media, made by
// make.ts there with FFmpeg), whole and in chunks, truncated, damaged and
// random; then the complete-upload path with a rotated photo and video.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inspectStream, type Inspection, type MediaFacts } from '../../server/storage/inspect.ts';
import { client, signup } from '../support/http.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { gif, jpeg, mp4, png, sha256, startUpload, upload, webm, webp } from './media-fixtures.ts';

const dir = path.resolve(import.meta.dirname, '../fixtures/media');
const file = (name: string) => readFileSync(path.join(dir, name));

async function* chunks(bytes: Buffer, size: number) {
  for (let i = 0; i < bytes.length; i += size) yield bytes.subarray(i, i + size);
}
const inspect = (bytes: Buffer, size = 64 * 1024) => inspectStream(chunks(bytes, size));

/** ISO boxes, each [type, body]. */
function isoBoxes(...boxes: [string, Buffer][]): Buffer {
  return Buffer.concat(boxes.map(([type, body]) => {
    const head = Buffer.alloc(8);
    head.writeUInt32BE(body.length + 8);
    head.write(type, 4, 'latin1');
    return Buffer.concat([head, body]);
  }));
}
/** mvhd version 0: timescale 1000, duration 1000, rate 1, volume 1, identity matrix, next track 1. */
function mvhd(): Buffer {
  const b = Buffer.alloc(100);
  b.writeUInt32BE(1000, 12);
  b.writeUInt32BE(1000, 16);
  b.writeUInt32BE(0x00010000, 20);
  b.writeUInt16BE(0x0100, 24);
  [0x00010000, 0, 0, 0, 0x00010000, 0, 0, 0, 0x40000000].forEach((v, i) => b.writeUInt32BE(v, 36 + i * 4));
  b.writeUInt32BE(1, 96);
  return b;
}

type Expected = Pick<MediaFacts, 'type' | 'contentType' | 'format' | 'width' | 'height' | 'durationMs'>;
const FILES: [string, Expected][] = [
  ['still.png', { type: 'image', contentType: 'image/png', format: 'png', width: 40, height: 30, durationMs: null }],
  ['landscape.jpg', { type: 'image', contentType: 'image/jpeg', format: 'jpeg', width: 400, height: 300, durationMs: null }],
  // Stored 400x300, EXIF orientation 6: displayed turned a quarter, 300x400.
  ['orientation-6.jpg', { type: 'image', contentType: 'image/jpeg', format: 'jpeg', width: 300, height: 400, durationMs: null }],
  ['anim.gif', { type: 'gif', contentType: 'image/gif', format: 'gif', width: 40, height: 30, durationMs: null }],
  ['still.webp', { type: 'image', contentType: 'image/webp', format: 'webp', width: 40, height: 30, durationMs: null }],
  // moov after mdat, as FFmpeg writes it by default.
  ['clip.mp4', { type: 'video', contentType: 'video/mp4', format: 'mp4', width: 64, height: 48, durationMs: 1000 }],
  ['clip.mov', { type: 'video', contentType: 'video/quicktime', format: 'quicktime', width: 64, height: 48, durationMs: 1500 }],
  // Encoded 64x48, the tkhd matrix turns it by 90° (270° with moov first): displayed 48x64.
  ['rotated-90.mp4', { type: 'video', contentType: 'video/mp4', format: 'mp4', width: 48, height: 64, durationMs: 1000 }],
  ['rotated-270-faststart.mp4', { type: 'video', contentType: 'video/mp4', format: 'mp4', width: 48, height: 64, durationMs: 1000 }],
  ['clip.webm', { type: 'video', contentType: 'video/webm', format: 'webm', width: 64, height: 48, durationMs: 2000 }],
];

function wellFormed(r: Inspection, bytes: Buffer) {
  expect(r.size).toBe(bytes.length);
  expect(r.sha256).toBe(sha256(bytes));
  if (r.type === null) {
    expect(r).toMatchObject({ contentType: null, format: null, width: null, height: null, durationMs: null });
    expect(r.reason).toEqual(expect.any(String));
  } else {
    expect(r.reason).toBeNull();
    expect(r.contentType).toEqual(expect.any(String));
    for (const n of [r.width, r.height, r.durationMs]) if (n !== null) expect(Number.isInteger(n) && n > 0 && n <= 2_147_483_647).toBe(true);
    if (r.type !== 'video') expect([r.width, r.height].every((n) => n !== null)).toBe(true);
  }
}

describe('inspect: real files', () => {
  it.each(FILES)('%s', async (name, expected) => {
    const bytes = file(name);
    const r = await inspect(bytes);
    expect(r).toEqual({ ...expected, reason: null, document: null, size: bytes.length, sha256: sha256(bytes) });
  });

  it.each(FILES)('%s gives the same facts in 1-, 7- and 4096-byte chunks', async (name, expected) => {
    const bytes = file(name);
    for (const size of [1, 7, 4096]) expect(await inspect(bytes, size)).toMatchObject(expected);
  });

  it('the builders of media-fixtures.ts still pass (they have no sample tables)', async () => {
    expect(await inspect(png(64, 48))).toMatchObject({ type: 'image', width: 64, height: 48 });
    expect(await inspect(jpeg(40, 24))).toMatchObject({ type: 'image', width: 40, height: 24 });
    expect(await inspect(gif(5, 3))).toMatchObject({ type: 'gif', width: 5, height: 3 });
    expect(await inspect(webp(9, 4))).toMatchObject({ type: 'image', width: 9, height: 4 });
    expect(await inspect(mp4({ width: 640, height: 360, durationMs: 2500, moovAtEnd: true, mdatBytes: 300_000 }), 1000))
      .toMatchObject({ type: 'video', format: 'mp4', width: 640, height: 360, durationMs: 2500 });
    expect(await inspect(webm({ width: 320, height: 240, durationMs: 4321 }))).toMatchObject({ type: 'video', width: 320, height: 240, durationMs: 4321 });
  });

  it('Matroska that is not WebM, HEIF, and other formats are refused with the reason', async () => {
    expect(await inspect(file('clip.mkv'))).toMatchObject({ type: null, reason: expect.stringMatching(/^Matroska files .* not supported/) });
    const heic = Buffer.concat([Buffer.from([0, 0, 0, 24]), Buffer.from('ftypheic', 'latin1'), Buffer.alloc(400)]);
    expect(await inspect(heic)).toMatchObject({ type: null, reason: expect.stringMatching(/^HEIF\/AVIF images/) });
    const pdf = Buffer.from('%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<< /Type /Catalog >>\nendobj\n', 'latin1');
    expect(await inspect(pdf)).toMatchObject({ type: null, contentType: null, document: 'application/pdf',
      reason: expect.stringMatching(/not PNG, JPEG, WebP, GIF, MP4, MOV or WebM \(they look like application\/pdf\)/) });
    expect(await inspect(Buffer.from('a text file that mentions application/pdf\n'))).toMatchObject({ type: null, document: null });
    expect(await inspect(file('still.png'))).toMatchObject({ type: 'image', document: null });
  });
});

describe('inspect: truncated, damaged and random bytes are refused, never thrown', () => {
  it.each([
    ['nothing', Buffer.alloc(0)],
    ['text', Buffer.from('not an image, not a video, just text '.repeat(10))],
    ['zeros', Buffer.alloc(10_000)],
    ['a PNG cut inside its header', file('still.png').subarray(0, 20)],
    ['a JPEG cut before its frame header', file('landscape.jpg').subarray(0, 40)],
    ['a GIF cut after its signature', file('anim.gif').subarray(0, 7)],
    ['a WebP cut inside its first chunk', file('still.webp').subarray(0, 22)],
    ['an MP4 cut before its moov (moov at the end)', file('clip.mp4').subarray(0, 3000)],
    ['an MP4 cut inside its moov', file('rotated-270-faststart.mp4').subarray(0, 600)],
    ['a MOV of only ftyp', file('clip.mov').subarray(0, 20)],
    ['a WebM cut inside its EBML header', file('clip.webm').subarray(0, 30)],
    ['an MP4 whose moov has no track', isoBoxes(['ftyp', Buffer.from('isom\0\0\x02\0isomiso2', 'latin1')], ['moov', isoBoxes(['mvhd', mvhd()])])],
    ['an ftyp box claiming 4 GiB', Buffer.concat([Buffer.from([0xff, 0xff, 0xff, 0xff]), Buffer.from('ftypisom', 'latin1'), Buffer.alloc(100, 0xab)])],
  ])('%s', async (_name, bytes) => {
    const r = await inspect(bytes, 13);
    wellFormed(r, bytes);
    expect(r.type).toBeNull();
    expect(r.reason).toMatch(/truncated|damaged|not PNG|no readable|no tracks/);
  });

  it('property: any bytes, alone or after a real signature, or a real file with bytes changed, give facts or a reason', async () => {
    const signatures = [
      Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.from([0xff, 0xd8, 0xff]), Buffer.from('GIF89a', 'latin1'),
      Buffer.from('RIFF\0\0\0\0WEBPVP8 ', 'latin1'), Buffer.from('\0\0\0\x18ftypisom\0\0\x02\0isomiso2', 'latin1'),
      Buffer.from('\0\0\0\x14ftypqt  \0\0\x02\0qt  ', 'latin1'), Buffer.from([0x1a, 0x45, 0xdf, 0xa3, 0x84, 0x42, 0x82, 0x84, 0x77, 0x65, 0x62, 0x6d]),
    ];
    const real = FILES.map(([name]) => file(name));
    const inputs = fc.oneof(
      fc.uint8Array({ maxLength: 4096 }).map((a) => Buffer.from(a)),
      fc.tuple(fc.constantFrom(...signatures), fc.uint8Array({ maxLength: 4096 })).map(([s, a]) => Buffer.concat([s, a])),
      fc.tuple(fc.constantFrom(...real), fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 8 }), fc.nat())
        .map(([bytes, edits, cut]) => {
          const b = Buffer.from(bytes);
          for (const [at, v] of edits) b[at % b.length] = v;
          return b.subarray(0, b.length - (cut % 64));
        }),
    );
    await fc.assert(fc.asyncProperty(inputs, fc.integer({ min: 1, max: 5000 }), async (bytes, size) => {
      wellFormed(await inspect(bytes, size), bytes);
    }), { numRuns: Number(process.env.FUZZ_RUNS ?? 300), seed: Number(process.env.FUZZ_SEED ?? 16) });
  });
});

describe('the complete-upload path', () => {
  let server: TestServer;
  let api: ReturnType<typeof client>;
  let o: Awaited<ReturnType<typeof signup>>;

  beforeAll(async () => {
    server = await startTestServer('inspect');
    api = client(server);
    o = await signup(api);
  });
  afterAll(async () => {
    await server?.close();
  });

  it('stores the displayed dimensions of a rotated photo and a rotated video', async () => {
    const photo = await upload(api, o.token, o.workspaceId, file('orientation-6.jpg'), { filename: 'portrait.jpg', contentType: 'image/jpeg' });
    expect(photo.media).toMatchObject({ type: 'image', contentType: 'image/jpeg', width: 300, height: 400, durationMs: null });
    const video = await upload(api, o.token, o.workspaceId, file('rotated-90.mp4'), { filename: 'portrait.mp4', contentType: 'video/mp4' });
    expect(video.media).toMatchObject({ type: 'video', contentType: 'video/mp4', width: 48, height: 64, durationMs: 1000 });
  });

  it('a truncated video is refused with 415 and the reason, not a 500', async () => {
    const cut = file('clip.mp4').subarray(0, 3000);
    const { session, put } = await startUpload(api, o.token, o.workspaceId, cut, 'video/mp4', 'cut.mp4');
    expect(put.status).toBe(200);
    const r = await api.post(`/v1/workspaces/${o.workspaceId}/media/upload/${session.sessionId}/complete`, undefined, { token: o.token });
    expect([r.status, r.body.error.code]).toEqual([415, 'UNSUPPORTED_MEDIA_FORMAT']);
    expect(r.body.error.message).toMatch(/MP4 file has no readable movie header/);
  });
});
