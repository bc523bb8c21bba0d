// What the bytes are: the format from magic numbers (never the file name or
// the declared type), dimensions and, for video, duration where the bytes
// allow, the size and the SHA-256. Streaming: memory stays bounded (the
// first MiB, plus an MP4/MOV "moov" box of at most 64 MiB wherever it sits).
import { createHash } from 'node:crypto';

export type MediaType = 'image' | 'video' | 'gif';

export interface MediaFacts {
  /** null: not a supported format (see reason). */
  type: MediaType | null;
  contentType: string | null;
  format: 'png' | 'jpeg' | 'gif' | 'webp' | 'mp4' | 'quicktime' | 'webm' | null;
  width: number | null;
  height: number | null;
  durationMs: number | null;
  reason: string | null;
}

export interface Inspection extends MediaFacts {
  size: number;
  sha256: string;
}

const HEAD_MAX = 1024 * 1024;
const MOOV_MAX = 64 * 1024 * 1024;
const INT_MAX = 2_147_483_647;

const dim = (n: number | null | undefined): number | null => (n && Number.isFinite(n) && n > 0 && n <= INT_MAX ? Math.floor(n) : null);
const ms = (n: number | null | undefined): number | null => (n !== null && n !== undefined && Number.isFinite(n) && n >= 0 && n <= INT_MAX ? Math.round(n) : null);

// ---------------------------------------------------------------------------
// Still images
// ---------------------------------------------------------------------------
function png(b: Buffer): Pick<MediaFacts, 'width' | 'height'> {
  if (b.length >= 24 && b.toString('latin1', 12, 16) === 'IHDR') return { width: b.readUInt32BE(16), height: b.readUInt32BE(20) };
  return { width: null, height: null };
}

function gif(b: Buffer): Pick<MediaFacts, 'width' | 'height'> {
  return b.length >= 10 ? { width: b.readUInt16LE(6), height: b.readUInt16LE(8) } : { width: null, height: null };
}

/** Walks the JPEG segments to the first start-of-frame marker. */
function jpeg(b: Buffer): Pick<MediaFacts, 'width' | 'height'> {
  let i = 2;
  while (i + 4 <= b.length) {
    if (b[i] !== 0xff) return { width: null, height: null };
    let marker = b[i + 1];
    while (marker === 0xff && i + 2 < b.length) {
      i++;
      marker = b[i + 1];
    }
    // Markers without a length.
    if (marker === 0x01 || (marker >= 0xd0 && marker <= 0xd8)) {
      i += 2;
      continue;
    }
    if (marker === 0xd9 || marker === 0xda) break; // end of image, start of scan
    const len = b.readUInt16BE(i + 2);
    if (len < 2) break;
    const isSof = marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc;
    if (isSof && i + 9 <= b.length) return { height: b.readUInt16BE(i + 5), width: b.readUInt16BE(i + 7) };
    i += 2 + len;
  }
  return { width: null, height: null };
}

function webp(b: Buffer): Pick<MediaFacts, 'width' | 'height'> {
  const chunk = b.toString('latin1', 12, 16);
  if (chunk === 'VP8 ' && b.length >= 30 && b[23] === 0x9d && b[24] === 0x01 && b[25] === 0x2a) {
    return { width: b.readUInt16LE(26) & 0x3fff, height: b.readUInt16LE(28) & 0x3fff };
  }
  if (chunk === 'VP8L' && b.length >= 25 && b[20] === 0x2f) {
    const bits = b.readUInt32LE(21);
    return { width: (bits & 0x3fff) + 1, height: ((bits >>> 14) & 0x3fff) + 1 };
  }
  if (chunk === 'VP8X' && b.length >= 30) return { width: b.readUIntLE(24, 3) + 1, height: b.readUIntLE(27, 3) + 1 };
  return { width: null, height: null };
}

// ---------------------------------------------------------------------------
// ISO base media (MP4, MOV): the top-level boxes, streamed
// ---------------------------------------------------------------------------
class TopLevelBoxes {
  private seen = 0; // bytes consumed so far
  private next = 0; // absolute offset of the next box header
  private header: Buffer[] = [];
  private headerLen = 0;
  private capture: { type: string; end: number; parts: Buffer[] } | null = null;
  readonly boxes: { type: string; size: number }[] = [];
  moov: Buffer | null = null;
  broken = false;

