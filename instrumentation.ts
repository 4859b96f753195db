/**
 * Starts the watcher once per server process. Next compiles register() for the Edge runtime too,
 * so every Node-only module is imported dynamically inside the nodejs branch; lib/runtime keeps
 * the instance on globalThis, which also guards against a second start (dev reloads).
 */
export async function register(): Promise<void> {
  if (process.env.NEXT_RUNTIME === "nodejs") {
    // Watching belongs to `next start`, never to `next build` or its workers (Next 16 does not call
    // register() there; lib/runtime's getRuntime() refuses there too, for a page prerendered).
    if (process.env.NEXT_PHASE === "phase-production-build") return;
    // The socket address for the sign-in throttle and the Origin/Host checks (lib/net/net-policy).
    const { installPeerHeader } = await import("./lib/net/net-policy");
    await installPeerHeader();
    // GET /api/fleet answered before Next's pipeline when the answer is surely Next's
    // (lib/api/fast-lane.ts; STEPWATCH_FLEET_FAST_LANE=off leaves it to Next).
    const { installFleetFastLane } = await import("./lib/api/fast-lane");
    installFleetFastLane();
    const { startFromInstrumentation } = await import("./lib/runtime");
    await startFromInstrumentation();
    // The server's first page render is its slowest by far: done now, for itself (lib/api/warm-up.ts).
    const { warmUpInBackground } = await import("./lib/api/warm-up");
    warmUpInBackground();
  }
}
