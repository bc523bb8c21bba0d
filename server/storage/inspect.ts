// What the bytes are: the format from the bytes (never the file name or the
// declared type), the displayed dimensions and, for video, the duration; the
// size and the SHA-256. Parsing untrusted bytes is left to maintained
// libraries: file-type decides the format, image-size measures still images
// (EXIF orientation 5-8 swaps width and height), mp4box reads MP4/MOV
// (mvhd duration, the video track's tkhd size and display matrix: a 90° or
// 270° rotation swaps width and height), music-metadata reads WebM.
// Streaming, with bounded memory: the first MiB is kept for file-type,
// image-size and WebM; an MP4/MOV goes through mp4box as it arrives, which
// skips mdat and keeps at most MOOV_MAX bytes waiting for the moov box.
// Nothing here throws on bad bytes: they come back as type null with a reason
// (the complete-upload path answers 415 UNSUPPORTED_MEDIA_FORMAT with it).
// A PDF is no media (type null, the same reason) but says so in `document`,
// for the review comment attachments (server/routes/reviews.ts) that take it.
import { createHash } from 'node:crypto';
import { fileTypeFromBuffer } from 'file-type';
import { imageSize } from 'image-size';
import { createFile, MP4BoxBuffer, type ISOFile } from 'mp4box';
import { parseBuffer } from 'music-metadata';

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
  /**
   * A document format file-type recognised from the bytes (only PDF): not
   * media, so type stays null and reason says why the media library refuses
   * it; review comment attachments accept it.
   */
  document: 'application/pdf' | null;
}

export interface Inspection extends MediaFacts {
  size: number;
  sha256: string;
}

const HEAD_MAX = 1024 * 1024;
const MOOV_MAX = 64 * 1024 * 1024;
const INT_MAX = 2_147_483_647;

/** A whole number in 1..INT_MAX after rounding, else null (damaged headers give 0.3 px or 0.4 ms). */
const positive = (n: number | null | undefined, round: (x: number) => number): number | null => {
  if (n === null || n === undefined || !Number.isFinite(n)) return null;
  const v = round(n);
  return v > 0 && v <= INT_MAX ? v : null;
};
const dim = (n: number | null | undefined): number | null => positive(n, Math.floor);
const ms = (n: number | null | undefined): number | null => positive(n, Math.round);
const message = (e: unknown) => (e instanceof Error ? e.message : String(e));

const none = (reason: string): MediaFacts => ({ type: null, contentType: null, format: null, width: null, height: null, durationMs: null, reason, document: null });

// ---------------------------------------------------------------------------
// Still images: image-size
// ---------------------------------------------------------------------------
const IMAGES = {
  'image/png': { type: 'image', format: 'png', name: 'PNG' },
  'image/jpeg': { type: 'image', format: 'jpeg', name: 'JPEG' },
  'image/webp': { type: 'image', format: 'webp', name: 'WebP' },
  'image/gif': { type: 'gif', format: 'gif', name: 'GIF' },
} as const;

function image(head: Buffer, mime: keyof typeof IMAGES): MediaFacts {
  const kind = IMAGES[mime];
  let size: ReturnType<typeof imageSize>;
  try {
    // A copy: image-size reads the whole ArrayBuffer behind a view, not only the view.
    size = imageSize(new Uint8Array(head));
  } catch (e) {
    return none(`the ${kind.name} image is truncated or damaged (${message(e)})`);
  }
  let width = dim(size.width);
  let height = dim(size.height);
  if (width === null || height === null) return none(`the ${kind.name} image has no readable dimensions`);
  // EXIF orientations 5-8 turn the stored image by 90° or 270° to display it.
  if (size.orientation !== undefined && size.orientation >= 5 && size.orientation <= 8) [width, height] = [height, width];
  return { type: kind.type, contentType: mime, format: kind.format, width, height, durationMs: null, reason: null, document: null };
}

// ---------------------------------------------------------------------------
// ISO base media (MP4, MOV): mp4box, fed as the bytes arrive
// ---------------------------------------------------------------------------
const ISO_TOP_LEVEL = new Set(['ftyp', 'moov', 'mdat', 'wide', 'free', 'skip', 'pnot']);

