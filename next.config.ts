import type { NextConfig } from "next";

/**
 * Content-Security-Policy is set per request by proxy.ts (a fresh nonce, 'strict-dynamic', no
 * 'unsafe-inline' scripts), together with these headers; the ones here also cover static files,
 * which the proxy skips.
 */
const nextConfig: NextConfig = {
  // Loaded from node_modules at run time, never bundled: better-sqlite3 is a native addon;
  // nodemailer (~270 KB) would otherwise be copied into every route's server chunk and evaluated
  // once per route on its first request, long enough on a loaded machine to stall the watcher's
  // reads in the same process past their deadline (tests/integration/watcher-app.test.ts saw it).
  serverExternalPackages: ["better-sqlite3", "nodemailer"],
  poweredByHeader: false,
  experimental: {
    // The stylesheets (~19 KB, 5 KB gzipped) in the page's <head>, not two <link>s: the first paint
    // waits for the CSS, and on a busy server those two requests waited behind the watcher and the
    // next page render (the 500-backend table's CSS took 0.2-0.5 s to arrive after the HTML,
    // tests/e2e/fleet-500.spec.ts). Every page carries it; nothing is cached across pages.
    inlineCss: true,
  },
  async headers() {
    return [
      {
        source: "/:path*",
        headers: [
          { key: "X-Frame-Options", value: "DENY" },
          { key: "X-Content-Type-Options", value: "nosniff" },
          { key: "Referrer-Policy", value: "same-origin" },
        ],
      },
    ];
  },
};

export default nextConfig;
