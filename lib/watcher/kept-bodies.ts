/**
 * The raw /metrics bodies one backend's monitor keeps for an incident's evidence bundle
 * (lib/watcher/evidence.ts): the newest read's, and those of the reads since the last healthy one,
 * RAW_BODIES_KEPT in all. A stuck verdict rests on the stalled reads before it, a down one on the
 * last read that answered: both are kept. The healthy reads before the last one explain nothing
 * the last does not.
 *
 * Kept as UTF-8 bytes in buffers the monitor reuses, not as the strings the read made: a string
 * kept for a poll interval outlives a few young-generation collections, so V8 copied every body
 * into the old generation, and at 1000 backends that garbage (~1 MB/s) was most of the watcher's
 * heap growth and a fifth of its CPU (bench/RESULTS.md, the memory goal's note). A healthy fleet
 * now writes each body into the buffer the previous one used: no allocation per read.
 */
import { isHealthy, type BackendState } from "../core/states";
import { MAX_RAW_BODY_CHARS, RAW_BODIES_KEPT, type EvidenceMetricsBody } from "../core/evidence";

interface Slot {
  at: number;
  state: BackendState;
  cut: boolean;
  bytes: Buffer;
  length: number;
}

/**
 * A buffer this much larger than the body is not kept for it: vLLM's first read of a backend is the
 * full /metrics (35-75 KB), the ones after it the filtered answer (3-13 KB).
 */
const REUSE_SLACK = 16 * 1024;

/** Room for a body of `need` bytes, rounded up so that bodies of a similar size reuse it. */
function room(old: Buffer | undefined, need: number): Buffer {
  if (old && old.length >= need && old.length <= Math.max(2 * need, REUSE_SLACK)) return old;
  return Buffer.allocUnsafeSlow(Math.ceil(Math.max(need, 1) / 1024) * 1024);
}

export class KeptBodies {
  private slots: Slot[] = [];

  keep(at: number, state: BackendState, body: string): void {
    const need = Buffer.byteLength(body, "utf8");
    const healthy = isHealthy(state);
    // A healthy read ends the stretch the older bodies belonged to; a full ring drops its oldest.
    const drop = healthy ? this.slots.length : this.slots.length - RAW_BODIES_KEPT + 1;
    let reuse: Buffer | undefined;
    for (let i = 0; i < drop; i++) if (!reuse || this.slots[i].bytes.length > reuse.length) reuse = this.slots[i].bytes;
    const bytes = room(reuse, need);
    const slot = { at, state, cut: body.length >= MAX_RAW_BODY_CHARS, bytes, length: bytes.write(body, 0, "utf8") };
    if (drop === 1 && this.slots.length === 1) this.slots[0] = slot; // the steady state of a healthy backend
    else {
      if (drop > 0) this.slots.splice(0, drop);
      this.slots.push(slot);
    }
  }

  /** The bodies kept, oldest first, as text (made only when a capture reads them). */
  list(): EvidenceMetricsBody[] {
    return this.slots.map((s) => ({ at: s.at, state: s.state, cut: s.cut, body: s.bytes.toString("utf8", 0, s.length) }));
  }
}