/** mp4box reports some oddities (e.g. QuickTime's "©swr" atom) on the console; they are not ours to print. */
function quietly<T>(f: () => T): T {
  const saved = [console.error, console.warn, console.info, console.debug];
  const mute = () => {};
  console.error = console.warn = console.info = console.debug = mute;
  try {
    return f();
  } finally {
    [console.error, console.warn, console.info, console.debug] = saved;
  }
}

interface IsoMovie {
  durationMs: number | null;
  width: number | null;
  height: number | null;
  /** trak boxes with a tkhd */
  tracks: number;
}

class IsoReader {
  private readonly file: ISOFile = createFile();
  private offset = 0;
  private done = false;
  failure: string | null = null;

  update(chunk: Buffer) {
    if (this.done) return;
    const start = this.offset;
    this.offset += chunk.length;
    try {
      const ab = MP4BoxBuffer.fromArrayBuffer(chunk.buffer.slice(chunk.byteOffset, chunk.byteOffset + chunk.byteLength), start);
      quietly(() => this.file.appendBuffer(ab));
    } catch (e) {
      // Once the moov is parsed, mp4box goes on to build sample tables; a
      // failure there does not take away what the moov says.
      if (!this.file.moov) this.failure = message(e);
      this.done = true;
    }
    if (this.file.moov) this.done = true;
    else if (this.held() > MOOV_MAX) {
      this.failure = `no moov box within ${MOOV_MAX} buffered bytes`;
      this.done = true;
    }
  }

  private held(): number {
    const buffers = (this.file as unknown as { stream?: { buffers?: ArrayBuffer[] } }).stream?.buffers ?? [];
    return buffers.reduce((n, b) => n + b.byteLength, 0);
  }

  movie(): IsoMovie | null {
    const moov = this.file.moov;
    if (!moov?.mvhd) return null;
    const { mvhd } = moov;
    // All ones: "duration unknown".
    const unknown = mvhd.duration === 0xffffffff || mvhd.duration >= Number.MAX_SAFE_INTEGER;
    let duration = mvhd.timescale > 0 && !unknown ? (mvhd.duration * 1000) / mvhd.timescale : null;
    const fragment = moov.mvex?.mehd?.fragment_duration;
    if (!duration && fragment && mvhd.timescale > 0) duration = (fragment * 1000) / mvhd.timescale;
    let video: { width: number; height: number } | null = null;
    let other: { width: number; height: number } | null = null;
    let tracks = 0;
    for (const trak of moov.traks ?? []) {
      const tkhd = trak.tkhd;
      if (!tkhd) continue;
      tracks++;
      let width = dim(tkhd.width / 65536);
      let height = dim(tkhd.height / 65536);
      if (width === null || height === null) continue;
      // The display matrix [a b u; c d v; x y w]: (a, b) is the rotated x axis.
      const [a, b] = Array.from(tkhd.matrix ?? [65536, 0]);
      const degrees = ((Math.round((Math.atan2(b, a) * 180) / Math.PI) % 360) + 360) % 360;
      if (degrees === 90 || degrees === 270) [width, height] = [height, width];
      const facts = { width, height };
      if (trak.mdia?.hdlr?.handler === 'vide') video ??= facts;
      else other ??= facts;
    }
    const size = video ?? other;
    return { durationMs: ms(duration), width: size?.width ?? null, height: size?.height ?? null, tracks };
  }
}

function iso(iso: IsoReader | null, mime: 'video/mp4' | 'video/quicktime'): MediaFacts {
  const name = mime === 'video/mp4' ? 'MP4' : 'MOV';
  const movie = iso?.movie() ?? null;
  if (!movie) {
    return none(`the ${name} file has no readable movie header (moov box)${iso?.failure ? `: ${iso.failure}` : ''}; it is truncated or damaged`);
  }
  if (!movie.tracks) return none(`the ${name} file has no tracks; it is damaged`);
  const { tracks: _, ...facts } = movie;
  return { type: 'video', contentType: mime, format: mime === 'video/mp4' ? 'mp4' : 'quicktime', reason: null, document: null, ...facts };
}

