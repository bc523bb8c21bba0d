// Real media bytes, built here so the tests need no binary files: a PNG
// (zlib-compressed scanlines, CRC'd chunks), a GIF89a (LZW), a baseline
// JPEG (flat grey, Huffman-coded DC/EOB blocks), a lossless WebP (VP8L), an
// MP4/MOV (ftyp, mdat, moov with mvhd, trak/tkhd, mdia/mdhd/hdlr) and a WebM
// (EBML header, Segment with Info, Tracks and a Cluster). Plus the helpers
// that drive an upload through the API and the signed URL.
import { createHash } from 'node:crypto';
import { crc32, deflateSync } from 'node:zlib';
import { expect } from 'vitest';
import type { client } from '../support/http.ts';

export const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

// ---------------------------------------------------------------------------
// PNG
// ---------------------------------------------------------------------------
function pngChunk(type: string, data: Buffer): Buffer {
  const len = Buffer.alloc(4);
  len.writeUInt32BE(data.length);
  const td = Buffer.concat([Buffer.from(type, 'latin1'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(td) >>> 0);
  return Buffer.concat([len, td, crc]);
}

/** An RGB PNG with a gradient, so the compressed bytes are not trivial. */
export function png(width: number, height: number, seed = 0): Buffer {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 2; // truecolour
  const raw = Buffer.alloc((width * 3 + 1) * height);
  for (let y = 0; y < height; y++) {
    const row = y * (width * 3 + 1);
    raw[row] = 0; // filter: none
    for (let x = 0; x < width; x++) {
      raw[row + 1 + x * 3] = (x * 7 + seed) & 0xff;
      raw[row + 2 + x * 3] = (y * 5 + seed) & 0xff;
      raw[row + 3 + x * 3] = (x * y + seed) & 0xff;
    }
  }
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    pngChunk('IHDR', ihdr),
    pngChunk('IDAT', deflateSync(raw)),
    pngChunk('IEND', Buffer.alloc(0)),
  ]);
}

// ---------------------------------------------------------------------------
// GIF89a: 4-colour palette, LZW with a clear code before every pixel (so the
// code size stays 3 bits: valid, if not compact)
// ---------------------------------------------------------------------------
export function gif(width: number, height: number): Buffer {
  const header = Buffer.alloc(13);
  header.write('GIF89a', 0, 'latin1');
  header.writeUInt16LE(width, 6);
  header.writeUInt16LE(height, 8);
  header[10] = 0x81; // global colour table, 2^(1+1) = 4 entries
  const palette = Buffer.from([0, 0, 0, 255, 0, 0, 0, 255, 0, 0, 0, 255]);
  const descriptor = Buffer.alloc(10);
  descriptor[0] = 0x2c;
  descriptor.writeUInt16LE(width, 5);
  descriptor.writeUInt16LE(height, 7);
  const codes: number[] = [];
  for (let i = 0; i < width * height; i++) codes.push(4, i % 4); // clear, pixel
  codes.push(5); // end of information
  const bytes: number[] = [];
  let acc = 0;
  let bits = 0;
  for (const c of codes) {
    acc |= c << bits;
    bits += 3;
    while (bits >= 8) {
      bytes.push(acc & 0xff);
      acc >>= 8;
      bits -= 8;
    }
  }
  if (bits > 0) bytes.push(acc & 0xff);
  const blocks: Buffer[] = [Buffer.from([2])]; // LZW minimum code size
  for (let i = 0; i < bytes.length; i += 255) {
    const part = bytes.slice(i, i + 255);
    blocks.push(Buffer.from([part.length, ...part]));
  }
  blocks.push(Buffer.from([0]));
  return Buffer.concat([header, palette, descriptor, ...blocks, Buffer.from([0x3b])]);
}

// ---------------------------------------------------------------------------
// JPEG: baseline, one grey component, every 8x8 block flat (DC difference 0,
// then end-of-block), Huffman tables with one code each
// ---------------------------------------------------------------------------
function segment(marker: number, body: Buffer): Buffer {
  const head = Buffer.alloc(4);
  head[0] = 0xff;
  head[1] = marker;
  head.writeUInt16BE(body.length + 2, 2);
  return Buffer.concat([head, body]);
}

