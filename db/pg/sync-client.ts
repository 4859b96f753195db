/**
 * PostgreSQL behind better-sqlite3's synchronous surface (prepare/run/get/all/raw/pluck,
 * transaction), so drizzle's better-sqlite3 driver and every query of db/queries run on it as they
 * are: one set of queries, one set of transactions (the outbox written with its cause, the restart
 * row with its audit line), on either engine (docs/decisions.md "Replicas: one synchronous store").
 *
 * How: a thread of its own (./sync-worker.ts) holds the connection; a statement is posted to it and
 * this thread sleeps on a shared word (Atomics.wait) until the answer is there, then takes it with
 * receiveMessageOnPort. The price is the event loop waiting for each round trip (about 0.1 ms on
 * the same host): every wait is bounded by the statement timeout, and while the connection is down
 * a statement fails at once, without waiting, until the thread has reconnected on its own.
 * Written by hand: synckit does this for a worker file given by path, which Next's bundler cannot
 * follow (the `new URL(literal, import.meta.url)` form below is the one it compiles), and it has no
 * notion of a connection being down.
 */
import { MessageChannel, receiveMessageOnPort, Worker, type MessagePort, type WorkerOptions } from "node:worker_threads";
import { LeaseLostError } from "./lease-error";
import { bindValues, translateSql, type Translated } from "./translate";

/**
 * PostgreSQL's constraint errors under the codes better-sqlite3 gives the same refusal, so a caller
 * that maps one (lib/restart/request.ts: a second pending restart is a conflict) maps both engines'.
 */
export const SQLITE_CODE_OF: Record<string, string> = {
  "23505": "SQLITE_CONSTRAINT_UNIQUE",
  "23503": "SQLITE_CONSTRAINT_FOREIGNKEY",
  "23502": "SQLITE_CONSTRAINT_NOTNULL",
  "23514": "SQLITE_CONSTRAINT_CHECK",
};

export class PgError extends Error {
  /** better-sqlite3's code for the same refusal where there is one (SQLITE_CODE_OF), else PostgreSQL's. */
  readonly code?: string;
  constructor(
    message: string,
    /** PostgreSQL's SQLSTATE (or a connection error's code). */
    readonly pgCode?: string,
  ) {
    super(message);
    this.name = "PgError";
    this.code = (pgCode && SQLITE_CODE_OF[pgCode]) ?? pgCode;
  }
}

interface Answer {
  id: number;
  ok: boolean;
  message?: string;
  code?: string;
  result?: { rows: unknown[]; changes: number; gen: number };
}

export interface SyncPgOptions {
  /**
   * Starts the connection thread from another script than ./sync-worker.ts next to this file: a
   * bundle of it (bench/child.ts builds one for the benchmark's watcher, where this file is bundled
   * too and import.meta.url names nothing).
   */
  spawnWorker?: (options: WorkerOptions & { name: string }) => Worker;
  /** Bounds each statement (server side) and the wait for its answer. */
  timeoutMs?: number;
  /** How long the first connection may take (the replica's start waits for it). */
  connectWaitMs?: number;
}

type Mode = "object" | "raw" | "pluck";

export class SyncPgStatement {
  constructor(
    private readonly client: SyncPgClient,
    private readonly t: Translated,
    readonly source: string,
    private readonly mode: Mode = "object",
  ) {}

  raw(on = true): SyncPgStatement {
    return new SyncPgStatement(this.client, this.t, this.source, on ? "raw" : "object");
  }

  pluck(on = true): SyncPgStatement {
    return new SyncPgStatement(this.client, this.t, this.source, on ? "pluck" : "object");
  }

  run(...args: unknown[]): { changes: number; lastInsertRowid: number } {
    const r = this.client.query(this.t.text, bindValues(this.t, args), "object");
    return { changes: r.changes, lastInsertRowid: 0 };
  }

  /**
   * One `INSERT INTO t (...) VALUES (?, ...)` for many rows, as few multi-row statements (a round
   * trip each, ~0.5 ms, instead of one per row: 1000 backends' samples were 500 ms a flush).
   * Only that statement shape (positional parameters, one row); anything else throws.
   */
  runMany(rows: readonly unknown[][]): { changes: number } {
    if (rows.length === 0) return { changes: 0 };
    const shape = multiRowShape(this.source);
    const perStatement = Math.max(1, Math.floor(MAX_PG_PARAMS / shape.width));
    let changes = 0;
    for (let start = 0; start < rows.length; start += perStatement) {
      const batch = rows.slice(start, start + perStatement);
      const values: unknown[] = [];
      for (const row of batch) values.push(...bindValues(this.t, row));
      changes += this.client.query(shape.textFor(batch.length), values, "object").changes;
    }
    return { changes };
  }

