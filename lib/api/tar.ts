/**
 * A minimal ustar writer, for the evidence bundle's .tar.gz (GET /api/evidence/{id}?format=tar.gz).
 * Written here rather than taken from npm: the project declares no tar package (tar-stream lies in
 * node_modules only as prebuild-install's install-time dependency, which better-sqlite3 may drop),
 * and a bundle is a handful of regular files of known size in memory, which is all ustar needs:
 * a 512-byte header per file, its bytes padded to 512, two zero blocks at the end; then zlib's gzip.
 * Pure apart from zlib.
 */
import { gzipSync } from "node:zlib";

export interface TarEntry {
  /** A relative path of at most 100 bytes, '/'-separated (the bundle's names are made short). */
  name: string;
  data: string | Uint8Array;
}

const BLOCK = 512;

function octal(n: number, width: number): string {
  // width - 1 digits and a NUL, as ustar's numeric fields are written by GNU tar.
  return n.toString(8).padStart(width - 1, "0") + "\0";
}

function header(name: string, size: number, mtimeSeconds: number): Buffer {
  const h = Buffer.alloc(BLOCK, 0);
  const nameBytes = Buffer.from(name, "utf8");
  if (nameBytes.length > 100) throw new Error(`tar entry name longer than 100 bytes: ${name.slice(0, 40)}...`);
  nameBytes.copy(h, 0);
  h.write(octal(0o644, 8), 100, "ascii"); // mode
  h.write(octal(0, 8), 108, "ascii"); // uid
  h.write(octal(0, 8), 116, "ascii"); // gid
  h.write(octal(size, 12), 124, "ascii");
  h.write(octal(mtimeSeconds, 12), 136, "ascii");
  h.write("        ", 148, "ascii"); // the checksum counts its own field as spaces
  h.write("0", 156, "ascii"); // a regular file
  h.write("ustar\0", 257, "ascii");
  h.write("00", 263, "ascii");
  let sum = 0;
  for (const b of h) sum += b;
  h.write(sum.toString(8).padStart(6, "0") + "\0 ", 148, "ascii");
  return h;
}

/** The entries as a .tar (ustar), every file dated `mtime` (ms). */
export function tar(entries: readonly TarEntry[], mtime: number): Buffer {
  const parts: Buffer[] = [];
  const seconds = Math.max(0, Math.floor(mtime / 1000));
  for (const e of entries) {
    const data = typeof e.data === "string" ? Buffer.from(e.data, "utf8") : Buffer.from(e.data);
    parts.push(header(e.name, data.length, seconds), data);
    const pad = (BLOCK - (data.length % BLOCK)) % BLOCK;
    if (pad) parts.push(Buffer.alloc(pad, 0));
  }
  parts.push(Buffer.alloc(BLOCK * 2, 0));
  return Buffer.concat(parts);
}

export function tarGz(entries: readonly TarEntry[], mtime: number): Buffer {
  return gzipSync(tar(entries, mtime));
}