export function jpeg(width: number, height: number): Buffer {
  const app0 = Buffer.from([0x4a, 0x46, 0x49, 0x46, 0x00, 1, 1, 0, 0, 1, 0, 1, 0, 0]);
  const dqt = Buffer.concat([Buffer.from([0x00]), Buffer.alloc(64, 1)]);
  const sof = Buffer.alloc(9);
  sof[0] = 8;
  sof.writeUInt16BE(height, 1);
  sof.writeUInt16BE(width, 3);
  sof[5] = 1; // components
  sof[6] = 1; // id
  sof[7] = 0x11; // sampling
  sof[8] = 0; // quantisation table
  const counts = (n: number) => {
    const c = Buffer.alloc(16);
    c[0] = n;
    return c;
  };
  const dhtDc = Buffer.concat([Buffer.from([0x00]), counts(1), Buffer.from([0x00])]);
  const dhtAc = Buffer.concat([Buffer.from([0x10]), counts(1), Buffer.from([0x00])]);
  const sos = Buffer.from([1, 1, 0x00, 0, 63, 0]);
  const blocks = Math.ceil(width / 8) * Math.ceil(height / 8);
  const bitCount = blocks * 2; // '0' (DC category 0) + '0' (EOB)
  const data = Buffer.alloc(Math.ceil(bitCount / 8));
  if (bitCount % 8) data[data.length - 1] = (1 << (8 - (bitCount % 8))) - 1; // pad with ones
  return Buffer.concat([
    Buffer.from([0xff, 0xd8]),
    segment(0xe0, app0),
    segment(0xdb, dqt),
    segment(0xc0, sof),
    segment(0xc4, dhtDc),
    segment(0xc4, dhtAc),
    segment(0xda, sos),
    data,
    Buffer.from([0xff, 0xd9]),
  ]);
}

// ---------------------------------------------------------------------------
// WebP lossless (VP8L): no transforms, five single-symbol prefix codes
// ---------------------------------------------------------------------------
export function webp(width: number, height: number): Buffer {
  const bits: number[] = [];
  const put = (value: number, n: number) => {
    for (let i = 0; i < n; i++) bits.push((value >>> i) & 1);
  };
  put(width - 1, 14);
  put(height - 1, 14);
  put(0, 1); // alpha unused
  put(0, 3); // version
  put(0, 1); // no transform
  put(0, 1); // no colour cache
  put(0, 1); // no meta prefix codes
  for (let i = 0; i < 5; i++) {
    put(1, 1); // simple code
    put(0, 1); // one symbol
    put(0, 1); // 1-bit symbol
    put(0, 1); // symbol 0
  }
  const body = Buffer.alloc(1 + Math.ceil(bits.length / 8));
  body[0] = 0x2f;
  bits.forEach((b, i) => {
    body[1 + (i >> 3)] |= b << (i & 7);
  });
  const chunk = Buffer.concat([Buffer.from('VP8L', 'latin1'), Buffer.alloc(4), body, body.length % 2 ? Buffer.alloc(1) : Buffer.alloc(0)]);
  chunk.writeUInt32LE(body.length, 4);
  const riff = Buffer.concat([Buffer.from('RIFF', 'latin1'), Buffer.alloc(4), Buffer.from('WEBP', 'latin1'), chunk]);
  riff.writeUInt32LE(riff.length - 8, 4);
  return riff;
}

// ---------------------------------------------------------------------------
// ISO base media (MP4 / MOV)
// ---------------------------------------------------------------------------
function box(type: string, ...parts: Buffer[]): Buffer {
  const body = Buffer.concat(parts);
  const head = Buffer.alloc(8);
  head.writeUInt32BE(body.length + 8);
  head.write(type, 4, 'latin1');
  return Buffer.concat([head, body]);
}

const u32 = (...values: number[]) => {
  const b = Buffer.alloc(values.length * 4);
  values.forEach((v, i) => b.writeUInt32BE(v >>> 0, i * 4));
  return b;
};
const MATRIX = u32(0x00010000, 0, 0, 0, 0x00010000, 0, 0, 0, 0x40000000);

export function mp4(opts: { width: number; height: number; durationMs: number; moovAtEnd?: boolean; quicktime?: boolean; mdatBytes?: number }): Buffer {
  const ftyp = opts.quicktime
    ? box('ftyp', Buffer.from('qt  ', 'latin1'), u32(0x200), Buffer.from('qt  ', 'latin1'))
    : box('ftyp', Buffer.from('isom', 'latin1'), u32(0x200), Buffer.from('isomiso2avc1mp41', 'latin1'));
  const timescale = 1000;
  const mvhd = box('mvhd', u32(0, 0, 0, timescale, opts.durationMs, 0x00010000), Buffer.from([0x01, 0x00, 0, 0]), Buffer.alloc(8), MATRIX, Buffer.alloc(24), u32(2));
  const tkhd = box('tkhd', u32(0x00000003, 0, 0, 1, 0, opts.durationMs), Buffer.alloc(8), Buffer.from([0, 0, 0, 0, 0, 0, 0, 0]), MATRIX,
    u32(opts.width * 65536, opts.height * 65536));
  const mdhd = box('mdhd', u32(0, 0, 0, 12800, Math.round((opts.durationMs * 12800) / 1000)), Buffer.from([0x55, 0xc4, 0, 0]));
  const hdlr = box('hdlr', u32(0, 0), Buffer.from('vide', 'latin1'), Buffer.alloc(12), Buffer.from('VideoHandler\0', 'latin1'));
  // A sound track first, without dimensions: the video track must still be found.
  const soundTkhd = box('tkhd', u32(0x00000003, 0, 0, 2, 0, opts.durationMs), Buffer.alloc(8), Buffer.from([0, 0, 0, 1, 1, 0, 0, 0]), MATRIX, u32(0, 0));
  const soundHdlr = box('hdlr', u32(0, 0), Buffer.from('soun', 'latin1'), Buffer.alloc(12), Buffer.from('SoundHandler\0', 'latin1'));
  const moov = box('moov', mvhd, box('trak', soundTkhd, box('mdia', mdhd, soundHdlr)), box('trak', tkhd, box('mdia', mdhd, hdlr)));
  const payload = Buffer.alloc(opts.mdatBytes ?? 4096);
  for (let i = 0; i < payload.length; i++) payload[i] = (i * 31) & 0xff;
  const mdat = box('mdat', payload);
  return opts.moovAtEnd ? Buffer.concat([ftyp, mdat, moov]) : Buffer.concat([ftyp, moov, mdat]);
}

