/**
 * One coarse timer shared by every simulator in the process.
 *
 * Engines advance lazily when read, but an HTTP completion must be answered when its request
 * finishes, and a stream needs its tokens pushed. Instead of a timer per backend (a benchmark runs
 * 1000 in one process), every simulator with a waiting HTTP client subscribes here; the timer runs
 * only while someone is subscribed and never keeps the process alive on its own.
 * Kept on globalThis: Next can load this module twice (instrumentation and routes), and two
 * tickers would double the work.
 */
export const TICK_MS = 50;

type Tick = () => void;
interface TickerState {
  subscribers: Set<Tick>;
  timer: NodeJS.Timeout | null;
}

const g = globalThis as unknown as { __stepwatchSimTicker?: TickerState };
const state: TickerState = (g.__stepwatchSimTicker ??= { subscribers: new Set(), timer: null });

function runTick(): void {
  for (const fn of [...state.subscribers]) {
    try {
      fn();
    } catch (err) {
      // One broken simulator must not stop the others from answering.
      console.error("[sim] tick failed:", err);
    }
  }
  if (state.subscribers.size === 0 && state.timer) {
    clearInterval(state.timer);
    state.timer = null;
  }
}

/** Call `fn` every TICK_MS until the returned function is called. */
export function subscribeTick(fn: Tick): () => void {
  state.subscribers.add(fn);
  if (!state.timer) {
    state.timer = setInterval(runTick, TICK_MS);
    state.timer.unref();
  }
  return () => {
    state.subscribers.delete(fn);
    if (state.subscribers.size === 0 && state.timer) {
      clearInterval(state.timer);
      state.timer = null;
    }
  };
}

/** For tests: whether the shared timer is running. */
export function tickerActive(): boolean {
  return state.timer !== null;
}