  update(chunk: Buffer) {
    let i = 0;
    while (i < chunk.length && !this.broken) {
      const abs = this.seen + i;
      if (this.capture) {
        const take = Math.min(chunk.length - i, this.capture.end - abs);
        this.capture.parts.push(chunk.subarray(i, i + take));
        i += take;
        if (abs + take === this.capture.end) {
          if (this.capture.type === 'moov') this.moov = Buffer.concat(this.capture.parts);
          this.capture = null;
        }
        continue;
      }
      if (abs < this.next) {
        i += Math.min(chunk.length - i, this.next - abs);
        continue;
      }
      // At a box header: 8 bytes, or 16 with a 64-bit size.
      const need = this.headerLen >= 8 && this.headerBytes().readUInt32BE(0) === 1 ? 16 : 8;
      const take = Math.min(chunk.length - i, need - this.headerLen);
      this.header.push(chunk.subarray(i, i + take));
      this.headerLen += take;
      i += take;
      if (this.headerLen < need) continue;
      const h = this.headerBytes();
      if (need === 8 && h.readUInt32BE(0) === 1) continue; // read the 64-bit size first
      const type = h.toString('latin1', 4, 8);
      let size = h.readUInt32BE(0);
      if (size === 1) size = Number(h.readBigUInt64BE(8));
      const start = this.next;
      const headerSize = need;
      this.header = [];
      this.headerLen = 0;
      if (size === 0) {
        // Extends to the end of the file.
        this.boxes.push({ type, size: -1 });
        this.next = Number.POSITIVE_INFINITY;
        continue;
      }
      if (size < headerSize || !/^[\x20-\x7e]{4}$/.test(type)) {
        this.broken = true;
        break;
      }
      this.boxes.push({ type, size });
      this.next = start + size;
      if (type === 'moov' && size - headerSize <= MOOV_MAX && !this.moov) {
        this.capture = { type, end: this.next, parts: [] };
      }
    }
    this.seen += chunk.length;
  }

  private headerBytes(): Buffer {
    if (this.header.length > 1) this.header = [Buffer.concat(this.header)];
    return this.header[0] ?? Buffer.alloc(0);
  }
}

/** Children of a box body: [type, body start, body end]. */
function* children(b: Buffer, start = 0, end = b.length): Generator<[string, number, number]> {
  let i = start;
  while (i + 8 <= end) {
    let size = b.readUInt32BE(i);
    const type = b.toString('latin1', i + 4, i + 8);
    let header = 8;
    if (size === 1) {
      if (i + 16 > end) return;
      size = Number(b.readBigUInt64BE(i + 8));
      header = 16;
    } else if (size === 0) size = end - i;
    if (size < header || i + size > end) return;
    yield [type, i + header, i + size];
    i += size;
  }
}

function isoFacts(moov: Buffer | null): Pick<MediaFacts, 'width' | 'height' | 'durationMs'> {
  let width: number | null = null;
  let height: number | null = null;
  let fallbackW: number | null = null;
  let fallbackH: number | null = null;
  let durationMs: number | null = null;
  if (!moov) return { width, height, durationMs };
  for (const [type, s, e] of children(moov)) {
    if (type === 'mvhd' && e - s >= 20) {
      const v = moov[s];
      const timescale = v === 1 ? moov.readUInt32BE(s + 20) : moov.readUInt32BE(s + 12);
      const duration = v === 1 ? Number(moov.readBigUInt64BE(s + 24)) : moov.readUInt32BE(s + 16);
      const unknown = v === 1 ? moov.readBigUInt64BE(s + 24) === 0xffffffffffffffffn : duration === 0xffffffff;
      if (timescale > 0 && !unknown) durationMs = ms((duration * 1000) / timescale);
    }
    if (type === 'trak') {
      let tw = 0;
      let th = 0;
      let handler = '';
      for (const [t2, s2, e2] of children(moov, s, e)) {
        if (t2 === 'tkhd') {
          const off = moov[s2] === 1 ? 88 : 76;
          if (e2 - s2 >= off + 8) {
            tw = moov.readUInt32BE(s2 + off) / 65536;
            th = moov.readUInt32BE(s2 + off + 4) / 65536;
          }
        }
        if (t2 === 'mdia') {
          for (const [t3, s3, e3] of children(moov, s2, e2)) {
            if (t3 === 'hdlr' && e3 - s3 >= 12) handler = moov.toString('latin1', s3 + 8, s3 + 12);
          }
        }
      }
      if (tw > 0 && th > 0) {
        if (handler === 'vide' && width === null) {
          width = dim(tw);
          height = dim(th);
        } else if (fallbackW === null) {
          fallbackW = dim(tw);
          fallbackH = dim(th);
        }
      }
    }
  }
  return { width: width ?? fallbackW, height: height ?? fallbackH, durationMs };
}

