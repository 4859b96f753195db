import type { NextConfig } from "next";

/**
 * Content-Security-Policy is set per request by proxy.ts (a fresh nonce, 'strict-dynamic', no
 * 'unsafe-inline' scripts), together with these headers; the ones here also cover static files,
 * which the proxy skips.
 */
const nextConfig: NextConfig = {
  // Native addon: loaded from node_modules at run time, never bundled.
  serverExternalPackages: ["better-sqlite3"],
  poweredByHeader: false,
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
