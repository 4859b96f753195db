import type { NextConfig } from "next";

const isDev = process.env.NODE_ENV !== "production";

/**
 * Content-Security-Policy. Next's App Router inlines its bootstrap scripts, so script-src needs
 * 'unsafe-inline' unless every page gets a per-request nonce (middleware); the real protection
 * here is that nothing third-party may load, nothing may frame the dashboard (clickjacking on the
 * restart button), and the page can talk to its own origin only. React's style attributes and
 * uPlot's inline sizing need 'unsafe-inline' styles. `next dev` additionally needs eval (HMR).
 */
const csp = [
  "default-src 'self'",
  `script-src 'self' 'unsafe-inline'${isDev ? " 'unsafe-eval'" : ""}`,
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data: blob:",
  "font-src 'self'",
  `connect-src 'self'${isDev ? " ws: wss:" : ""}`,
  "object-src 'none'",
  "base-uri 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join("; ");

const nextConfig: NextConfig = {
  // Loaded from node_modules at run time, never bundled: better-sqlite3 is a native addon;
  // nodemailer (~270 KB) would otherwise be copied into every route's server chunk and evaluated
  // once per route on its first request, long enough on a loaded machine to stall the watcher's
  // reads in the same process past their deadline (tests/integration/watcher-app.test.ts saw it).
  serverExternalPackages: ["better-sqlite3", "nodemailer"],
  poweredByHeader: false,
  async headers() {
    return [
      {
        source: "/:path*",
        headers: [
          { key: "Content-Security-Policy", value: csp },
          { key: "X-Frame-Options", value: "DENY" },
          { key: "X-Content-Type-Options", value: "nosniff" },
          { key: "Referrer-Policy", value: "same-origin" },
        ],
      },
    ];
  },
};

export default nextConfig;