  all(...args: unknown[]): unknown[] {
    const r = this.client.query(this.t.text, bindValues(this.t, args), this.mode === "object" ? "object" : "array");
    return this.mode === "pluck" ? (r.rows as unknown[][]).map((row) => row[0]) : r.rows;
  }

  get(...args: unknown[]): unknown {
    return this.all(...args)[0];
  }
}

/** How many statements' translations a client keeps. */
const MAX_TRANSLATED = 2000;

/** PostgreSQL's limit on one statement's parameters (a 16-bit count in the protocol). */
const MAX_PG_PARAMS = 65_535;

interface MultiRow {
  width: number;
  textFor(rows: number): string;
}
const multiRowShapes = new Map<string, MultiRow>();

/** The multi-row form of a one-row positional INSERT: `INSERT ... VALUES ($1, $2), ($3, $4)`. */
export function multiRowShape(source: string): MultiRow {
  let shape = multiRowShapes.get(source);
  if (shape) return shape;
  const m = /^(\s*insert\s+into\s+[^()]+\([^()]*\)\s*values\s*)\(\s*\?(?:\s*,\s*\?)*\s*\)\s*$/i.exec(source);
  if (!m) throw new Error(`runMany takes INSERT INTO t (...) VALUES (?, ...) only: ${source.slice(0, 120)}`);
  const head = m[1];
  const width = (source.slice(head.length).match(/\?/g) ?? []).length;
  const texts = new Map<number, string>();
  shape = {
    width,
    textFor(rows) {
      let text = texts.get(rows);
      if (!text) {
        const tuples: string[] = [];
        for (let r = 0; r < rows; r++) tuples.push(`(${Array.from({ length: width }, (_, c) => `$${r * width + c + 1}`).join(", ")})`);
        text = head + tuples.join(", ");
        // Kept for the few batch sizes a watcher writes (its fleet's size, give or take).
        if (texts.size < 8) texts.set(rows, text);
      }
      return text;
    },
  };
  multiRowShapes.set(source, shape);
  return shape;
}

export class SyncPgClient {
  readonly dialect = "postgresql" as const;
  private readonly worker: Worker;
  private readonly port: MessagePort;
  private readonly flags: Int32Array;
  private readonly errorBytes: Uint8Array;
  private readonly timeoutMs: number;
  private nextId = 1;
  private depth = 0;
  /** Which of the thread's connections the open transaction is on (they are numbered from 1). */
  private txConnection: number | undefined;
  private closed = false;
  private readonly statements = new Map<string, Translated>();
  /** Statements sent since the client opened (BEGIN and COMMIT included): the benchmark's queries per second. */
  sent = 0;

  constructor(
    readonly safeUrl: string,
    url: string,
    opts: SyncPgOptions = {},
  ) {
    this.timeoutMs = opts.timeoutMs ?? 5000;
    const shared = new SharedArrayBuffer(8 + 512);
    this.flags = new Int32Array(shared, 0, 2);
    this.errorBytes = new Uint8Array(shared, 8);
    const { port1, port2 } = new MessageChannel();
    this.port = port1;
    const options = { name: "stepwatch-pg", workerData: { url, port: port2, shared, timeoutMs: this.timeoutMs }, transferList: [port2] };
    // The literal `new Worker(new URL(...))` form only: Next's bundler compiles that into a chunk, and
    // a Worker of a computed path made it trace every file of the project (lib/watcher/read-pool.ts).
    this.worker = opts.spawnWorker
      ? opts.spawnWorker(options)
      : new Worker(new URL("./sync-worker.ts", import.meta.url), { ...options, execArgv: process.env.NEXT_RUNTIME ? undefined : ["--require", "tsx/cjs"] });
    this.worker.unref();
    this.worker.on("error", (e) => console.error(`stepwatch: the PostgreSQL thread failed: ${e.message}`));
    // The first connection: the replica's start waits for it, bounded.
    const deadline = Date.now() + (opts.connectWaitMs ?? this.timeoutMs + 1000);
    while (Atomics.load(this.flags, 1) === 0 && Date.now() < deadline && this.lastError() === "") Atomics.wait(this.flags, 1, 0, 20);
  }

  get open(): boolean {
    return !this.closed;
  }