// ---------------------------------------------------------------------------
// WebM: music-metadata, from the first MiB
// ---------------------------------------------------------------------------
async function webm(head: Buffer): Promise<MediaFacts> {
  let meta: Awaited<ReturnType<typeof parseBuffer>>;
  try {
    meta = await parseBuffer(head, { mimeType: 'video/webm' }, { skipCovers: true, skipPostHeaders: true });
  } catch (e) {
    return none(`the WebM file is truncated or damaged (${message(e)})`);
  }
  if (!meta.format.trackInfo?.length) return none('the WebM file has no tracks within its first MiB; it is truncated or damaged');
  const video = meta.format.trackInfo.find((t) => t.video?.pixelWidth && t.video?.pixelHeight)?.video;
  return {
    type: 'video', contentType: 'video/webm', format: 'webm', reason: null, document: null,
    width: dim(video?.pixelWidth), height: dim(video?.pixelHeight),
    durationMs: meta.format.duration === undefined ? null : ms(meta.format.duration * 1000),
  };
}

// ---------------------------------------------------------------------------
// Deciding
// ---------------------------------------------------------------------------
const HEIF = new Set(['image/heic', 'image/heic-sequence', 'image/heif', 'image/heif-sequence', 'image/avif']);
const UNSUPPORTED = 'the bytes are not PNG, JPEG, WebP, GIF, MP4, MOV or WebM';

async function identify(head: Buffer, isoReader: IsoReader | null): Promise<MediaFacts> {
  let found: Awaited<ReturnType<typeof fileTypeFromBuffer>>;
  try {
    found = await fileTypeFromBuffer(head);
  } catch (e) {
    return none(`${UNSUPPORTED} (${message(e)})`);
  }
  const mime = found?.mime as string | undefined;
  if (!found || !mime) return none(UNSUPPORTED);
  if (mime in IMAGES) return image(head, mime as keyof typeof IMAGES);
  if (mime === 'video/mp4' || mime === 'video/x-m4v') return iso(isoReader, 'video/mp4');
  if (mime === 'video/quicktime') return iso(isoReader, 'video/quicktime');
  if (mime === 'video/webm') return webm(head);
  if (HEIF.has(mime)) return none(`HEIF/AVIF images (${mime}) are not supported; upload PNG, JPEG, WebP or GIF`);
  if (mime === 'video/matroska' || mime === 'video/x-matroska') return none('Matroska files (doc type matroska) are not supported; upload WebM, MP4 or MOV');
  if (mime === 'application/pdf') return { ...none(`${UNSUPPORTED} (they look like ${mime})`), document: 'application/pdf' };
  return none(`${UNSUPPORTED} (they look like ${mime})`);
}

/** Feed it every chunk in order, then await result(). */
export class MediaInspector {
  private readonly hash = createHash('sha256');
  private size = 0;
  private head: Buffer[] = [];
  private headLen = 0;
  private iso: IsoReader | null = null;
  private decided = false;

  update(chunk: Buffer) {
    this.hash.update(chunk);
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
    if (!this.decided && this.headLen >= 8) {
      this.decided = true;
      // The first box's type: an ISO file goes through mp4box from its first byte.
      const h = Buffer.concat(this.head);
      this.head = [h];
      if (ISO_TOP_LEVEL.has(h.toString('latin1', 4, 8))) {
        this.iso = new IsoReader();
        // Everything so far: the head already holds the bytes of this chunk (and those before it) up to HEAD_MAX.
        this.iso.update(h);
        if (this.size > h.length) this.iso.update(chunk.subarray(chunk.length - (this.size - h.length)));
      }
    }
  }

  async result(): Promise<Inspection> {
    const head = Buffer.concat(this.head);
    let facts: MediaFacts;
    try {
      facts = await identify(head, this.iso);
    } catch (e) {
      facts = none(`the file could not be read (${message(e)})`);
    }
    return { ...facts, size: this.size, sha256: this.hash.digest('hex') };
  }
}

/** Inspects an async iterable of chunks (a file stream, a fetch body). */
export async function inspectStream(source: AsyncIterable<Uint8Array>): Promise<Inspection> {
  const inspector = new MediaInspector();
  for await (const chunk of source) inspector.update(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength));
  return inspector.result();
}
