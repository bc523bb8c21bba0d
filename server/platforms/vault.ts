// The credential vault: connected accounts' tokens and operators' platform
// app secrets, encrypted with AES-256-GCM under a key that never enters the
// database (docs/connectors.md, "Credentials").
//
// Keys: CREDENTIALS_KEYS is a comma-separated list of `<version>:<key>`, each
// key 32 bytes as base64 or hex; the highest version encrypts, every listed
// version decrypts, so a key is rotated by adding a higher version, running
// `npx pressroom credentials rotate` (re-encrypts every stored credential with
// it) and then removing the old one. Unset: one key (version 1) is generated
// into DATA_DIR/credentials.key (mode 0600) on first use and read from there
// afterwards, which suits the embedded database and a single host; processes
// on several hosts must all be given the same CREDENTIALS_KEYS.
//
// A ciphertext is `PRV1` | version (uint16 BE) | iv (12) | tag (16) | data,
// with associated data naming what it is bound to (`integration:<id>`,
// `platform-app:<id>`, `oauth-state:<hash>`), so a value copied onto another
// row does not decrypt.
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

const MAGIC = Buffer.from('PRV1', 'ascii');
const HEADER = MAGIC.length + 2 + 12 + 16;
export const CREDENTIALS_KEY_FILE = 'credentials.key';

export class VaultError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'VaultError';
  }
}

function parseKey(text: string, where: string): Buffer {
  const t = text.trim();
  const key = /^[0-9a-fA-F]{64}$/.test(t) ? Buffer.from(t, 'hex') : Buffer.from(t, 'base64');
  if (key.length !== 32) throw new VaultError(`${where}: a key is 32 bytes, as 64 hex digits or base64 (openssl rand -base64 32)`);
  return key;
}

/** Parses CREDENTIALS_KEYS (`1:base64,2:base64`); throws VaultError naming the problem. */
export function parseKeyList(text: string): Map<number, Buffer> {
  const keys = new Map<number, Buffer>();
  for (const part of text.split(',').map((p) => p.trim()).filter(Boolean)) {
    const m = /^(\d{1,5}):(.+)$/.exec(part);
    if (!m) throw new VaultError('CREDENTIALS_KEYS: each entry is <version>:<key>, e.g. 1:$(openssl rand -base64 32)');
    const version = Number(m[1]);
    if (version < 1 || version > 65535) throw new VaultError('CREDENTIALS_KEYS: versions are 1 to 65535');
    if (keys.has(version)) throw new VaultError(`CREDENTIALS_KEYS: version ${version} is listed twice`);
    keys.set(version, parseKey(m[2]!, `CREDENTIALS_KEYS version ${version}`));
  }
  if (keys.size === 0) throw new VaultError('CREDENTIALS_KEYS is set but lists no key');
  return keys;
}

export class CredentialVault {
  readonly keys: ReadonlyMap<number, Buffer>;
  readonly currentVersion: number;
  /** Where the keys came from: the environment, or the file under DATA_DIR. */
  readonly source: 'env' | 'file';

  constructor(keys: Map<number, Buffer>, source: 'env' | 'file') {
    if (keys.size === 0) throw new VaultError('no credentials key');
    this.keys = keys;
    this.currentVersion = Math.max(...keys.keys());
    this.source = source;
  }

  /** The vault of a configuration: CREDENTIALS_KEYS, else DATA_DIR/credentials.key (made on first use). */
  static fromConfig(config: { CREDENTIALS_KEYS?: string | undefined; DATA_DIR: string }): CredentialVault {
    if (config.CREDENTIALS_KEYS) return new CredentialVault(parseKeyList(config.CREDENTIALS_KEYS), 'env');
    const file = path.resolve(config.DATA_DIR, CREDENTIALS_KEY_FILE);
    if (!existsSync(file)) {
      mkdirSync(path.dirname(file), { recursive: true });
      try {
        // 'wx': two processes starting together never both write a key.
        writeFileSync(file, `1:${randomBytes(32).toString('base64')}\n`, { mode: 0o600, flag: 'wx' });
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      }
      try {
        chmodSync(file, 0o600);
      } catch {
        // not the owner (read-only mount): reading is all that is needed
      }
    }
    return new CredentialVault(parseKeyList(readFileSync(file, 'utf8')), 'file');
  }

  encrypt(binding: string, plaintext: string): Buffer {
    const key = this.keys.get(this.currentVersion)!;
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', key, iv);
    cipher.setAAD(Buffer.from(`pressroom:${binding}`, 'utf8'));
    const data = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    const version = Buffer.alloc(2);
    version.writeUInt16BE(this.currentVersion);
    return Buffer.concat([MAGIC, version, iv, cipher.getAuthTag(), data]);
  }

  /** The key version a ciphertext was made with, or null when it is not a vault ciphertext. */
  static versionOf(blob: Buffer): number | null {
    if (blob.length < HEADER || !blob.subarray(0, MAGIC.length).equals(MAGIC)) return null;
    return blob.readUInt16BE(MAGIC.length);
  }

  /** The plaintext; throws VaultError when the key version is unknown here or the ciphertext does not verify for this binding. */
  decrypt(binding: string, blob: Buffer): string {
    const version = CredentialVault.versionOf(blob);
    if (version === null) throw new VaultError('not a credential ciphertext');
    const key = this.keys.get(version);
    if (!key) throw new VaultError(`credentials key version ${version} is not configured (CREDENTIALS_KEYS)`);
    const o = MAGIC.length + 2;
    try {
      const decipher = createDecipheriv('aes-256-gcm', key, blob.subarray(o, o + 12));
      decipher.setAAD(Buffer.from(`pressroom:${binding}`, 'utf8'));
      decipher.setAuthTag(blob.subarray(o + 12, o + 28));
      return Buffer.concat([decipher.update(blob.subarray(HEADER)), decipher.final()]).toString('utf8');
    } catch {
      throw new VaultError('the credential does not decrypt with its key (tampered, or copied from another row)');
    }
  }

  encryptJson(binding: string, value: unknown): Buffer {
    return this.encrypt(binding, JSON.stringify(value));
  }

  decryptJson<T>(binding: string, blob: Buffer): T {
    return JSON.parse(this.decrypt(binding, blob)) as T;
  }
}
