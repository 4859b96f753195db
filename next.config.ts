import type { NextConfig } from "next";

const nextConfig: NextConfig = {
  // Native addon: loaded from node_modules at run time, never bundled.
  serverExternalPackages: ["better-sqlite3"],
  poweredByHeader: false,
};

export default nextConfig;