// ---------------------------------------------------------------------------
// WebM (EBML), from the first MiB
// ---------------------------------------------------------------------------
function vint(b: Buffer, i: number, keepMarker: boolean): { len: number; value: number; unknown: boolean } | null {
  if (i >= b.length) return null;
  const first = b[i];
  let len = 1;
  while (len <= 8 && !(first & (0x80 >> (len - 1)))) len++;
  if (len > 8 || i + len > b.length) return null;
  let value = keepMarker ? first : first & (0xff >> len);
  let allOnes = (first & (0xff >> len)) === 0xff >> len;
  for (let k = 1; k < len; k++) {
    value = value * 256 + b[i + k];
    if (b[i + k] !== 0xff) allOnes = false;
  }
  return { len, value, unknown: !keepMarker && allOnes };
}

const EBML = { header: 0x1a45dfa3, docType: 0x4282, segment: 0x18538067, info: 0x1549a966, timecodeScale: 0x2ad7b1, duration: 0x4489,
  tracks: 0x1654ae6b, trackEntry: 0xae, trackType: 0x83, video: 0xe0, pixelWidth: 0xb0, pixelHeight: 0xba, cluster: 0x1f43b675 };

function* elements(b: Buffer, start: number, end: number): Generator<{ id: number; s: number; e: number; unknown: boolean }> {
  let i = start;
  while (i < end) {
    const id = vint(b, i, true);
    if (!id) return;
    const size = vint(b, i + id.len, false);
    if (!size) return;
    const s = i + id.len + size.len;
    const e = size.unknown ? end : Math.min(end, s + size.value);
    yield { id: id.value, s, e, unknown: size.unknown };
    if (size.unknown) return;
    i = s + size.value;
  }
}

function uint(b: Buffer, s: number, e: number): number {
  let v = 0;
  for (let k = s; k < e; k++) v = v * 256 + b[k];
  return v;
}

function webmDocType(b: Buffer): string | null {
  for (const el of elements(b, 0, b.length)) {
    if (el.id !== EBML.header) return null;
    for (const c of elements(b, el.s, el.e)) if (c.id === EBML.docType) return b.toString('latin1', c.s, c.e).replace(/\0+$/, '');
    return null;
  }
  return null;
}

function webmFacts(b: Buffer): Pick<MediaFacts, 'width' | 'height' | 'durationMs'> {
  let scale = 1_000_000;
  let duration: number | null = null;
  let width: number | null = null;
  let height: number | null = null;
  for (const top of elements(b, 0, b.length)) {
    if (top.id !== EBML.segment) continue;
    for (const el of elements(b, top.s, top.e)) {
      if (el.id === EBML.cluster) break;
      if (el.id === EBML.info) {
        for (const c of elements(b, el.s, el.e)) {
          if (c.id === EBML.timecodeScale) scale = uint(b, c.s, c.e) || scale;
          if (c.id === EBML.duration) duration = c.e - c.s === 4 ? b.readFloatBE(c.s) : c.e - c.s === 8 ? b.readDoubleBE(c.s) : null;
        }
      }
      if (el.id === EBML.tracks) {
        for (const entry of elements(b, el.s, el.e)) {
          if (entry.id !== EBML.trackEntry || width !== null) continue;
          for (const c of elements(b, entry.s, entry.e)) {
            if (c.id !== EBML.video) continue;
            for (const v of elements(b, c.s, c.e)) {
              if (v.id === EBML.pixelWidth) width = dim(uint(b, v.s, v.e));
              if (v.id === EBML.pixelHeight) height = dim(uint(b, v.s, v.e));
            }
          }
        }
      }
    }
  }
  return { width, height, durationMs: duration === null ? null : ms((duration * scale) / 1e6) };
}

// ---------------------------------------------------------------------------
// Sniffing
// ---------------------------------------------------------------------------
const HEIF_BRANDS = new Set(['heic', 'heix', 'hevc', 'hevx', 'heim', 'heis', 'mif1', 'msf1', 'avif', 'avis']);

