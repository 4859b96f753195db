/**
 * The thread that holds a replica's PostgreSQL connection for db/pg/sync-client.ts: it runs each
 * statement the main thread sends and wakes it (Atomics) when the answer is posted. One connection,
 * so a transaction's statements run on it in order. When the connection is lost it says so at
 * once (status word 1 = 0) and reconnects on its own every second, so the main thread never waits
 * on a database that is not there.
 */
import { workerData, type MessagePort } from "node:worker_threads";
import pg from "pg";

interface Job {
  id: number;
  text: string;
  values: unknown[];
  rowMode?: "array";
  /** The connection this statement must run on (a transaction's), by number; any when absent. */
  gen?: number;
}

const { url, port, shared, timeoutMs } = workerData as { url: string; port: MessagePort; shared: SharedArrayBuffer; timeoutMs: number };
/** [0]: an answer is posted (the main thread waits on it); [1]: 1 while connected. */
const flags = new Int32Array(shared, 0, 2);
/** The last connection error, as UTF-8 (for the main thread's error text). */
const errorBytes = new Uint8Array(shared, 8);

// Numbers as SQLite gives them: int8 and numeric as JS numbers (times in ms and counts, far below
// 2^53), booleans as 0/1, json as its text.
const types = {
  getTypeParser(oid: number, format?: "text" | "binary") {
    if (oid === 20 || oid === 1700) return (v: string) => Number(v);
    if (oid === 16) return (v: string) => (v === "t" ? 1 : 0);
    if (oid === 114 || oid === 3802) return (v: string) => v;
    return pg.types.getTypeParser(oid, format);
  },
};

let client: pg.Client | null = null;
/** The number of the current connection: a new one after each reconnect. */
let generation = 0;
let connecting: Promise<pg.Client> | null = null;

function setError(text: string): void {
  const bytes = new TextEncoder().encode(text.slice(0, 400));
  errorBytes.fill(0);
  errorBytes.set(bytes.subarray(0, errorBytes.length));
}

function lost(c: pg.Client, why: string): void {
  if (client !== c) return;
  client = null;
  Atomics.store(flags, 1, 0);
  setError(why);
  c.end().catch(() => {});
  setTimeout(() => void connect().catch(() => {}), 1000);
}

function connect(): Promise<pg.Client> {
  connecting ??= (async () => {
    const c = new pg.Client({
      connectionString: url,
      connectionTimeoutMillis: timeoutMs,
      statement_timeout: timeoutMs,
      query_timeout: timeoutMs + 500,
      application_name: "stepwatch",
      types,
    });
    c.on("error", (e) => lost(c, e.message));
    c.on("end", () => lost(c, "the connection ended"));
    try {
      await c.connect();
      client = c;
      generation++;
      Atomics.store(flags, 1, 1);
      return c;
    } catch (e) {
      setError((e as Error).message);
      Atomics.store(flags, 1, 0);
      c.end().catch(() => {});
      setTimeout(() => void connect().catch(() => {}), 1000);
      throw e;
    }
  })().finally(() => (connecting = null));
  return connecting;
}

async function run(job: Job): Promise<unknown> {
  const c = client ?? (await connect());
  if (job.gen !== undefined && job.gen !== generation) {
    throw Object.assign(new Error("the connection to PostgreSQL was lost inside a transaction: the transaction was not written"), { code: "08006" });
  }
  const r = job.rowMode
    ? await c.query<unknown[]>({ text: job.text, values: job.values, rowMode: "array" })
    : await c.query({ text: job.text, values: job.values });
  return { rows: r.rows, changes: r.rowCount ?? 0, gen: generation };
}

port.on("message", (job: Job) => {
  run(job).then(
    (result) => post({ id: job.id, ok: true, result }),
    (e: Error & { code?: string }) => {
      // A broken connection is replaced; a statement's own error (a constraint) leaves it as is.
      if (client && /terminat|ECONNRESET|Connection terminated|timeout/i.test(e.message)) lost(client, e.message);
      post({ id: job.id, ok: false, message: e.message, code: e.code });
    },
  );
});

function post(answer: unknown): void {
  port.postMessage(answer);
  Atomics.store(flags, 0, 1);
  Atomics.notify(flags, 0);
}

void connect().catch(() => {});