  get inTransaction(): boolean {
    return this.depth > 0;
  }

  /** True while the connection is up (the thread reconnects on its own when it is not). */
  get connected(): boolean {
    return Atomics.load(this.flags, 1) === 1;
  }

  lastError(): string {
    const end = this.errorBytes.indexOf(0);
    return new TextDecoder().decode(this.errorBytes.subarray(0, end < 0 ? undefined : end));
  }

  prepare(source: string): SyncPgStatement {
    let t = this.statements.get(source);
    if (!t) {
      // Bounded: the queries' texts are a few hundred, but a text built with a value inlined
      // would otherwise grow this map for as long as the replica runs.
      if (this.statements.size >= MAX_TRANSLATED) this.statements.clear();
      this.statements.set(source, (t = translateSql(source)));
    }
    return new SyncPgStatement(this, t, source);
  }

  exec(source: string): this {
    this.query(translateSql(source).text, [], "object");
    return this;
  }

  pragma(): unknown[] {
    return [];
  }

  /** better-sqlite3's transaction: the function runs in one transaction (a savepoint when nested), committed when it returns, rolled back when it throws. */
  transaction<A extends unknown[], R>(fn: (...args: A) => R): ((...args: A) => R) & { deferred: (...args: A) => R; immediate: (...args: A) => R; exclusive: (...args: A) => R } {
    const run = (...args: A): R => {
      const level = this.depth;
      // The connection a transaction began on: every later statement of it names it, and the
      // thread refuses one that would run on a connection made since (it would run outside the
      // transaction, and COMMIT there only warns: half a transaction written as if whole).
      if (level === 0) this.txConnection = this.query("BEGIN", [], "object").gen;
      else this.query(`SAVEPOINT sw${level}`, [], "object");
      this.depth++;
      let result: R;
      try {
        result = fn(...args);
      } catch (e) {
        this.depth--;
        try {
          this.query(level === 0 ? "ROLLBACK" : `ROLLBACK TO SAVEPOINT sw${level}`, [], "object", this.txConnection);
        } catch {
          // the connection is gone: so is the transaction
        }
        throw e;
      }
      this.depth--;
      this.query(level === 0 ? "COMMIT" : `RELEASE SAVEPOINT sw${level}`, [], "object", this.txConnection);
      return result;
    };
    return Object.assign(run, { deferred: run, immediate: run, exclusive: run });
  }

  /**
   * Inside a transaction: the leader lease is still held by `holder` with `epoch` and unexpired,
   * by the database's clock, and stays so until commit (the row is share-locked: a takeover waits).
   */
  assertLease(holder: string, epoch: number): void {
    const r = this.query(
      "SELECT epoch FROM cluster_lease WHERE name = 'leader' AND holder = $1 AND epoch = $2 AND expires_at > now() FOR SHARE",
      [holder, epoch],
      "object",
    );
    if (r.rows.length === 0) throw new LeaseLostError(holder, epoch);
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    void this.worker.terminate();
    this.port.close();
  }

  /** One statement, answered synchronously. */
  query(text: string, values: unknown[], shape: "object" | "array", connection = this.depth > 0 ? this.txConnection : undefined): { rows: unknown[]; changes: number; gen: number } {
    if (this.closed) throw new PgError("the PostgreSQL connection is closed");
    this.sent++;
    if (!this.connected) {
      const why = this.lastError();
      throw new PgError(`cannot reach PostgreSQL (${this.safeUrl})${why ? `: ${why}` : ""}; reconnecting`, "ECONNREFUSED");
    }
    const id = this.nextId++;
    Atomics.store(this.flags, 0, 0);
    this.port.postMessage({ id, text, values, rowMode: shape === "array" ? "array" : undefined, gen: connection });
    const deadline = Date.now() + this.timeoutMs + 1000;
    for (;;) {
      let m: { message: Answer } | undefined;
      while ((m = receiveMessageOnPort(this.port) as { message: Answer } | undefined)) {
        if (m.message.id !== id) continue; // a late answer to a statement given up on
        const a = m.message;
        if (!a.ok) throw new PgError(`${a.message}${a.code ? ` (${a.code})` : ""}`, a.code);
        return a.result!;
      }
      const left = deadline - Date.now();
      if (left <= 0) throw new PgError(`PostgreSQL did not answer within ${this.timeoutMs + 1000} ms`, "ETIMEDOUT");
      Atomics.wait(this.flags, 0, 0, left);
      Atomics.store(this.flags, 0, 0);
    }
  }
}