const none = (reason: string): MediaFacts => ({ type: null, contentType: null, format: null, width: null, height: null, durationMs: null, reason });

/** Decides the format from the first bytes; measures what the head allows. */
export function sniff(head: Buffer, moov: Buffer | null = null): MediaFacts {
  const b = head;
  const base = { durationMs: null, reason: null };
  if (b.length >= 8 && b.readUInt32BE(0) === 0x89504e47 && b.readUInt32BE(4) === 0x0d0a1a0a) {
    return { type: 'image', contentType: 'image/png', format: 'png', ...base, ...png(b) };
  }
  if (b.length >= 3 && b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff) {
    return { type: 'image', contentType: 'image/jpeg', format: 'jpeg', ...base, ...jpeg(b) };
  }
  if (b.length >= 6 && (b.toString('latin1', 0, 6) === 'GIF87a' || b.toString('latin1', 0, 6) === 'GIF89a')) {
    return { type: 'gif', contentType: 'image/gif', format: 'gif', ...base, ...gif(b) };
  }
  if (b.length >= 16 && b.toString('latin1', 0, 4) === 'RIFF' && b.toString('latin1', 8, 12) === 'WEBP') {
    return { type: 'image', contentType: 'image/webp', format: 'webp', ...base, ...webp(b) };
  }
  if (b.length >= 12 && b.toString('latin1', 4, 8) === 'ftyp') {
    const brand = b.toString('latin1', 8, 12);
    if (HEIF_BRANDS.has(brand)) return none(`HEIF/AVIF images (brand ${brand.trim()}) are not supported; upload PNG, JPEG, WebP or GIF`);
    const quicktime = brand === 'qt  ';
    return { type: 'video', contentType: quicktime ? 'video/quicktime' : 'video/mp4', format: quicktime ? 'quicktime' : 'mp4', reason: null, ...isoFacts(moov) };
  }
  if (b.length >= 8 && ['moov', 'mdat', 'wide'].includes(b.toString('latin1', 4, 8))) {
    // Old QuickTime files without ftyp.
    return { type: 'video', contentType: 'video/quicktime', format: 'quicktime', reason: null, ...isoFacts(moov) };
  }
  if (b.length >= 4 && b.readUInt32BE(0) === EBML.header) {
    const docType = webmDocType(b);
    if (docType !== 'webm') return none(`Matroska files (doc type ${docType ?? 'unknown'}) are not supported; upload WebM, MP4 or MOV`);
    return { type: 'video', contentType: 'video/webm', format: 'webm', reason: null, ...webmFacts(b) };
  }
  return none('the bytes are not PNG, JPEG, WebP, GIF, MP4, MOV or WebM');
}

/** Feed it every chunk in order, then call result(). */
export class MediaInspector {
  private readonly hash = createHash('sha256');
  private size = 0;
  private head: Buffer[] = [];
  private headLen = 0;
  private iso: TopLevelBoxes | null = null;
  private decided = false;

  update(chunk: Buffer) {
    this.hash.update(chunk);
    const before = this.size;
    this.size += chunk.length;
    if (this.headLen < HEAD_MAX) {
      const take = chunk.subarray(0, HEAD_MAX - this.headLen);
      this.head.push(take);
      this.headLen += take.length;
    }
    if (this.iso) {
      this.iso.update(chunk);
      return;
    }
    if (!this.decided && this.headLen >= 12) {
      this.decided = true;
      // The head holds bytes [0, headLen); this chunk covers [before, size).
      const h = Buffer.concat(this.head);
      this.head = [h];
      const t = h.toString('latin1', 4, 8);
      if (t === 'ftyp' || t === 'moov' || t === 'mdat' || t === 'wide') {
        this.iso = new TopLevelBoxes();
        this.iso.update(h);
        if (this.size > this.headLen) this.iso.update(chunk.subarray(this.headLen - before));
      }
    }
  }

  result(): Inspection {
    const head = Buffer.concat(this.head);
    const facts = sniff(head, this.iso?.moov ?? null);
    return { ...facts, size: this.size, sha256: this.hash.digest('hex') };
  }
}

/** Inspects an async iterable of chunks (a file stream, a fetch body). */
export async function inspectStream(source: AsyncIterable<Uint8Array>): Promise<Inspection> {
  const inspector = new MediaInspector();
  for await (const chunk of source) inspector.update(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength));
  return inspector.result();
}