// ---------------------------------------------------------------------------
// WebM (EBML)
// ---------------------------------------------------------------------------
function ebmlSize(n: number): Buffer {
  // 8-byte size field: 0x01 marker, then 7 bytes.
  const b = Buffer.alloc(8);
  b[0] = 0x01;
  b.writeUIntBE(n, 2, 6);
  return b;
}
function el(id: number, ...parts: Buffer[]): Buffer {
  const body = Buffer.concat(parts);
  const idBytes = Buffer.from(id.toString(16).padStart(2, '0').match(/../g)!.map((h) => parseInt(h, 16)));
  return Buffer.concat([idBytes, ebmlSize(body.length), body]);
}
const uintBytes = (n: number, len = 4) => {
  const b = Buffer.alloc(len);
  b.writeUIntBE(n, 0, len);
  return b;
};

export function webm(opts: { width: number; height: number; durationMs: number }): Buffer {
  const duration = Buffer.alloc(8);
  duration.writeDoubleBE(opts.durationMs); // in TimecodeScale units (1 ms)
  const header = el(0x1a45dfa3, el(0x4286, uintBytes(1, 1)), el(0x42f7, uintBytes(1, 1)), el(0x4282, Buffer.from('webm', 'latin1')),
    el(0x4287, uintBytes(4, 1)), el(0x4285, uintBytes(2, 1)));
  const info = el(0x1549a966, el(0x2ad7b1, uintBytes(1_000_000, 3)), el(0x4489, duration), el(0x4d80, Buffer.from('pressroom-test', 'latin1')));
  const video = el(0xe0, el(0xb0, uintBytes(opts.width, 2)), el(0xba, uintBytes(opts.height, 2)));
  const tracks = el(0x1654ae6b, el(0xae, el(0xd7, uintBytes(1, 1)), el(0x83, uintBytes(1, 1)), el(0x86, Buffer.from('V_VP8', 'latin1')), video));
  const cluster = el(0x1f43b675, el(0xe7, uintBytes(0, 1)), el(0xa3, Buffer.from([0x81, 0x00, 0x00, 0x80]), Buffer.alloc(64, 0x42)));
  return Buffer.concat([header, el(0x18538067, info, tracks, cluster)]);
}

// ---------------------------------------------------------------------------
// Driving uploads
// ---------------------------------------------------------------------------
export type Api = ReturnType<typeof client>;

export interface Uploaded {
  session: any;
  media: any;
}

/** init -> PUT to the signed URL -> complete; asserts every step succeeded. */
export async function upload(api: Api, token: string, ws: string, bytes: Buffer, opts: { filename?: string; contentType?: string; folderId?: string | null; altText?: string } = {}): Promise<Uploaded> {
  const init = await api.post(`/v1/workspaces/${ws}/media/upload`, {
    filename: opts.filename ?? 'file.png',
    contentType: opts.contentType ?? 'image/png',
    size: bytes.length,
    ...(opts.folderId !== undefined ? { folderId: opts.folderId } : {}),
    ...(opts.altText !== undefined ? { altText: opts.altText } : {}),
  }, { token });
  expect(init.status, JSON.stringify(init.body)).toBe(201);
  const session = init.body.data;
  const put = await fetch(session.uploadUrl, { method: session.method, headers: session.headers, body: bytes });
  expect(put.status, await put.clone().text()).toBe(200);
  await put.arrayBuffer();
  const done = await api.post(`/v1/workspaces/${ws}/media/upload/${session.sessionId}/complete`, undefined, { token });
  expect(done.status, JSON.stringify(done.body)).toBe(200);
  return { session, media: done.body.data };
}

/** init + PUT only. */
export async function startUpload(api: Api, token: string, ws: string, bytes: Buffer, contentType = 'image/png', filename = 'file.bin') {
  const init = await api.post(`/v1/workspaces/${ws}/media/upload`, { filename, contentType, size: bytes.length }, { token });
  expect(init.status, JSON.stringify(init.body)).toBe(201);
  const session = init.body.data;
  const put = await fetch(session.uploadUrl, { method: 'PUT', headers: session.headers, body: bytes });
  const putBody = await put.text();
  return { session, put: { status: put.status, body: putBody ? JSON.parse(putBody) : null } };
}

export async function fetchBytes(url: string, init: RequestInit = {}) {
  const res = await fetch(url, init);
  const body = Buffer.from(await res.arrayBuffer());
  return { status: res.status, headers: res.headers, body };
}
